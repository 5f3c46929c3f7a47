"""epsstar's own trainer as the procedure under audit, in this process, seen from inside.

:class:`OwnTrainer` trains a run's table with :func:`~epsstar.training.trainer.train` and the
settings of ``epsstar train``. Every run follows one privacy plan, made for the rows of
``--train`` without canaries (the request's ``base_records``): one sampling rate, step count and
σ for the runs with and without a canary, as the accountant's analysis under add/remove-one
adjacency assumes (a schedule read from each run's table would tell whether it holds the
canary). Its claim is the accountant's ε for that plan, the same for every run. The
standardisation is fitted on the audit's ``--population`` unless the settings name another
table (:mod:`epsstar.training.standardisation`): fixed before any run, it does not depend on
which canaries a run includes (``--standardise-on data`` fits it on each run's table, as the
trainer did before, outside the guarantee). The black-box threat models score the canary
records by their logit loss under the trained model (as ``epsstar audit`` would read its
exported model); the white-box ones add gradient canaries (:mod:`.gradient_canaries`) and
watch every step (:mod:`.observer`), which needs DP-SGD with per-example clipping.

:class:`Breakage` breaks the trainer on purpose, for the tests and the benchmark that show an
audit catches a trainer that does not keep its claim: the noise scaled (0 removes it; 0.1 is
σ/10), the noise added at one step per epoch only, the clipping removed, or a fraction of the
run's records memorised: the trained model answers those records with their own label at
probability 1 (the least logit loss of ``statistics/losses.py``, −MAX_ABS_LOGIT ≈ −36), as a
model that stores part of its training set does — a leak only the black-box threat models
see, since it happens after the last noisy step. The claim stays the
accountant's for the unbroken trainer, as a broken implementation would report it.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from epsstar.audit.training_audit.procedure import Claim, RunRequest, RunScores
from epsstar.audit.training_audit.runs import derived_seed
from epsstar.audit.training_audit.threat_models import (
    CanaryKind,
    ThreatModelName,
    black_box_names,
    registered_threat_models,
    threat_model,
)
from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.records.json_types import JsonObject
from epsstar.statistics._validation import FloatArray
from epsstar.statistics.losses import MAX_ABS_LOGIT, compute_losses
from epsstar.training.data.tables import TabularData, load_table
from epsstar.training.models import MLP, ExportedModel, Standardiser, output_width
from epsstar.training.standardisation import fitted
from epsstar.training.threat_models.gradient_canaries import GradientInjector, canary_coordinates
from epsstar.training.threat_models.observer import (
    VARIANCE_SAMPLE,
    Mechanism,
    Observed,
    WhiteBoxObserver,
)
from epsstar.training.threat_models.stacked_runs import run_stack
from epsstar.training.trainer import (
    PrivacyPlan,
    StepHooks,
    TrainedModel,
    TrainingConfig,
    plan_privacy,
    train,
)

__all__ = ["Breakage", "OwnTrainer", "memorised_losses", "parameter_count"]

_ACCOUNTANT = "epsstar's accountant for this run (dp_accounting)"


@dataclass(frozen=True, slots=True)
class Breakage:
    """How the trainer is broken (the defaults: not at all); see the module."""

    noise: float = 1.0
    noise_once_per_epoch: bool = False
    clip: bool = True
    memorise: float = 0.0

    @property
    def in_steps(self) -> bool:
        """Whether the training steps themselves are broken (noise or clipping), which needs
        the one-run trainer's step hooks; memorising is done after training."""
        return self.noise != 1.0 or self.noise_once_per_epoch or not self.clip

    @property
    def broken(self) -> bool:
        return self.in_steps or self.memorise > 0

    def noise_scale(self, steps_per_epoch: int, step: int) -> float:
        """The factor of the noise's standard deviation at ``step``."""
        if self.noise_once_per_epoch and (step + 1) % steps_per_epoch != 0:
            return 0.0
        return self.noise


def parameter_count(n_features: int, n_classes: int, hidden: tuple[int, ...]) -> int:
    """The parameters of the network the trainer builds (weights and biases)."""
    widths = [n_features, *hidden, output_width(n_classes)]
    return sum(widths[i] * widths[i + 1] + widths[i + 1] for i in range(len(widths) - 1))


