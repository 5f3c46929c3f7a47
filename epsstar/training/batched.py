"""K models trained as one batched computation, each the model it would be if trained alone.

:func:`train_many` trains K MLPs — each with its own configuration and seed, its own rows
of the data, its own Poisson batches, microbatch groups and noise, its own accountant
record and export — by stepping every model of a *stack* at once: the stack's weights
are (K, out, in) tensors (:mod:`epsstar.training.stacked`) and one step is one batched
matrix product per layer for all K models. Models stack when they take the same steps:
the same architecture, epochs and steps per epoch, private or not, the same clipping unit
and the same learning rate and momentum; their clip norms, noise, sampling rates and rows
may differ. Other models go to other stacks, trained one after another; a stack of one
model is trained by :func:`~epsstar.training.trainer.train` itself.

Model k of a stack draws from its own :class:`torch.Generator`, seeded with its
configuration's seed, exactly the numbers :func:`epsstar.training.trainer.train` draws, in
the same order (the initial weights; then every step one uniform per record for the
Poisson batch, with microbatches one group id per record, and the noise of every parameter
tensor in ``MLP.parameters()`` order), so its batches and noise are those of the run alone and
its exported model is the one :func:`~epsstar.training.trainer.train` gives, up to the
order of floating-point sums inside the batched products. Its privacy plan, and so its ε
and its schedule, is the one given or computed as for the run alone (one σ search per
distinct configuration).

A step pads every model's batch to the largest of the step (padded rows are masked out of
every sum); model k's update is (Σ clipped gradients + N(0, σ_k²C_k²)) / normaliser_k,
then SGD with momentum on the stacked weights, which is elementwise and therefore
model by model.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import torch
from numpy.typing import NDArray

from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.runtime.device import torch_device
from epsstar.training.data.tables import TabularData
from epsstar.training.memory import available_memory, training_bytes
from epsstar.training.models import MLP, Standardiser, output_width
from epsstar.training.results import EpochStats
from epsstar.training.stacked import StackedBatch, StackedMLP, stacked_gradients
from epsstar.training.standardisation import fitted
from epsstar.training.trainer import (
    PrivacyPlan,
    StepSettings,
    TrainedModel,
    TrainingConfig,
    check_memory,
    check_population,
    plan_privacy,
    schedule,
    train,
    trained_model,
)

__all__ = ["RowSubset", "stack_key", "stack_limit", "train_many"]


@dataclass(frozen=True, slots=True)
class RowSubset:
    """The rows of the shared data one model trains on, and the name its record gives them."""

    rows: NDArray[np.int64]
    source: str

    def of(self, data: TabularData) -> TabularData:
        """The table of these rows (classes and columns kept)."""
        return dataclasses.replace(
            data,
            features=np.ascontiguousarray(data.features[self.rows]),
            labels=np.ascontiguousarray(data.labels[self.rows]),
            source=self.source,
        )


def stack_key(config: TrainingConfig, n_records: int) -> tuple[object, ...]:
    """What models must share to be stepped together (see the module's description), for runs
    scheduled on ``n_records`` records (a private run's plan's, else its table's)."""
    _, steps = schedule(config, n_records)
    clipping = config.clipping_groups() if config.private else None
    return (
        config.hidden,
        config.epochs,
        steps,
        config.private,
        clipping,
        config.lr,
        config.momentum,
        config.device,
    )


@dataclass(slots=True)
class _Member:
    """One model of a stack: where it is in the caller's list, its run, its randomness."""

    index: int
    config: TrainingConfig
    plan: PrivacyPlan | None
    rows: torch.Tensor | None
    n_records: int
    settings: StepSettings
    generator: torch.Generator
    standardiser: Standardiser
    network: MLP


@dataclass(frozen=True, slots=True)
class _Shared:
    """What every step of a stack reads: the features (standardised once when every model
    has the same standardiser, else raw with each model's mean and scale), the labels and
    the device."""

    features: torch.Tensor
    labels: torch.Tensor
    means: torch.Tensor | None
    scales: torch.Tensor | None
    device: torch.device


def _member(
    index: int,
    config: TrainingConfig,
    plan: PrivacyPlan | None,
    data: TabularData,
    subset: RowSubset | None,
    population: TabularData | None,
    standardiser: Standardiser | None,
    fits: dict[tuple[str, int | None], Standardiser],
) -> _Member:
    """Model ``index``'s generator, standardiser and initial network, drawn and fitted as
    :func:`~epsstar.training.trainer.train` draws and fits them; ``fits`` keeps the
    standardisers fitted so far, by what they are fitted on."""
    rows = data if subset is None else subset.of(data)
    n_records = rows.n_records
    generator = torch.Generator().manual_seed(config.seed)
    if standardiser is None:
        choice = config.standardisation(population is not None)
        # one fit for every model whose standardiser is fitted on the same rows
        key = (choice, None if choice != "data" or subset is None else id(subset))
        if key not in fits:
            fits[key] = fitted(choice, rows, population, torch.float32)
        standardiser = Standardiser(fits[key].mean.detach(), fits[key].scale.detach())
    network = MLP(
        data.n_features,
        output_width(data.n_classes),
        config.hidden,
        generator=generator,
        dtype=torch.float32,
    )
    binary = data.n_classes == 2
    return _Member(
        index=index,
        config=config,
        plan=plan,
        rows=None if subset is None else torch.as_tensor(subset.rows, dtype=torch.int64),
        n_records=n_records,
        settings=StepSettings.of(config, plan, n_records, binary),
        generator=generator,
        standardiser=standardiser,
        network=network,
    )


def _shared(data: TabularData, members: Sequence[_Member], device: torch.device) -> _Shared:
    raw = torch.as_tensor(data.features, dtype=torch.float32)
    labels = torch.as_tensor(data.labels).to(device)
    first = members[0].standardiser
    same = all(
        torch.equal(m.standardiser.mean, first.mean)
        and torch.equal(m.standardiser.scale, first.scale)
        for m in members
    )
    if same:
        with torch.no_grad():
            standardised = first(raw).contiguous()
        return _Shared(standardised.to(device), labels, None, None, device)
    means = torch.stack([m.standardiser.mean.detach() for m in members]).unsqueeze(1)
    scales = torch.stack([m.standardiser.scale.detach() for m in members]).unsqueeze(1)
    return _Shared(raw.to(device), labels, means.to(device), scales.to(device), device)


def _per_model(values: Sequence[float], device: torch.device) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float32, device=device)


def _along(vector: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """``vector`` (K,) shaped to broadcast over a stacked tensor like ``like``."""
    return vector.reshape(-1, *([1] * (like.dim() - 1)))


@dataclass(frozen=True, slots=True)
class _Draws:
    """One step's random draws of every model: its rows (``chosen``, (K, n): 1 where model
    k's row is in its Poisson batch), their groups (K, n) and the noise of every parameter."""

    chosen: torch.Tensor
    groups: torch.Tensor | None
    noise: list[torch.Tensor] | None


@dataclass(frozen=True, slots=True)
class _Buffers:
    """Where every step of a stack writes its draws: one uniform per record and model (past
    a model's records 2.0, which no sampling rate reaches), the sampling rates in float32,
    with microbatches one group id per record, and each parameter's noise of every model."""

    uniforms: torch.Tensor
    rates: torch.Tensor
    groups: torch.Tensor | None
    noise: list[torch.Tensor] | None

    @classmethod
    def of(
        cls, members: Sequence[_Member], shapes: Sequence[torch.Size], private: bool
    ) -> _Buffers:
        k = len(members)
        widest = max(m.n_records for m in members)
        rates = [m.settings.sampling_rate for m in members]
        grouped = private and members[0].settings.groups_count
        return cls(
            uniforms=torch.full((k, widest), 2.0),
            rates=torch.tensor(rates, dtype=torch.float32).unsqueeze(1),
            groups=torch.zeros((k, widest), dtype=torch.int64) if grouped else None,
            noise=[torch.zeros((k, *shape)) for shape in shapes] if private else None,
        )


def _draw(members: Sequence[_Member], buffers: _Buffers) -> _Draws:
    """Every model's batch, groups and noise from its own generator, in the trainer's order:
    the trainer's ``torch.rand(n)``, ``torch.randint`` and ``torch.randn`` (the same kernels,
    written into model k's row of ``buffers``); its batch is its uniforms below its sampling
    rate, compared in float32 as the trainer's comparison with a Python float is."""
    for position, member in enumerate(members):
        n, settings = member.n_records, member.settings
        torch.rand(n, generator=member.generator, out=buffers.uniforms[position, :n])
        if buffers.groups is not None:
            assert settings.groups_count is not None
            torch.randint(
                settings.groups_count,
                (n,),
                generator=member.generator,
                out=buffers.groups[position, :n],
            )
        if buffers.noise is not None and settings.noise_std > 0.0:
            for tensor in buffers.noise:
                torch.randn(tensor.shape[1:], generator=member.generator, out=tensor[position])
    return _Draws(buffers.uniforms < buffers.rates, buffers.groups, buffers.noise)


def _row_map(members: Sequence[_Member]) -> torch.Tensor | None:
    """Row j of model k's records is row ``map[k, j]`` of the shared table (None: every
    model trains on the whole table)."""
    if all(m.rows is None for m in members):
        return None
    widest = max(m.n_records for m in members)
    rows = torch.zeros((len(members), widest), dtype=torch.int64)
    for position, member in enumerate(members):
        own = torch.arange(member.n_records) if member.rows is None else member.rows
        rows[position, : member.n_records] = own
    return rows


def _batch(draws: _Draws, rows: torch.Tensor | None, shared: _Shared) -> StackedBatch:
    """The step's rows of every model, padded to the largest batch, on the device: model k's
    chosen rows in their order, then padding (row 0, masked out)."""
    model, record = torch.nonzero(draws.chosen, as_tuple=True)
    counts = draws.chosen.sum(dim=1)
    k, width = int(counts.shape[0]), int(counts.max())
    starts = counts.cumsum(0) - counts
    slot = torch.arange(model.numel()) - starts[model]
    index = torch.zeros((k, width), dtype=torch.int64)
    index[model, slot] = record if rows is None else rows[model, record]
    mask = torch.zeros((k, width), dtype=torch.float32)
    mask[model, slot] = 1.0
    groups = None
    if draws.groups is not None:
        groups = torch.zeros((k, width), dtype=torch.int64)
        groups[model, slot] = draws.groups[model, record]
    index = index.to(shared.device)
    features = shared.features[index]
    if shared.means is not None and shared.scales is not None:
        features = (features - shared.means) / shared.scales
    return StackedBatch(
        features=features,
        labels=shared.labels[index],
        mask=mask.to(shared.device),
        groups=None if groups is None else groups.to(shared.device),
    )


@dataclass(frozen=True, slots=True)
class _StepVectors:
    """The per-model constants of a step: clip norm, noise standard deviation, normaliser."""

    clip: torch.Tensor | None
    noise_std: torch.Tensor
    normaliser: torch.Tensor
    groups_count: int

    @classmethod
    def of(cls, members: Sequence[_Member], device: torch.device) -> _StepVectors:
        settings = [m.settings for m in members]
        private = settings[0].clip is not None
        return cls(
            clip=_per_model([s.clip or 0.0 for s in settings], device) if private else None,
            noise_std=_per_model([s.noise_std for s in settings], device),
            normaliser=_per_model([s.normaliser for s in settings], device),
            groups_count=settings[0].groups_count or 0,
        )


@dataclass(frozen=True, slots=True)
class _Step:
    """One step's inputs, made ready before the step: every model's padded batch, how many
    examples each model sampled, and the noise to add to its gradient (σ_k C_k/ν_k times
    its draws, laid out as the stack's parameters; None without privacy)."""

    batch: StackedBatch
    seen: torch.Tensor
    noise: list[torch.Tensor] | None


def _laid_out(noise: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """``scale`` (K,) times ``noise`` drawn in ``nn.Linear``'s shapes, in the stack's layout
    (a weight's (K, out, in) draws as (K, in, out), contiguous)."""
    drawn = noise.transpose(1, 2) if noise.dim() == 3 else noise
    result = torch.empty(drawn.shape, dtype=noise.dtype)
    return torch.mul(drawn, _along(scale, drawn), out=result)


def _prepare(
    members: Sequence[_Member],
    buffers: _Buffers,
    rows: torch.Tensor | None,
    shared: _Shared,
    noise_scale: torch.Tensor,
) -> _Step:
    """The next step's draws, batch and scaled noise."""
    draws = _draw(members, buffers)
    batch = _batch(draws, rows, shared)
    noise = None
    if draws.noise is not None:
        noise = [_laid_out(tensor, noise_scale).to(shared.device) for tensor in draws.noise]
    return _Step(batch, draws.chosen.sum(dim=1), noise)


def _ready_steps(
    members: Sequence[_Member], shared: _Shared, noise_scale: torch.Tensor, private: bool
) -> Iterator[_Step]:
    """The epoch's steps' inputs, each made on a helper thread while the step before it runs.

    The draws are the models' own (their generators are used by this thread alone, in the
    trainer's order, and never past the epoch's last step), so running them beside the
    batched products changes no number; it takes them, with the batch's gather, off the
    thread that runs the products (torch releases the GIL inside its kernels)."""
    shapes = [param.shape for param in members[0].network.parameters()]
    buffers = _Buffers.of(members, shapes, private)
    rows = _row_map(members)
    count = members[0].settings.steps_per_epoch
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="epsstar-draws") as helper:
        pending = helper.submit(_prepare, members, buffers, rows, shared, noise_scale)
        for step in range(count):
            ready = pending.result()
            if step + 1 < count:
                pending = helper.submit(_prepare, members, buffers, rows, shared, noise_scale)
            yield ready


def _run_epoch(
    stack: StackedMLP,
    optimiser: torch.optim.Optimizer,
    members: Sequence[_Member],
    shared: _Shared,
    binary: bool,
) -> tuple[list[float], list[int]]:
    """One epoch of every model of the stack; each model's summed loss and examples seen."""
    vectors = _StepVectors.of(members, shared.device)
    params = stack.parameters()
    private = vectors.clip is not None
    noise_scale = (vectors.noise_std / vectors.normaliser).cpu()
    totals = torch.zeros(len(members), dtype=torch.float64)
    seen = torch.zeros(len(members), dtype=torch.int64)
    for step in _ready_steps(members, shared, noise_scale, private):
        groups = vectors.groups_count if step.batch.groups is not None else 0
        update = stacked_gradients(
            stack, step.batch, binary, vectors.clip, vectors.normaliser, step.noise, groups
        )
        totals += update.losses.double().cpu()
        seen += step.seen
        for param, gradient in zip(params, update.gradients, strict=True):
            param.grad = gradient
        optimiser.step()
    return [float(value) for value in totals], [int(value) for value in seen]


def _epsilon_after(
    members: Sequence[_Member], steps: int, cache: dict[tuple[int, int], float]
) -> list[float | None]:
    """Each model's ε after ``steps`` steps, one accountant call per distinct plan."""
    spent: list[float | None] = []
    for member in members:
        if member.plan is None:
            spent.append(None)
            continue
        key = (id(member.plan), steps)
        if key not in cache:
            cache[key] = member.plan.epsilon_after(steps)
        spent.append(cache[key])
    return spent


def _train_stack(
    data: TabularData,
    members: Sequence[_Member],
    population: TabularData | None,
    subsets: Sequence[RowSubset | None],
    on_epoch: Callable[[int, EpochStats], None] | None,
) -> list[TrainedModel]:
    """Train the models of one stack together, on their configurations' device; their
    exported models and records."""
    start = time.perf_counter()
    device = torch_device(members[0].config.device)
    binary = data.n_classes == 2
    config = members[0].config
    shared = _shared(data, members, device)
    stack = StackedMLP.from_networks([m.network for m in members]).to(device)
    optimiser = torch.optim.SGD(
        stack.parameters(), lr=config.lr, momentum=config.momentum, foreach=True
    )
    histories: list[list[EpochStats]] = [[] for _ in members]
    cache: dict[tuple[int, int], float] = {}
    for epoch in range(config.epochs):
        epoch_start = time.perf_counter()
        losses, seen = _run_epoch(stack, optimiser, members, shared, binary)
        steps = (epoch + 1) * members[0].settings.steps_per_epoch
        spent = _epsilon_after(members, steps, cache)
        seconds = time.perf_counter() - epoch_start
        for position, member in enumerate(members):
            stats = EpochStats(
                epoch=epoch + 1,
                epochs=config.epochs,
                loss=losses[position] / max(seen[position], 1),
                epsilon=spent[position],
                seconds=seconds,
            )
            histories[position].append(stats)
            if on_epoch is not None:
                on_epoch(member.index, stats)
    seconds = time.perf_counter() - start
    trained: list[TrainedModel] = []
    for position, member in enumerate(members):
        subset = subsets[member.index]
        network = stack.copy_into(position, member.network)
        trained.append(
            trained_model(
                member.config,
                member.plan,
                (data if subset is None else subset.of(data), population),
                member.standardiser,
                network,
                histories[position],
                seconds,
            )
        )
    return trained


def _plans(
    configs: Sequence[TrainingConfig],
    sizes: Sequence[int],
    given: Sequence[PrivacyPlan | None] | None,
) -> list[PrivacyPlan | None]:
    """Each model's privacy plan: the one given, else one σ search per distinct setting."""
    if given is not None:
        if len(given) != len(configs):
            raise InvalidInputError(
                f"plans must hold one entry per configuration ({len(configs)}). Found {len(given)}."
            )
        return [
            plan if config.private else None for plan, config in zip(given, configs, strict=True)
        ]
    found: dict[tuple[TrainingConfig, int], PrivacyPlan | None] = {}
    plans: list[PrivacyPlan | None] = []
    for config, size in zip(configs, sizes, strict=True):
        key = (dataclasses.replace(config, seed=0), size)
        if key not in found:
            found[key] = plan_privacy(config, size)
        plans.append(found[key])
    return plans


def stack_limit(config: TrainingConfig, data: TabularData) -> int:
    """How many models like ``config`` fit in half the memory available at once (≥ 1)."""
    per_model = training_bytes(
        data.n_features,
        config.hidden,
        output_width(data.n_classes),
        config.batch_size,
        config.clipping_groups() if config.private else None,
    )
    memory = available_memory()
    if memory is None:
        return 1_000
    return max(1, memory[0] // 2 // max(per_model, 1))


def _stacks(
    configs: Sequence[TrainingConfig], sizes: Sequence[int], limit: int | None, data: TabularData
) -> list[list[int]]:
    """The models' indices grouped by :func:`stack_key`, in first-seen order, each stack at
    most ``limit`` models (default: as many as fit in memory)."""
    groups: dict[tuple[object, ...], list[int]] = {}
    for index, (config, size) in enumerate(zip(configs, sizes, strict=True)):
        groups.setdefault(stack_key(config, size), []).append(index)
    stacks: list[list[int]] = []
    for indices in groups.values():
        most = limit if limit is not None else stack_limit(configs[indices[0]], data)
        stacks += [indices[i : i + most] for i in range(0, len(indices), most)]
    return stacks


def _train_alone(
    index: int,
    config: TrainingConfig,
    plan: PrivacyPlan | None,
    data: TabularData,
    subset: RowSubset | None,
    population: TabularData | None,
    standardiser: Standardiser | None,
    on_epoch: Callable[[int, EpochStats], None] | None,
) -> TrainedModel:
    """A stack of one model, trained by :func:`~epsstar.training.trainer.train` itself: the
    same draws and so the same model, bit for bit, and no slower (the stacked step's padding,
    masks and batched products buy nothing for one model; docs/many-models.md)."""

    def epoch_done(stats: EpochStats) -> None:
        if on_epoch is not None:
            on_epoch(index, stats)

    rows = data if subset is None else subset.of(data)
    return train(
        rows,
        config,
        population=population,
        on_epoch=epoch_done,
        plan=plan,
        standardiser=standardiser,
    )


def train_many(
    data: TabularData,
    configs: Sequence[TrainingConfig],
    *,
    subsets: Sequence[RowSubset | None] | None = None,
    population: TabularData | None = None,
    plans: Sequence[PrivacyPlan | None] | None = None,
    on_epoch: Callable[[int, EpochStats], None] | None = None,
    device: torch.device | str | None = None,
    max_stack: int | None = None,
    standardiser: Standardiser | None = None,
) -> list[TrainedModel]:
    """Train one model per configuration (each with its own seed) and return them in order.

    ``subsets[k]``, when given and not None, is the rows of ``data`` model k trains on (its
    record names them by the subset's ``source``); otherwise model k trains on all of
    ``data``. ``plans[k]`` reuses a privacy plan chosen earlier for model k's settings (and
    model k follows its schedule: the sampling rate and steps planned for ``plans[k].records``
    records, whatever the number of its rows).
    ``on_epoch(k, stats)`` is called after every epoch of model k. ``device``, when given,
    replaces every configuration's ``device``: where the stacks live (the random draws are
    made on the CPU, so they are the same on every device). ``max_stack``
    bounds the models stepped together (default: as many as fit in half the memory
    available). ``standardiser``, when given, is every model's (see
    :func:`~epsstar.training.trainer.train`). Each model is what
    :func:`epsstar.training.trainer.train` gives for its configuration and rows (see the
    module's description).
    """
    if not configs:
        raise InvalidInputError("train_many needs at least one configuration. Found 0.")
    if device is not None:
        configs = [dataclasses.replace(c, device=str(device)) for c in configs]
    chosen = [None] * len(configs) if subsets is None else list(subsets)
    if len(chosen) != len(configs):
        raise InvalidInputError(
            f"subsets must hold one entry per configuration ({len(configs)}). Found {len(chosen)}."
        )
    sizes = [data.n_records if s is None else int(s.rows.size) for s in chosen]
    for config, size in zip(configs, sizes, strict=True):
        config.validate(size)
        check_memory(config, data)
    check_population(data, population)
    for config in configs:
        if standardiser is None:
            config.standardisation(population is not None)
    if max_stack is not None and max_stack < 1:
        raise InvalidInputError(f"max_stack must be a positive integer. Found {max_stack}.")
    every_plan = _plans(configs, sizes, plans)
    scheduled = [
        size if plan is None else plan.records for plan, size in zip(every_plan, sizes, strict=True)
    ]
    trained: list[TrainedModel | None] = [None] * len(configs)
    for indices in _stacks(configs, scheduled, max_stack, data):
        if len(indices) == 1:
            k = indices[0]
            trained[k] = _train_alone(
                k, configs[k], every_plan[k], data, chosen[k], population, standardiser, on_epoch
            )
            continue
        fits: dict[tuple[str, int | None], Standardiser] = {}
        members = [
            _member(k, configs[k], every_plan[k], data, chosen[k], population, standardiser, fits)
            for k in indices
        ]
        for member, model in zip(
            members, _train_stack(data, members, population, chosen, on_epoch), strict=True
        ):
            trained[member.index] = model
    return [model for model in trained if model is not None]
