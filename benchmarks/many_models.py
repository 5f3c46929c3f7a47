"""K Adult-size MLPs trained as one batched computation, against K runs one after another.

Data: the UCI Adult training file shipped with epsstar (32,561 records, 108 one-hot and
numeric features), a 3×100 MLP, DP-SGD with σ = 1, C = 1, expected batch B (Poisson),
learning rate 0.01, momentum 0.9, for E epochs; or the same without privacy. For
K ∈ {1, 8, 32} (``--models``), side by side in one run:

* ``batched``    — :func:`epsstar.training.batched.train_many`: the K models stepped
  together on stacked weights (one batched matrix product per layer);
* ``sequential`` — :func:`epsstar.training.trainer.train` called K times (the same K
  models: a test checks they agree to float32 rounding);
* ``opacus``     — opacus' ``PrivacyEngine`` (default ``hooks`` mode, Poisson batches drawn
  by its own data loader), the same MLP and settings, trained K times (DP-SGD only; skipped
  when opacus is not installed).

Seconds are the wall time of the whole call (training, then each model's export and its
accuracy on the training data), with the privacy plan computed once beforehand, and for the
batched trainer also of its training alone (the stacked steps, as each model's record gives
it); the least of ``--repeats`` calls. Runs of more than ``--measure-max`` models one after
another are not run but estimated as K × the mean seconds of the runs measured, and marked
``*``.

Then the arithmetic floor of the largest K's DP-SGD training, measured in the same run: the
multiply-adds of one step counted from its shapes (forward, backward to the layers'
outputs, per-example norms and clip scaling, the clipped weight-gradient products), this
machine's rate for those matrix shapes (``torch.bmm`` timed at ``--threads``), the floor
in seconds (the run's steps at that rate), the training's CPU seconds over it, and last
``32 models / arithmetic floor: R×``: the batched training's wall seconds over the floor.

Run:  PYTHONPATH=. python benchmarks/many_models.py  [--epochs 1 --batch-size 256 --threads 1]
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import math
import statistics
import time
import warnings
from collections.abc import Callable

import torch
from torch import nn

from epsstar.training.batched import train_many
from epsstar.training.data import datasets
from epsstar.training.data.tables import TabularData
from epsstar.training.models import MLP
from epsstar.training.results import EpochStats
from epsstar.training.trainer import PrivacyPlan, TrainingConfig, plan_privacy, train

HIDDEN = (100, 100, 100)


def adult_table() -> TabularData:
    adult = datasets.adult()
    return TabularData(
        features=adult.train_features,
        labels=adult.train_labels,
        feature_names=tuple(adult.feature_names),
        classes=("<=50K", ">50K"),
        label_column="income",
        source="adult.data",
    )


def opacus_run(data: TabularData, config: TrainingConfig, sigma: float) -> float:
    """Seconds of one opacus DP-SGD run like ``config`` (binary logit, BCE loss)."""
    from opacus import PrivacyEngine
    from torch.utils.data import DataLoader, TensorDataset

    start = time.perf_counter()
    generator = torch.Generator().manual_seed(config.seed)
    x = torch.as_tensor(data.features, dtype=torch.float32)
    x = (x - x.mean(0)) / x.std(0).clamp_min(1e-12)
    y = torch.as_tensor(data.labels, dtype=torch.float32).unsqueeze(1)
    network = MLP(data.n_features, 1, config.hidden, generator=generator)
    layers: list[nn.Module] = []
    for index, linear in enumerate(network.linears):
        layers += [linear] if index == len(network.linears) - 1 else [linear, nn.ReLU()]
    model = nn.Sequential(*layers)
    optimiser = torch.optim.SGD(model.parameters(), lr=config.lr, momentum=config.momentum)
    loader = DataLoader(TensorDataset(x, y), batch_size=config.batch_size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        engine = PrivacyEngine(accountant="prv")
        model, optimiser, loader = engine.make_private(
            module=model,
            optimizer=optimiser,
            data_loader=loader,
            noise_multiplier=sigma,
            max_grad_norm=config.clip,
            poisson_sampling=True,
        )
        loss = nn.BCEWithLogitsLoss()
        for _ in range(config.epochs):
            for features, labels in loader:
                optimiser.zero_grad(set_to_none=True)
                if len(features):
                    loss(model(features), labels).backward()
                optimiser.step()
    return time.perf_counter() - start


def timed(function: Callable[..., object], *args: object, **kwargs: object) -> float:
    start = time.perf_counter()
    function(*args, **kwargs)
    return time.perf_counter() - start


@dataclasses.dataclass(frozen=True)
class Row:
    batched: float
    training: float
    training_cpu: float
    sequential: float
    opacus: float | None
    estimated: bool


def batched_run(
    data: TabularData, configs: list[TrainingConfig], plan: PrivacyPlan | None
) -> tuple[float, float, float]:
    """Seconds of one ``train_many`` call; of its training alone (the stacked steps: the wall
    time every model's record gives, before its export and its accuracy); and the CPU
    seconds of every thread of the process from the call to the end of the last epoch."""
    trained: list[float] = []

    def epoch_done(index: int, stats: EpochStats) -> None:
        if stats.epoch == stats.epochs and not trained:
            trained.append(time.process_time())

    start, cpu = time.perf_counter(), time.process_time()
    models = train_many(data, configs, plans=[plan] * len(configs), on_epoch=epoch_done)
    seconds = time.perf_counter() - start
    return seconds, models[0].result.wall_time_seconds, trained[0] - cpu


def measure(
    data: TabularData,
    configs: list[TrainingConfig],
    plan: PrivacyPlan | None,
    args: argparse.Namespace,
) -> Row:
    """Seconds of the K models batched (the least of ``--repeats`` calls, and of their
    training), one after another, and with opacus."""
    k = len(configs)
    runs = [batched_run(data, configs, plan) for _ in range(args.repeats)]
    some = configs[: args.measure_max]
    sequential = statistics.fmean([timed(train, data, c, plan=plan) for c in some]) * k
    opacus = None
    if plan is not None and not args.skip_opacus:
        opacus = statistics.fmean([opacus_run(data, c, plan.noise_multiplier) for c in some]) * k
    return Row(
        batched=min(run[0] for run in runs),
        training=min(run[1] for run in runs),
        training_cpu=min(run[2] for run in runs),
        sequential=sequential,
        opacus=opacus,
        estimated=len(some) < k,
    )


@dataclasses.dataclass(frozen=True)
class Product:
    """One batched matrix product of a step of K models: K × (rows × inner)(inner × cols)."""

    name: str
    rows: int
    inner: int
    cols: int

    def multiply_adds(self, k: int) -> int:
        return k * self.rows * self.inner * self.cols


def step_products(batch: int, widths: list[int]) -> list[Product]:
    """The matrix products of one DP-SGD step of the MLP of ``widths`` on ``batch`` examples:
    each layer's forward product, the backward products to the outputs of every layer but
    the last (the input needs none), and each layer's clipped weight-gradient product
    Aᵀ(c ⊙ G)."""
    layers = list(itertools.pairwise(widths))
    forward = [
        Product(f"forward {i}", batch, n_in, n_out) for i, (n_in, n_out) in enumerate(layers)
    ]
    backward = [
        Product(f"backward {i}", batch, n_out, n_in)
        for i, (n_in, n_out) in enumerate(layers)
        if i > 0
    ]
    weights = [
        Product(f"weights {i}", n_in, batch, n_out) for i, (n_in, n_out) in enumerate(layers)
    ]
    return forward + backward + weights


def norm_multiply_adds(k: int, batch: int, widths: list[int]) -> int:
    """The per-example squared norms: ‖g_l‖² and ‖a_l‖² of every layer, and the clip
    factors' scaling of every layer's output gradient."""
    layers = list(itertools.pairwise(widths))
    return k * batch * sum(n_in + 2 * n_out for n_in, n_out in layers)


def product_seconds(k: int, product: Product, repeats: int = 5, calls: int = 20) -> float:
    """The least seconds of ``torch.bmm`` at ``product``'s shape for K models, in whichever
    orientation (X·Y, or (Yᵀ·Xᵀ)ᵀ) this machine runs faster, contiguous operands."""
    best = math.inf
    for rows, inner, cols in (
        (product.rows, product.inner, product.cols),
        (product.cols, product.inner, product.rows),
    ):
        x = torch.randn(k, rows, inner)
        y = torch.randn(k, inner, cols)
        out = torch.empty(k, rows, cols)
        torch.bmm(x, y, out=out)
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(calls):
                torch.bmm(x, y, out=out)
            best = min(best, (time.perf_counter() - start) / calls)
    return best


@dataclasses.dataclass(frozen=True)
class Floor:
    """The arithmetic of one DP-SGD step of K models, its time at the measured rates of its
    own matrix shapes, and the steps of the run."""

    products: int
    norms: int
    step_seconds: float
    steps: int

    @property
    def rate(self) -> float:
        return self.products / self.step_seconds

    @property
    def seconds(self) -> float:
        """The run's multiply-adds at the measured rate: the floor no trainer gets below."""
        return self.steps * (self.products + self.norms) / self.rate


def arithmetic_floor(k: int, batch: int, widths: list[int], steps: int) -> Floor:
    products = step_products(batch, widths)
    return Floor(
        products=sum(p.multiply_adds(k) for p in products),
        norms=norm_multiply_adds(k, batch, widths),
        step_seconds=sum(product_seconds(k, p) for p in products),
        steps=steps,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="1,8,32", help="values of K (default 1,8,32)")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument(
        "--measure-max",
        type=int,
        default=8,
        help="most models run one after another per K; more are estimated (default 8)",
    )
    parser.add_argument(
        "--repeats", type=int, default=3, help="batched calls per K, the least kept (default 3)"
    )
    parser.add_argument("--skip-opacus", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    counts = [int(k) for k in args.models.split(",")]
    data = adult_table()
    private = TrainingConfig(
        epochs=args.epochs,
        batch_size=args.batch_size,
        hidden=HIDDEN,
        noise_multiplier=1.0,
        standardise_on="data",
    )
    plain = dataclasses.replace(private, noise_multiplier=None)
    try:
        import opacus  # noqa: F401
    except ImportError:
        args.skip_opacus = True
    print(
        f"data: Adult, {data.n_records} x {data.n_features}, MLP {HIDDEN}, expected batch "
        f"{args.batch_size}, {args.epochs} epoch(s), sigma = 1, C = 1; torch "
        f"{torch.__version__}, {args.threads} thread(s)"
    )
    print(
        f"{'trainer':<8} {'K':>3} {'batched s':>10} {'training s':>11} {'sequential s':>13} "
        f"{'opacus s':>10}  {'seq/batched':>11} {'batched K/1':>11}"
    )
    # warm-up on the whole table: the first run in a process pays for torch's first kernel
    # calls and for growing its memory to this size, which would be charged to whichever
    # column is measured first (K = 1 batched: 2.0 s against 1.2 s for the same run)
    train_many(data, [private, private])
    train(data, private)
    ratio = training = training_cpu = math.nan
    for name, config in (("DP-SGD", private), ("non-DP", plain)):
        plan = plan_privacy(config, data.n_records)
        first = math.nan
        for k in counts:
            row = measure(data, [dataclasses.replace(config, seed=s) for s in range(k)], plan, args)
            first = row.batched if math.isnan(first) else first
            mark = "*" if row.estimated else " "
            shown = "-" if row.opacus is None else f"{row.opacus:.1f}{mark}"
            print(
                f"{name:<8} {k:>3} {row.batched:>10.1f} {row.training:>11.2f} "
                f"{row.sequential:>12.1f}{mark} {shown:>10}  "
                f"{row.sequential / row.batched:>10.2f}x {row.batched / first:>10.2f}x"
            )
            if config.private:
                ratio, training, training_cpu = row.batched / first, row.training, row.training_cpu
    k = counts[-1]
    dp_plan = plan_privacy(private, data.n_records)
    assert dp_plan is not None
    expected = round(dp_plan.expected_batch_size)
    floor = arithmetic_floor(
        k, expected, [data.n_features, *HIDDEN, 1], dp_plan.steps_per_epoch * args.epochs
    )
    print(
        f"multiply-adds of one DP-SGD step of {k} models at the expected batch of {expected}: "
        f"{(floor.products + floor.norms) / 1e6:.0f} M (matrix products "
        f"{floor.products / 1e6:.0f} M, per-example norms and clip scaling "
        f"{floor.norms / 1e6:.1f} M)"
    )
    print(
        f"this machine's rate at the step's product shapes, {args.threads} thread(s), measured "
        f"now: {floor.rate / 1e9:.1f} G multiply-adds/s ({floor.step_seconds * 1e3:.1f} ms a step)"
    )
    print(
        f"arithmetic floor of the {floor.steps} steps: {floor.seconds:.2f} s; the {k} models' "
        f"training took {training:.2f} s (the whole call {ratio:.2f}x the 1-model call)"
    )
    print(
        f"CPU seconds of the training, every thread (the draws' helper thread too): "
        f"{training_cpu:.2f} s = {training_cpu / floor.seconds:.2f}× the floor"
    )
    print(f"{k} models / arithmetic floor: {training / floor.seconds:.2f}×")


if __name__ == "__main__":
    main()
