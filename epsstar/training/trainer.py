"""DP-SGD (and the same loop without privacy) for logistic regression and MLPs.

One step of DP-SGD with sampling rate q, clip norm C and noise multiplier σ:

1. Poisson sampling: every training record joins the batch independently with
   probability q (so the batch size varies; its expectation is q·n).
2. Clipping: each example's gradient (or, with m microbatches, each group's
   mean gradient) is scaled to L2 norm at most C — exactly, without forming
   per-example gradients (:mod:`epsstar.training.clipping`).
3. Noise: N(0, σ²C²) is added to every coordinate of the sum of the clipped
   gradients.
4. The noisy sum is divided by the expected number of clipping units — q·n
   examples, or m microbatches — and handed to SGD with momentum (the paper's
   lr 0.01, momentum 0.9, §4.1 of Negoescu et al. 2024, "Epsilon*: Privacy Metric for Machine
   Learning Models").

Without privacy the same loop skips steps 2 and 3 (the gradient of the summed
loss divided by q·n). There are round(1/q) steps per epoch.

A private run follows its :class:`PrivacyPlan`: q = B/N, the steps and σ are those planned for
N records, whatever the number of rows of the table it is then handed, and the noisy sum is
divided by q·N. ``epsstar train`` plans on its table's own size (N = n, treated as public);
an audit of the trainer plans every run on the rows it holds without canaries, so that runs
with and without a canary share their schedule (under add/remove-one adjacency the
accountant's analysis assumes a schedule that does not depend on the private data set).

Microbatches: each step draws a group id in {0, …, m−1} for every record
(whether sampled or not, so the grouping does not depend on the data), and a
sampled record joins its group. Adding or removing one record changes only its
own group's clipped mean, by up to 2C (C if it was alone), so the sensitivity
of the noisy sum is 2C and the accountant sees the noise multiplier σ/2. With
one example per unit (the default, ``microbatches=None``) the sensitivity is C.

A run is deterministic for a seed: the initial weights, the batches, the
groups and the noise all come from one seeded :class:`torch.Generator`
(:mod:`epsstar.training.batched` draws the same numbers to train this model among K others).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.records.constraints import (
    EachOf,
    InRange,
    Maybe,
    OneOf,
    WholeNumber,
    check_fields,
    constraint,
)
from epsstar.plumbing.records.json_types import JsonObject
from epsstar.plumbing.runtime.device import checked_device, torch_device
from epsstar.statistics._validation import DELTA
from epsstar.statistics.names import ACCOUNTANTS, STANDARDISATIONS, StandardiseOn
from epsstar.statistics.utility import auroc
from epsstar.training.accounting import (
    DEFAULT_MAX_NOISE_MULTIPLIER,
    Accountant,
    default_delta,
    find_noise_multiplier,
    make_accountant,
    membership_advantage,
)
from epsstar.training.clipping import ClippedSum, clip_rows, clipped_gradient_sum, gradient_sum
from epsstar.training.data.tables import TabularData
from epsstar.training.memory import check_fits
from epsstar.training.models import MLP, ExportedModel, Standardiser, output_width
from epsstar.training.results import (
    DataSummary,
    EpochStats,
    Hyperparameters,
    ModelSummary,
    PrivacySummary,
    Standardisation,
    TrainingResult,
    TrainingUtility,
)
from epsstar.training.standardisation import chosen, covered_by_guarantee, fitted

__all__ = [
    "PrivacyPlan",
    "StepHooks",
    "StepSettings",
    "TrainedModel",
    "TrainingConfig",
    "check_memory",
    "check_noise_source",
    "check_population",
    "evaluate",
    "noisy_gradient",
    "plan_privacy",
    "privacy_summary",
    "schedule",
    "train",
    "trained_model",
]


def check_noise_source(target_epsilon: float | None, noise_multiplier: float | None) -> None:
    """Refuse a run given both a target ε and a noise multiplier: σ comes from one of them
    (the accountant's search, or as given), and a run with neither is not private."""
    if target_epsilon is not None and noise_multiplier is not None:
        raise InvalidInputError(
            "give either target_epsilon or noise_multiplier, not both. "
            f"Found {target_epsilon} and {noise_multiplier}."
        )


@dataclass(frozen=True, slots=True)
class TrainingConfig:
    """Settings of one training run, checked when built (:meth:`validate` checks them
    against the data and the machine).

    The run is private when ``target_epsilon`` or ``noise_multiplier`` is given
    (not both); otherwise ``clip`` and ``microbatches`` are ignored and the
    model is trained without clipping or noise. ``batch_size`` is the expected
    batch size: q = batch_size / n. ``microbatches=None`` clips every example
    (ordinary DP-SGD); an integer m clips the mean gradient of each of m groups.
    ``delta=None`` means 1/(n ln n). ``standardise_on`` names the table the standardiser is
    fitted on; None lets the run choose (:mod:`epsstar.training.standardisation`, which
    refuses DP training with neither a population nor a choice), and :meth:`standardising`
    makes the choice.
    """

    epochs: int = field(metadata=constraint(WholeNumber()))
    batch_size: int = field(default=64, metadata=constraint(WholeNumber()))
    hidden: tuple[int, ...] = field(default=(), metadata=constraint(EachOf(WholeNumber())))
    lr: float = field(default=0.01, metadata=constraint(InRange(0.0, math.inf)))
    momentum: float = field(default=0.9, metadata=constraint(InRange(0.0, 1.0, "left")))
    clip: float = field(default=1.0, metadata=constraint(InRange(0.0, math.inf)))
    target_epsilon: float | None = field(
        default=None, metadata=constraint(Maybe(InRange(0.0, math.inf)))
    )
    noise_multiplier: float | None = field(
        default=None, metadata=constraint(Maybe(InRange(0.0, math.inf)))
    )
    delta: float | None = field(default=None, metadata=constraint(Maybe(DELTA)))
    microbatches: int | None = field(default=None, metadata=constraint(Maybe(WholeNumber())))
    accountant: str = field(default=ACCOUNTANTS.names[0], metadata=constraint(OneOf(ACCOUNTANTS)))
    max_noise_multiplier: float = field(
        default=DEFAULT_MAX_NOISE_MULTIPLIER, metadata=constraint(InRange(0.0, math.inf))
    )
    standardise_on: StandardiseOn | None = field(
        default=None, metadata=constraint(Maybe(OneOf(STANDARDISATIONS)))
    )
    seed: int = field(default=0, metadata=constraint(WholeNumber(minimum=0)))
    #: Where the run computes (``cpu``, ``cuda``, ``cuda:N``, ``mps``): not a setting of the
    #: model (the same draws on every device, so the same model up to summation order), and
    #: so left out of its fingerprint.
    device: str = "cpu"

    def __post_init__(self) -> None:
        check_fields(self)
        check_noise_source(self.target_epsilon, self.noise_multiplier)

    @property
    def private(self) -> bool:
        return self.target_epsilon is not None or self.noise_multiplier is not None

    def standardisation(self, has_population: bool) -> StandardiseOn:
        """The table of the standardiser of a run given a population table or not
        (:func:`~epsstar.training.standardisation.chosen`)."""
        return chosen(self.standardise_on, private=self.private, has_population=has_population)

    def standardising(self, has_population: bool) -> TrainingConfig:
        """These settings with :meth:`standardisation` chosen."""
        return dataclasses.replace(self, standardise_on=self.standardisation(has_population))

    def validate(self, n_records: int) -> None:
        """Raise :class:`InvalidInputError` if a batch of ``batch_size`` cannot be drawn from
        n records, or the device is not on this machine (the run's, which may not be the one
        that built the record); every other setting was checked when the record was built."""
        if self.batch_size > n_records:
            raise InvalidInputError(
                f"batch_size must be at most the number of training records ({n_records}). "
                f"Found {self.batch_size}."
            )
        checked_device(self.device, option="device")

    def clipping_groups(self) -> int | None:
        """Microbatch count m, or None for per-example clipping (m = batch size counts as such)."""
        if self.microbatches is None or self.microbatches == self.batch_size:
            return None
        return self.microbatches


@dataclass(frozen=True, slots=True)
class PrivacyPlan:
    """σ and everything the accountant needs, fixed before training starts for ``records``
    records: the sampling rate, the steps and the normaliser a run follows (see the module)."""

    noise_multiplier: float
    sensitivity_factor: float
    sampling_rate: float
    steps: int
    steps_per_epoch: int
    records: int
    delta: float
    delta_rule: str
    accountant: Accountant
    target_epsilon: float | None

    @property
    def accounting_noise_multiplier(self) -> float:
        return self.noise_multiplier / self.sensitivity_factor

    @property
    def expected_batch_size(self) -> float:
        """q × the records planned for: what a step's sum of clipped examples is divided by."""
        return self.sampling_rate * self.records

    def epsilon_after(self, steps: int) -> float:
        return self.accountant.epsilon(
            self.accounting_noise_multiplier, self.sampling_rate, steps, self.delta
        )


def noisy_gradient(
    network: MLP,
    x: torch.Tensor,
    y: torch.Tensor,
    binary: bool,
    *,
    clip: float | None,
    noise_std: float,
    normaliser: float,
    generator: torch.Generator,
    groups: torch.Tensor | None = None,
    n_groups: int = 0,
) -> ClippedSum:
    """The update direction of one step: (Σ clipped gradients + N(0, noise_std²)) / normaliser.

    ``clip=None`` sums unclipped gradients (the non-private baseline). Noise is
    drawn from ``generator`` one parameter tensor at a time, in
    ``network.parameters()`` order, and moved to the gradients' device (the generator
    stays on the CPU: the same numbers on every device). The returned ``loss`` is the
    batch's summed loss.
    """
    if clip is None:
        total = gradient_sum(network, x, y, binary)
    else:
        total = clipped_gradient_sum(network, x, y, binary, clip, groups=groups, n_groups=n_groups)
    with torch.no_grad():
        # In place: the sums are this step's own tensors, and (Σ + σC·z) / n is computed
        # with the same roundings as out of place, without three temporaries per tensor.
        for summed in total.gradients:
            if noise_std > 0.0:
                noise = torch.randn(summed.shape, generator=generator, dtype=summed.dtype)
                summed.add_(noise.mul_(noise_std).to(summed.device))
            summed.div_(normaliser)
    return total


def _epsstar_version() -> str:
    import epsstar

    return str(getattr(epsstar, "__version__", "unknown"))


def schedule(config: TrainingConfig, n_records: int) -> tuple[float, int]:
    """The sampling rate q = batch_size / n and the steps per epoch, round(1/q), for n records."""
    sampling_rate = config.batch_size / n_records
    return sampling_rate, max(1, round(1.0 / sampling_rate))


def plan_privacy(config: TrainingConfig, n_records: int) -> PrivacyPlan | None:
    """Choose σ for runs on ``n_records`` records (searching for ``target_epsilon`` if given),
    and with it their schedule (:func:`schedule`); None if not private."""
    config.validate(n_records)
    if not config.private:
        return None
    sampling_rate, per_epoch = schedule(config, n_records)
    steps = per_epoch * config.epochs
    if config.delta is None:
        delta, rule = default_delta(n_records), "1/(n ln n)"
    else:
        delta, rule = float(config.delta), "given"
    accountant = make_accountant(config.accountant, config.target_epsilon)
    factor = 1.0 if config.clipping_groups() is None else 2.0
    if config.target_epsilon is not None:
        effective = find_noise_multiplier(
            accountant,
            config.target_epsilon,
            delta,
            sampling_rate,
            steps,
            max_noise_multiplier=config.max_noise_multiplier / factor,
        )
        sigma = effective * factor
    else:
        assert config.noise_multiplier is not None
        sigma = float(config.noise_multiplier)
    return PrivacyPlan(
        noise_multiplier=sigma,
        sensitivity_factor=factor,
        sampling_rate=sampling_rate,
        steps=steps,
        steps_per_epoch=per_epoch,
        records=n_records,
        delta=delta,
        delta_rule=rule,
        accountant=accountant,
        target_epsilon=config.target_epsilon,
    )


@dataclass(frozen=True, slots=True)
class TrainedModel:
    """The exported model (raw features → probabilities) and the run's record."""

    model: ExportedModel
    result: TrainingResult


def evaluate(model: ExportedModel, data: TabularData) -> TrainingUtility:
    """Accuracy, AUROC (binary) and mean cross-entropy of ``model`` on ``data``."""
    dtype = model.standardiser.mean.dtype
    with torch.no_grad():
        probabilities = model(torch.as_tensor(data.features, dtype=dtype)).double().numpy()
    labels = data.labels
    eps = 1e-12
    area: float | None = None
    if model.binary:
        positive = probabilities[:, 0]
        predicted = (positive >= 0.5).astype(np.int64)
        chosen = np.where(labels == 1, positive, 1.0 - positive)
        area, _ = auroc(labels, positive, 2)
    else:
        predicted = probabilities.argmax(axis=1)
        chosen = probabilities[np.arange(labels.size), labels]
    return TrainingUtility(
        n_records=int(labels.size),
        accuracy=float(np.mean(predicted == labels)),
        auroc=area,
        loss=float(-np.mean(np.log(np.clip(chosen, eps, 1.0)))),
    )


#: Corollary 7 is not advisable below this noise multiplier (§4.1 of the paper).
_CLOSED_FORM_MIN_NOISE_MULTIPLIER = 1.0

_EXACT_SOURCE = (
    "1 - delta(epsilon=0) of the privacy loss distribution (dp_accounting.pld, pessimistic "
    "discretisation): a lower bound on the Bayes security"
)
_NO_EXACT_SOURCE = (
    "not computed: with microbatches the record's group is released whether or not the "
    "record is sampled, which dp_accounting's substitution pair does not cover"
)
#: Where in :data:`~epsstar.statistics.readings.conversions.CLOSED_FORM_BOUNDS_PAPER` the
#: closed form comes from.
_CLOSED_FORM_SECTION = (
    "Corollary 7, leading term only (an approximation; unreliable for noise multipliers below 1)"
)


def _bayes_security(plan: PrivacyPlan) -> dict[str, JsonObject]:
    """Per neighbouring relation: the exact β* from the PLD beside Corollary 7's closed form."""
    from epsstar.statistics.readings.conversions import (
        CLOSED_FORM_BOUNDS_PAPER,
        bayes_security_dpsgd,
        bayes_security_from_delta_at_zero,
    )

    # Substitution moves one clipping unit by up to 2C whether units are examples or groups,
    # which is the sensitivity Corollary 7 assumes for σ; add/remove uses the accountant's σ.
    # dp_accounting's substitution pair assumes an unsampled record contributes nothing, which
    # holds for per-example clipping only (a microbatch is released with or without it).
    per_example = plan.sensitivity_factor == 1.0
    readings: dict[str, JsonObject] = {}
    for relation, sigma in (
        ("add_remove", plan.accounting_noise_multiplier),
        ("substitution", plan.noise_multiplier),
    ):
        closed = bayes_security_dpsgd(plan.sampling_rate, plan.steps, sigma, relation)
        exact = None
        if relation == "add_remove" or per_example:
            exact = membership_advantage(
                plan.accounting_noise_multiplier,
                plan.sampling_rate,
                plan.steps,
                relation,
                coarsest_interval=plan.accountant.value_discretization_interval,
            )
        readings[relation] = {
            "beta_exact": None
            if exact is None
            else bayes_security_from_delta_at_zero(exact.advantage),
            "advantage_exact": None if exact is None else exact.advantage,
            "value_discretization_interval": None
            if exact is None
            else exact.value_discretization_interval,
            "exact_source": _NO_EXACT_SOURCE if exact is None else _EXACT_SOURCE,
            "beta_closed_form": closed.beta_closed_form,
            "advantage_closed_form": closed.advantage_closed_form,
            "error_order": closed.error_order,
            "closed_form_unreliable": sigma < _CLOSED_FORM_MIN_NOISE_MULTIPLIER,
            "closed_form_source": f"{CLOSED_FORM_BOUNDS_PAPER}, {_CLOSED_FORM_SECTION}",
            "noise_multiplier": sigma,
        }
    return readings


def privacy_summary(config: TrainingConfig, plan: PrivacyPlan, epsilon: float) -> PrivacySummary:
    """The record of a private run's guarantee: ε after its plan's steps and the readings."""
    from epsstar.statistics.readings.conversions import (
        advantage_bound_gaussian,
        posterior_belief_bound,
    )

    finite = math.isfinite(epsilon)
    return PrivacySummary(
        target_epsilon=plan.target_epsilon,
        epsilon=epsilon,
        delta=plan.delta,
        delta_rule=plan.delta_rule,
        noise_multiplier=plan.noise_multiplier,
        noise_std=plan.noise_multiplier * config.clip,
        clip=config.clip,
        clipping_unit="example" if config.clipping_groups() is None else "microbatch",
        sensitivity=plan.sensitivity_factor * config.clip,
        accounting_noise_multiplier=plan.accounting_noise_multiplier,
        sampling_rate=plan.sampling_rate,
        steps=plan.steps,
        neighbouring="add_remove",
        accountant=plan.accountant.describe(),
        posterior_belief_bound=posterior_belief_bound(epsilon) if finite else 1.0,
        advantage_bound_gaussian=advantage_bound_gaussian(epsilon, plan.delta) if finite else 1.0,
        bayes_security=_bayes_security(plan),
    )


@dataclass(frozen=True, slots=True)
class StepSettings:
    """What every step of a run uses: sampling, clipping groups, clip, noise and normaliser;
    a private run's sampling, steps and normaliser are its plan's, a run without privacy's
    those of its table of ``n_records`` rows."""

    binary: bool
    sampling_rate: float
    steps_per_epoch: int
    groups_count: int | None
    clip: float | None
    noise_std: float
    normaliser: float

    @classmethod
    def of(
        cls, config: TrainingConfig, plan: PrivacyPlan | None, n_records: int, binary: bool
    ) -> StepSettings:
        if plan is None:
            sampling_rate, per_epoch = schedule(config, n_records)
            return cls(
                binary=binary,
                sampling_rate=sampling_rate,
                steps_per_epoch=per_epoch,
                groups_count=None,
                clip=None,
                noise_std=0.0,
                normaliser=sampling_rate * n_records,
            )
        groups_count = config.clipping_groups()
        return cls(
            binary=binary,
            sampling_rate=plan.sampling_rate,
            steps_per_epoch=plan.steps_per_epoch,
            groups_count=groups_count,
            clip=config.clip,
            noise_std=plan.noise_multiplier * config.clip,
            normaliser=float(groups_count) if groups_count else plan.expected_batch_size,
        )


def check_population(data: TabularData, population: TabularData | None) -> None:
    if population is not None and (
        population.feature_names != data.feature_names or population.classes != data.classes
    ):
        raise InvalidInputError(
            "population data must have the training data's feature columns and label classes; "
            "read it with load_table(..., features=train.feature_names, classes=train.classes)."
        )


@dataclass(frozen=True, slots=True)
class StepHooks:
    """What an audit of the trainer adds to, sees of, or (in tests) breaks in every step.

    Steps are counted from 0 over the whole run. ``inject(step)`` returns the gradient canaries
    of that step (Nasr et al. 2021, "Adversary Instantiation: Lower Bounds for Differentially
    Private Machine Learning"), rows of flattened gradients in ``network.parameters()`` order, or
    ``None``: each row is clipped like one example's gradient and added to the step's clipped sum
    before the noise. ``observe(step, parameters, noisy_sum)`` sees the parameters the step's
    gradients were taken at and the noisy sum Σ clip(∇) + N(0, σ²C²) (not yet divided by the
    normaliser), as the DP-SGD analysis lets an adversary see every step. ``noise_scale(step)``
    multiplies the noise's standard deviation and ``clip=False`` sums unclipped gradients: test
    hooks that break the privacy the accountant reports, so that a test or a benchmark can show that
    the audit of a training run catches them; the command line never sets them. ``sampled(step,
    network, rows)`` sees the network before the step's update and the indices of the records
    sampled for it (:class:`epsstar.training.attribute.AttributeTracker`); it must change nothing.
    """

    inject: Callable[[int], torch.Tensor | None] | None = None
    observe: Callable[[int, list[torch.Tensor], list[torch.Tensor]], None] | None = None
    noise_scale: Callable[[int], float] | None = None
    clip: bool = True
    sampled: Callable[[int, MLP, torch.Tensor], None] | None = None


def _hooked(
    gradients: list[torch.Tensor],
    params: Sequence[torch.Tensor],
    hooks: StepHooks,
    step: int,
    settings: StepSettings,
) -> list[torch.Tensor]:
    """The step's update with the hooks' canaries added (clipped, over the normaliser), after
    the hooks' observer has seen its noisy sum. The noise being added to the sum, adding a
    canary to the sum before or after it gives the same update."""
    canaries = None if hooks.inject is None else hooks.inject(step)
    if canaries is not None and canaries.shape[0] > 0:
        rows = canaries if settings.clip is None else clip_rows(canaries, settings.clip)
        total = rows.sum(dim=0).to(gradients[0].device, gradients[0].dtype)
        pieces = torch.split(total, [p.numel() for p in params])
        gradients = [
            g + piece.reshape(g.shape) / settings.normaliser
            for g, piece in zip(gradients, pieces, strict=True)
        ]
    if hooks.observe is not None:
        hooks.observe(
            step,
            [p.detach().cpu().clone() for p in params],
            [(g * settings.normaliser).cpu() for g in gradients],
        )
    return gradients


def _run_epoch(
    network: MLP,
    optimiser: torch.optim.Optimizer,
    features: torch.Tensor,
    labels: torch.Tensor,
    settings: StepSettings,
    generator: torch.Generator,
    hooks: StepHooks | None = None,
    first_step: int = 0,
) -> tuple[float, int]:
    """One epoch of Poisson-sampled (noisy, clipped) SGD steps; summed loss and examples seen.

    The draws are made on the CPU ``generator`` and their rows moved to the features' device."""
    n = features.shape[0]
    private = settings.clip is not None
    params = list(network.parameters())
    if hooks is not None and not hooks.clip:
        settings = dataclasses.replace(settings, clip=None)
    loss_total, seen = 0.0, 0
    for index in range(settings.steps_per_epoch):
        chosen = torch.nonzero(torch.rand(n, generator=generator) < settings.sampling_rate)
        chosen = chosen.squeeze(1)
        groups = None
        if private and settings.groups_count is not None:
            groups = torch.randint(settings.groups_count, (n,), generator=generator)[chosen]
            groups = groups.to(features.device)
        chosen = chosen.to(features.device)
        if hooks is not None and hooks.sampled is not None:
            hooks.sampled(first_step + index, network, chosen)
        noise_std = settings.noise_std
        if hooks is not None and hooks.noise_scale is not None:
            noise_std *= hooks.noise_scale(first_step + index)
        step = noisy_gradient(
            network,
            features[chosen],
            labels[chosen],
            settings.binary,
            clip=settings.clip,
            noise_std=noise_std,
            normaliser=settings.normaliser,
            generator=generator,
            groups=groups,
            n_groups=settings.groups_count or 0,
        )
        gradients = step.gradients
        if hooks is not None:
            gradients = _hooked(gradients, params, hooks, first_step + index, settings)
        loss_total += step.loss
        seen += step.n_examples
        with torch.no_grad():
            for param, gradient in zip(params, gradients, strict=True):
                param.grad = gradient
        optimiser.step()
    return loss_total, seen


def _data_summary(data: TabularData, population: TabularData | None) -> DataSummary:
    return DataSummary(
        train=data.source,
        population=None if population is None else population.source,
        label_column=data.label_column,
        feature_names=data.feature_names,
        classes=data.classes,
        n_train=data.n_records,
        n_population=None if population is None else population.n_records,
    )


def _model_summary(
    config: TrainingConfig, data: TabularData, population: TabularData | None, network: MLP
) -> ModelSummary:
    n_outputs = output_width(data.n_classes)
    choice = config.standardise_on or config.standardisation(population is not None)
    return ModelSummary(
        architecture="mlp" if config.hidden else "logistic_regression",
        n_features=data.n_features,
        hidden=config.hidden,
        n_outputs=n_outputs,
        n_parameters=sum(p.numel() for p in network.parameters()),
        output="P(y = classes[1]), shape (n, 1)"
        if data.n_classes == 2
        else f"class probabilities in the order of classes, shape (n, {n_outputs})",
        standardisation=Standardisation(choice, covered_by_guarantee(choice, config.private)),
    )


def _hyperparameters(
    config: TrainingConfig, plan: PrivacyPlan | None, settings: StepSettings
) -> Hyperparameters:
    return Hyperparameters(
        epochs=config.epochs,
        batch_size=config.batch_size,
        sampling="poisson",
        sampling_rate=settings.sampling_rate,
        steps_per_epoch=settings.steps_per_epoch,
        steps=settings.steps_per_epoch * config.epochs,
        optimizer="sgd",
        lr=config.lr,
        momentum=config.momentum,
        clip=config.clip if plan is not None else None,
        microbatches=settings.groups_count if plan is not None else None,
        update_normaliser=settings.normaliser,
        seed=config.seed,
        dtype="float32",
    )


def _frozen_export(standardiser: Standardiser, network: MLP, binary: bool) -> ExportedModel:
    """The trained network behind its standardiser, in eval mode and without gradients."""
    network.eval()
    exported = ExportedModel(standardiser, network, binary).eval()
    for param in exported.parameters():
        param.requires_grad_(False)
    return exported


def check_memory(config: TrainingConfig, data: TabularData) -> None:
    """Refuse settings whose network and batches would not fit in memory
    (:mod:`epsstar.training.memory`), before anything is allocated."""
    check_fits(
        data.n_features,
        config.hidden,
        output_width(data.n_classes),
        config.batch_size,
        config.clipping_groups() if config.private else None,
    )


def _checked_plan(
    data: TabularData,
    config: TrainingConfig,
    population: TabularData | None,
    plan: PrivacyPlan | None,
    hooks: StepHooks | None,
    standardiser: Standardiser | None,
) -> PrivacyPlan | None:
    """The run's privacy plan (``None`` without DP-SGD), once its inputs have been checked."""
    config.validate(data.n_records)
    if standardiser is None:
        config.standardisation(population is not None)
    if config.private and plan is None:
        plan = plan_privacy(config, data.n_records)
    if not config.private:
        plan = None
    check_population(data, population)
    check_memory(config, data)
    if hooks is not None and config.private and config.clipping_groups() is not None:
        raise InvalidInputError(
            "the hooks of an audit need per-example clipping (a gradient canary is one "
            f"clipping unit). Found microbatches={config.microbatches}."
        )
    return plan


def _network(
    data: TabularData,
    config: TrainingConfig,
    generator: torch.Generator,
    initial: Sequence[torch.Tensor] | None,
) -> MLP:
    """The network of a run, its weights drawn from ``generator`` (the draw is made even when
    ``initial`` replaces them, so that the batches and the noise are those of a run without)."""
    network = MLP(
        data.n_features,
        output_width(data.n_classes),
        config.hidden,
        generator=generator,
        dtype=torch.float32,
    )
    if initial is not None:
        with torch.no_grad():
            for parameter, value in zip(network.parameters(), initial, strict=True):
                parameter.copy_(value)
    return network


def train(
    data: TabularData,
    config: TrainingConfig,
    *,
    population: TabularData | None = None,
    on_epoch: Callable[[EpochStats], None] | None = None,
    plan: PrivacyPlan | None = None,
    hooks: StepHooks | None = None,
    initial: Sequence[torch.Tensor] | None = None,
    standardiser: Standardiser | None = None,
) -> TrainedModel:
    """Train one model on ``data``; ``on_epoch`` is called after every epoch.

    ``initial`` replaces the seeded initial weights (the network's parameters in order: an
    audit's public, pretrained start); the seeded draw is made all the same, so the batches and
    the noise are those of a run without it.

    ``plan`` may pass a :class:`PrivacyPlan` computed earlier by :func:`plan_privacy` (the σ
    search is the slow part of planning); the run follows its schedule, planned for
    ``plan.records`` records, not one of ``data``'s size. ``hooks`` let an audit of the training
    run inject gradient canaries and observe every step (:class:`StepHooks`); they need
    per-example clipping. ``standardiser`` is one fitted already on the public table that
    ``config.standardise_on`` names (an audit of the trainer fits its population's once for
    all its runs, whatever labels a run holds); None fits the one ``config`` chooses for
    ``population`` (:mod:`epsstar.training.standardisation`). ``config.device`` is where the
    network, the features and every step live; the seeded generator, and so the initial
    weights, the batches, the groups and the noise, stays on the CPU, so a run draws the same
    numbers on every device and differs from the CPU run only by floating-point summation
    order. The exported model is on the CPU.
    """
    start = time.perf_counter()
    n = data.n_records
    where = torch_device(config.device)
    plan = _checked_plan(data, config, population, plan, hooks, standardiser)
    binary = data.n_classes == 2
    dtype = torch.float32
    generator = torch.Generator().manual_seed(config.seed)
    if standardiser is None:
        standardiser = fitted(
            config.standardisation(population is not None), data, population, dtype
        )
    with torch.no_grad():
        features = standardiser(torch.as_tensor(data.features, dtype=dtype)).contiguous()
    features = features.to(where)
    labels = torch.as_tensor(data.labels).to(where)
    network = _network(data, config, generator, initial).to(where)
    optimiser = torch.optim.SGD(network.parameters(), lr=config.lr, momentum=config.momentum)
    settings = StepSettings.of(config, plan, n, binary)
    history: list[EpochStats] = []
    for epoch in range(config.epochs):
        epoch_start = time.perf_counter()
        first_step = epoch * settings.steps_per_epoch
        loss_total, seen = _run_epoch(
            network, optimiser, features, labels, settings, generator, hooks, first_step
        )
        spent = (
            plan.epsilon_after((epoch + 1) * settings.steps_per_epoch) if plan is not None else None
        )
        stats = EpochStats(
            epoch=epoch + 1,
            epochs=config.epochs,
            loss=loss_total / max(seen, 1),
            epsilon=spent,
            seconds=time.perf_counter() - epoch_start,
        )
        history.append(stats)
        if on_epoch is not None:
            on_epoch(stats)
    return trained_model(
        config,
        plan,
        (data, population),
        standardiser,
        network,
        history,
        time.perf_counter() - start,
    )


def trained_model(
    config: TrainingConfig,
    plan: PrivacyPlan | None,
    data: tuple[TabularData, TabularData | None],
    standardiser: Standardiser,
    network: MLP,
    history: Sequence[EpochStats],
    seconds: float,
) -> TrainedModel:
    """The exported model and the record of a finished run: ``network`` (brought to the
    CPU) behind ``standardiser``, its utility on the training and the population data
    (``data``), the privacy spent after the last epoch of ``history``, ``seconds`` of wall
    time and the device it was trained on."""
    train_data, population = data
    binary = train_data.n_classes == 2
    settings = StepSettings.of(config, plan, train_data.n_records, binary)
    exported = _frozen_export(standardiser, network.cpu(), binary)
    privacy = None
    if plan is not None:
        final = history[-1].epsilon
        assert final is not None
        privacy = privacy_summary(config, plan, final)
    result = TrainingResult(
        private=plan is not None,
        data=_data_summary(train_data, population),
        model=_model_summary(config, train_data, population, network),
        hyperparameters=_hyperparameters(config, plan, settings),
        privacy=privacy,
        utility_train=evaluate(exported, train_data),
        utility_population=None if population is None else evaluate(exported, population),
        history=tuple(history),
        wall_time_seconds=seconds,
        epsstar_version=_epsstar_version(),
        torch_version=torch.__version__,
        files={},
        device=checked_device(config.device),
    )
    return TrainedModel(exported, result)
