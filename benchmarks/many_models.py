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
accuracy on the training data), with the privacy plan computed once beforehand. Runs of
more than ``--measure-max`` models one after another are not run but estimated as K × the
mean seconds of the runs measured, and marked ``*``. The last line is the batched
DP-SGD trainer's ``32 models / 1 model: R×`` (the largest K over K = 1).

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
    sequential: float
    opacus: float | None
    estimated: bool


def measure(
    data: TabularData,
    configs: list[TrainingConfig],
    plan: PrivacyPlan | None,
    args: argparse.Namespace,
) -> Row:
    """Seconds of the K models batched, one after another, and with opacus."""
    k = len(configs)
    plans = [plan] * k
    batched = timed(train_many, data, configs, plans=plans)
    some = configs[: args.measure_max]
    sequential = statistics.fmean([timed(train, data, c, plan=plan) for c in some]) * k
    opacus = None
    if plan is not None and not args.skip_opacus:
        opacus = statistics.fmean([opacus_run(data, c, plan.noise_multiplier) for c in some]) * k
    return Row(batched, sequential, opacus, estimated=len(some) < k)


def multiply_adds_per_model(n_features: int, records: int, epochs: int) -> float:
    """Multiply-adds one DP-SGD model of ``HIDDEN`` costs: per sampled example (on average
    ``records`` per epoch) the forward pass, the output gradients of every layer above the
    first and the weight gradients; then one forward pass over the training records (its
    accuracy)."""
    widths = [n_features, *HIDDEN, 1]
    layers = [a * b for a, b in itertools.pairwise(widths)]
    per_example = sum(layers) + sum(layers[1:]) + sum(layers)
    return float(per_example * records * epochs + sum(layers) * records)


def product_rate(k: int, batch: int, n_features: int) -> float:
    """Multiply-adds per second of this machine's batched float32 products at the stacked
    step's shapes (K models, the padded batch, the first and a hidden layer), best of 5."""
    hidden = HIDDEN[0]
    a = torch.randn(k, batch, n_features)
    w = torch.randn(k, n_features, hidden)
    h = torch.randn(k, batch, hidden)
    v = torch.randn(k, hidden, hidden)
    work = k * batch * hidden * (n_features + hidden)
    best = math.inf
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(20):
            torch.bmm(a, w)
            torch.bmm(h, v)
        best = min(best, (time.perf_counter() - start) / 20)
    return work / best


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
        f"{'trainer':<8} {'K':>3} {'batched s':>10} {'sequential s':>13} {'opacus s':>10}"
        f"  {'seq/batched':>11} {'batched K/1':>11}"
    )
    # warm-up on the whole table: the first run in a process pays for torch's first kernel
    # calls and for growing its memory to this size, which would be charged to whichever
    # column is measured first (K = 1 batched: 2.0 s against 1.2 s for the same run)
    train_many(data, [private, private])
    train(data, private)
    ratio = one = math.nan
    for name, config in (("DP-SGD", private), ("non-DP", plain)):
        plan = plan_privacy(config, data.n_records)
        first = math.nan
        for k in counts:
            row = measure(data, [dataclasses.replace(config, seed=s) for s in range(k)], plan, args)
            first = row.batched if math.isnan(first) else first
            mark = "*" if row.estimated else " "
            shown = "-" if row.opacus is None else f"{row.opacus:.1f}{mark}"
            print(
                f"{name:<8} {k:>3} {row.batched:>10.1f} {row.sequential:>12.1f}{mark} "
                f"{shown:>10}  {row.sequential / row.batched:>10.2f}x "
                f"{row.batched / first:>10.2f}x"
            )
            if config.private:
                ratio, one = row.batched / first, first
    rate = product_rate(counts[-1], round(args.batch_size * 1.13), data.n_features)
    floor = counts[-1] * multiply_adds_per_model(data.n_features, data.n_records, args.epochs)
    print(
        f"arithmetic floor: {counts[-1]} models need {floor / 1e9:.0f} G multiply-adds; at this "
        f"machine's batched-product rate ({rate / 1e9:.1f} G/s, measured now) that is "
        f"{floor / rate:.1f} s = {floor / rate / one:.2f}× the batched 1-model run"
    )
    print(f"{counts[-1]} models / 1 model: {ratio:.2f}×")


if __name__ == "__main__":
    main()