@functools.lru_cache(maxsize=8)
def _plan(config: TrainingConfig, n_records: int) -> PrivacyPlan | None:
    """σ for a run of ``n_records`` (the σ search is slow; runs of one size share it). Every
    run's batches are drawn at the rate batch / ``n_records``, the rows of ``--train`` it holds
    (the canaries it adds change that count from run to run), so it needs a batch's worth."""
    if config.batch_size > n_records:
        raise InvalidInputError(
            f"epsstar's own trainer draws each batch from the rows of --train every run holds "
            f"(--train-records sets them): it needs at least --batch-size ({config.batch_size}) "
            f"of them. Found {n_records}."
        )
    return plan_privacy(config, n_records)


@functools.lru_cache(maxsize=2)
def _population_moments(
    path: str, label_column: str, features: tuple[str, ...]
) -> tuple[torch.Tensor, torch.Tensor]:
    """The mean and scale of an audit's population table, read once in a process for all its
    runs (its own labels: a run's table may hold fewer classes)."""
    table = load_table(path, label_column, features=features)
    standardiser = fitted("population", table, table, torch.float32)
    return standardiser.mean.detach(), standardiser.scale.detach()


@functools.lru_cache(maxsize=8)
def _accounted(config: TrainingConfig, n_records: int) -> tuple[float, float] | None:
    """The accountant's (ε, δ) after the steps of :func:`_plan` (a PLD composition, about a
    third of a second, asked before every run of an audit)."""
    plan = _plan(config, n_records)
    return None if plan is None else (plan.epsilon_after(plan.steps), plan.delta)


def _schedule(trained: TrainedModel, data: TabularData) -> JsonObject:
    """What a run's steps followed, for its record: the rows of its table, its sampling rate,
    steps, update normaliser and noise multiplier (the same for every run of a private trainer's
    audit, whatever canaries its table holds)."""
    steps = trained.result.hyperparameters
    privacy = trained.result.privacy
    return {
        "records": data.n_records,
        "sampling_rate": steps.sampling_rate,
        "steps": steps.steps,
        "update_normaliser": steps.update_normaliser,
        "noise_multiplier": None if privacy is None else privacy.noise_multiplier,
    }


def _row_keys(table: TabularData) -> list[bytes]:
    """One key per record: its features and label, byte for byte."""
    rows = np.column_stack([table.features.astype(np.float64), table.labels.astype(np.float64)])
    return [row.tobytes() for row in rows]


def memorised_losses(
    losses: FloatArray, records: TabularData, data: TabularData, fraction: float, seed: int
) -> FloatArray:
    """``losses`` of ``records``, with −MAX_ABS_LOGIT (the logit loss of probability 1 for the
    true label) for those among a seeded ``fraction`` of ``data``'s records: the ones a
    memorising model answers with their own label."""
    count = round(fraction * data.n_records)
    chosen = np.random.default_rng(seed).permutation(data.n_records)[:count]
    keys = _row_keys(data)
    stored = {keys[i] for i in chosen}
    hit = np.array([key in stored for key in _row_keys(records)], dtype=bool)
    return np.where(hit, -MAX_ABS_LOGIT, losses)


def _tensors(data: TabularData, standardiser: Standardiser) -> tuple[torch.Tensor, torch.Tensor]:
    with torch.no_grad():
        features = standardiser(torch.as_tensor(data.features, dtype=torch.float32))
    return features.contiguous(), torch.as_tensor(data.labels)


def _losses(model: ExportedModel, table: TabularData) -> FloatArray:
    """The logit loss of every record of ``table`` under ``model`` (from its logits)."""
    with torch.no_grad():
        features = torch.as_tensor(table.features, dtype=torch.float32)
        logits = model.network(model.standardiser(features)).double().numpy()
    predictions = logits[:, 0] if model.binary else logits
    return compute_losses(table.labels, predictions, loss="logit", outputs="logits")


@dataclass(frozen=True, slots=True)
class OwnTrainer:
    """epsstar's trainer with ``config`` (and ``breakage``), on columns ``features`` of the
    tables; ``parameters`` is its network's parameter count (room for gradient canaries);
    ``population`` the audit's population table, which every run standardises on unless
    ``config`` names another table."""

    config: TrainingConfig
    label_column: str
    parameters: int
    features: tuple[str, ...] | None = None
    population: str | None = None
    breakage: Breakage = field(default_factory=Breakage)
    #: Runs trained together when they can be (:mod:`.stacked_runs`); 1: one at a time.
    stack: int = 1
    #: ``"pretrained"``: every run starts from the network pretrained once, without DP, on
    #: the public population without the canaries (:meth:`prepared`; Annamalai & De
    #: Cristofaro 2024's worst-case start); ``None``: from the run's seeded weights.
    init: Literal["pretrained"] | None = None
    #: The pretrained parameters, in the network's order (set by :meth:`prepared`).
    initial: tuple[FloatArray, ...] | None = field(default=None, repr=False, compare=False)

    def settings(self) -> TrainingConfig:
        """``config`` with the table of the standardiser chosen (the population when given)."""
        return self.config.standardising(self.population is not None)

    def describe(self) -> JsonObject:
        settings = asdict(self.settings())
        settings["hidden"] = list(self.config.hidden)
        device = settings.pop("device")
        described: JsonObject = {"kind": "epsstar", "training": settings}
        if device != "cpu":  # named off the CPU only: a CPU audit's record is as before
            described["device"] = device
        if self.breakage.broken:
            described["breakage"] = asdict(self.breakage)
        if self.init is not None:  # named only when set: an audit without it is as before
            described["init"] = self.init
        return described

    def needs_public(self) -> bool:
        return self.init == "pretrained" and self.initial is None

    def prepared(self, public: Path, seed: int) -> OwnTrainer:
        """This trainer with the network pretrained on ``public`` (non-private, the same
        architecture and optimiser, seeded by ``seed``), from which every run starts. The
        weights are a function of public data and the seed alone, fixed before any run, so the
        accountant's analysis, which holds for any fixed initial model, and the white-box
        threat models, which read θ₀ from the run, stay valid."""
        data = load_table(public, self.label_column, features=self.features)
        config = replace(self.config, target_epsilon=None, noise_multiplier=None, seed=seed)
        network = train(data, config, standardiser=self.shared_standardiser(data)).model.network
        weights = tuple(p.detach().double().numpy().copy() for p in network.parameters())
        return replace(self, initial=weights)

    def _initial(self) -> list[torch.Tensor] | None:
        if self.initial is None:
            return None
        return [torch.as_tensor(value, dtype=torch.float32) for value in self.initial]

    def _white_box(self) -> bool:
        return self.config.private and self.config.clipping_groups() is None

    def serves(self) -> tuple[ThreatModelName, ...]:
        if self._white_box():
            return tuple(model.name for model in registered_threat_models())
        return black_box_names()

    def gradient_capacity(self) -> int:
        return self.parameters if self._white_box() else 0

    def claim(self, base_records: int) -> Claim | None:
        accounted = _accounted(replace(self.config, seed=0), base_records)
        if accounted is None:
            return Claim(False, source="epsstar's trainer without DP-SGD")
        return Claim(True, *accounted, _ACCOUNTANT)

    def shared_standardiser(self, data: TabularData) -> Standardiser | None:
        """The standardiser of every run, the population's, for tables with ``data``'s
        columns; None when each run fits its own (``data``) or none."""
        if self.settings().standardise_on != "population":
            return None
        assert self.population is not None  # the choice needs one
        return Standardiser(
            *_population_moments(self.population, self.label_column, data.feature_names)
        )

    def _observer(
        self,
        request: RunRequest,
        data: TabularData,
        plan: PrivacyPlan,
        tables: dict[CanaryKind, TabularData],
    ) -> tuple[WhiteBoxObserver, GradientInjector | None]:
        """The white-box adversary of this run, and the injector of its gradient canaries."""
        config = self.config
        base = load_table(
            request.base_train, self.label_column, features=data.feature_names, classes=data.classes
        )
        standardiser = self.shared_standardiser(data)
        if standardiser is None:  # each run's own table, or the identity
            standardiser = fitted(self.settings().standardisation(False), data, None, torch.float32)
        records = [tables[kind] for kind in ("population", "crafted") if kind in tables]
        canary_x = [_tensors(table, standardiser) for table in records]
        empty = (torch.zeros((0, data.n_features)), torch.zeros(0, dtype=torch.int64))
        canaries = (
            (torch.cat([x for x, _ in canary_x]), torch.cat([y for _, y in canary_x]))
            if canary_x
            else empty
        )
        count = len(request.gradient_included)
        coordinates = canary_coordinates(
            self.parameters, count, derived_seed(request.seed, "gradient")
        )
        wants_di = "di" in request.threat_models and "population" in tables
        sample = np.random.default_rng(derived_seed(request.seed, "split")).permutation(
            base.n_records
        )[:VARIANCE_SAMPLE]
        observed = Observed(
            train=_tensors(base, standardiser),
            canaries=canaries,
            population=_tensors(tables["population"], standardiser) if wants_di else None,
            coordinates=torch.as_tensor(coordinates, dtype=torch.int64),
            sample=torch.as_tensor(np.sort(sample), dtype=torch.int64),
        )
        mechanism = Mechanism(
            sampling_rate=plan.sampling_rate,
            clip=config.clip,
            noise_std=plan.noise_multiplier * config.clip,
            normaliser=plan.expected_batch_size,
            lr=config.lr,
            momentum=config.momentum,
            binary=data.n_classes == 2,
        )
        network = MLP(data.n_features, output_width(data.n_classes), config.hidden)
        injector = None
        if count:
            injector = GradientInjector(
                coordinates,
                request.gradient_included,
                self.parameters,
                plan.sampling_rate,
                config.clip,
                derived_seed(request.seed, "inclusion-gradient", 1),
            )
        return WhiteBoxObserver(network, mechanism, observed), injector

    def _hooks(
        self,
        plan: PrivacyPlan | None,
        observer: WhiteBoxObserver | None,
        injector: GradientInjector | None,
    ) -> StepHooks | None:
        if observer is None and not self.breakage.broken:
            return None
        breakage = self.breakage
        per_epoch = plan.steps_per_epoch if plan is not None else 1
        return StepHooks(
            inject=injector,
            observe=observer,
            noise_scale=functools.partial(breakage.noise_scale, per_epoch)
            if breakage.noise != 1.0 or breakage.noise_once_per_epoch
            else None,
            clip=breakage.clip,
        )

    def plan(self, base_records: int) -> PrivacyPlan | None:
        """The privacy plan of every run on ``base_records`` rows of ``--train`` and the canaries
        it includes."""
        return _plan(replace(self.config, seed=0), base_records)

    def _canary_tables(
        self, request: RunRequest, data: TabularData
    ) -> dict[CanaryKind, TabularData]:
        return {
            kind: load_table(
                path, self.label_column, features=data.feature_names, classes=data.classes
            )
            for kind, path in request.canaries.items()
        }

    def stack_size(self, threat_models: tuple[ThreatModelName, ...]) -> int:
        """Runs trained together by :meth:`run_stack` (1: one at a time; see
        :mod:`.stacked_runs`)."""
        white = any(threat_model(name).white_box for name in threat_models)
        return 1 if self.breakage.in_steps or white or self.init else self.stack

    def run_stack(self, requests: list[RunRequest]) -> list[RunScores]:
        """The runs of ``requests`` trained together (:mod:`.stacked_runs`)."""
        return run_stack(self, requests)

    def run(self, request: RunRequest) -> RunScores:
        start = time.perf_counter()
        data = load_table(request.train, self.label_column, features=self.features)
        tables = self._canary_tables(request, data)
        plan = self.plan(request.base_records)
        white = [name for name in request.threat_models if threat_model(name).white_box]
        observer = injector = None
        if white and plan is not None:
            observer, injector = self._observer(request, data, plan, tables)
        config = replace(self.settings(), seed=request.seed)
        trained = train(
            data,
            config,
            plan=plan,
            hooks=self._hooks(plan, observer, injector),
            initial=self._initial(),
            standardiser=self.shared_standardiser(data),
        )
        seen = {} if observer is None else observer.scores(trained.model.network)
        return self.scored(
            request, data, trained, tables, seen, seconds=time.perf_counter() - start
        )

    def scored(
        self,
        request: RunRequest,
        data: TabularData,
        trained: TrainedModel,
        tables: dict[CanaryKind, TabularData] | None = None,
        seen: Mapping[str, FloatArray] | None = None,
        *,
        seconds: float = 0.0,
    ) -> RunScores:
        """The run's canaries scored under ``trained`` (``seen``: the white-box scores its
        observer gave), its claim and record."""
        tables = self._canary_tables(request, data) if tables is None else tables
        seen = seen or {}
        scores: dict[ThreatModelName, FloatArray] = {}
        for name in request.threat_models:
            kind = threat_model(name).canaries
            if name in seen:
                scores[name] = seen[name]
                continue
            scores[name] = _losses(trained.model, tables[kind])
            if self.breakage.memorise > 0:
                scores[name] = memorised_losses(
                    scores[name],
                    tables[kind],
                    data,
                    self.breakage.memorise,
                    derived_seed(request.seed, "memorise"),
                )
        privacy = trained.result.privacy
        claim = (
            Claim(False, source="epsstar's trainer without DP-SGD")
            if privacy is None
            else Claim(True, privacy.epsilon, privacy.delta, _ACCOUNTANT)
        )
        record: JsonObject = {
            "file": None,
            "sha256": None,
            "loader": "epsstar trainer (in process)",
            "schedule": _schedule(trained, data),
        }
        return RunScores(scores, claim, record, seconds)
