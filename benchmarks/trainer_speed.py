"""Speed of the DP-SGD trainer against opacus and against non-private PyTorch training.

Same data (generated Purchase-100-like: 600 binary features, 100 classes), same
3×100 MLP and initial weights, same Poisson-sampled batches (expected size B),
same σ, C, lr, momentum and number of steps for every contender:

* ``epsstar``            — our exact clipping (‖a‖·‖g‖ per Linear layer, one matmul);
* ``epsstar vmap``       — the same loop with torch.func vmap per-example gradients;
* ``opacus <mode>``      — opacus ``PrivacyEngine`` in its default mode (``hooks``) and
  in every other mode that supports the model (``functorch``, ``ew``, ``ghost``);
* ``non-private``        — plain PyTorch: mean loss, ``backward``, SGD with momentum.

All contenders are fed the same pre-drawn index batches (opacus's own Poisson
data loader is only used to configure the engine), so the table measures the
gradient computation and the optimiser step, not data loading. Seconds per
epoch are the median over the measured epochs after one warm-up epoch.

Run:  PYTHONPATH=. python benchmarks/trainer_speed.py  [--records 10240 --epochs 4 --threads 1]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from epsstar.training.clipping import clipped_gradient_sum_vmap
from epsstar.training.data import datasets
from epsstar.training.models import MLP
from epsstar.training.trainer import noisy_gradient

HIDDEN = (100, 100, 100)


@dataclass
class Outcome:
    name: str
    seconds_per_epoch: float
    accuracy: float


def purchase_like(n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Purchase-100-like records (``epsstar.training.data.datasets.purchase_like``),
    standardised."""
    data = datasets.purchase_like(n, seed=seed)
    features = data.features.astype(np.float32)
    features = (features - features.mean(0)) / (features.std(0) + 1e-6)
    return torch.from_numpy(features), torch.from_numpy(data.labels)


def poisson_batches(n: int, q: float, steps: int, seed: int) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return [torch.nonzero(torch.rand(n, generator=generator) < q).squeeze(1) for _ in range(steps)]


def sequential_copy(model: MLP) -> nn.Sequential:
    """The same network as an nn.Sequential (what opacus users would write)."""
    layers: list[nn.Module] = []
    for index, linear in enumerate(model.linears):
        layers.append(copy.deepcopy(linear))
        if index < len(model.linears) - 1:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        return float((model(x).argmax(1) == y).float().mean())


def timed_epochs(
    run_epoch: Callable[[list[torch.Tensor]], None], epochs: list[list[torch.Tensor]]
) -> float:
    times = []
    for batches in epochs:
        start = time.perf_counter()
        run_epoch(batches)
        times.append(time.perf_counter() - start)
    return statistics.median(times[1:]) if len(times) > 1 else times[0]


def run_epsstar(
    x: torch.Tensor,
    y: torch.Tensor,
    init: MLP,
    epochs: list[list[torch.Tensor]],
    args: argparse.Namespace,
    vmap: bool,
) -> tuple[float, nn.Module]:
    model = copy.deepcopy(init)
    optimiser = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    generator = torch.Generator().manual_seed(1)
    params = list(model.parameters())
    normaliser = args.batch_size

    def run_epoch(batches: list[torch.Tensor]) -> None:
        for index in batches:
            if vmap:
                total = clipped_gradient_sum_vmap(model, x[index], y[index], False, args.clip)
                with torch.no_grad():
                    for p, g in zip(params, total.gradients, strict=True):
                        noise = torch.randn(g.shape, generator=generator)
                        p.grad = (g + args.sigma * args.clip * noise) / normaliser
            else:
                step = noisy_gradient(
                    model,
                    x[index],
                    y[index],
                    False,
                    clip=args.clip,
                    noise_std=args.sigma * args.clip,
                    normaliser=normaliser,
                    generator=generator,
                )
                for p, g in zip(params, step.gradients, strict=True):
                    p.grad = g
            optimiser.step()

    return timed_epochs(run_epoch, epochs), model


def run_nonprivate(
    x: torch.Tensor,
    y: torch.Tensor,
    init: MLP,
    epochs: list[list[torch.Tensor]],
    args: argparse.Namespace,
) -> tuple[float, nn.Module]:
    model = sequential_copy(init)
    optimiser = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    def run_epoch(batches: list[torch.Tensor]) -> None:
        for index in batches:
            optimiser.zero_grad(set_to_none=True)
            loss_fn(model(x[index]), y[index]).backward()
            optimiser.step()

    return timed_epochs(run_epoch, epochs), model


def run_opacus(
    x: torch.Tensor,
    y: torch.Tensor,
    init: MLP,
    epochs: list[list[torch.Tensor]],
    args: argparse.Namespace,
    mode: str,
) -> tuple[float, nn.Module]:
    from opacus import PrivacyEngine
    from torch.utils.data import DataLoader, TensorDataset

    model = sequential_copy(init)
    optimiser = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loader = DataLoader(TensorDataset(x, y), batch_size=args.batch_size)
    engine = PrivacyEngine(accountant="prv")
    criterion = nn.CrossEntropyLoss()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        made = engine.make_private(
            module=model,
            optimizer=optimiser,
            data_loader=loader,
            criterion=criterion,
            noise_multiplier=args.sigma,
            max_grad_norm=args.clip,
            poisson_sampling=True,
            grad_sample_mode=mode,
        )
    if mode == "ghost":
        private_model, private_optimiser, criterion, _ = made
    else:
        private_model, private_optimiser, _ = made

    def run_epoch(batches: list[torch.Tensor]) -> None:
        for index in batches:
            private_optimiser.zero_grad(set_to_none=True)
            loss = criterion(private_model(x[index]), y[index])
            loss.backward()
            private_optimiser.step()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seconds = timed_epochs(run_epoch, epochs)
    return seconds, model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10240)
    parser.add_argument("--test-records", type=int, default=2560)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--epochs", type=int, default=4, help="measured epochs (+1 warm-up)")
    parser.add_argument("--sigma", type=float, default=1.0)
    parser.add_argument("--clip", type=float, default=1.0)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument(
        "--modes",
        default="hooks,functorch,ew,ghost",
        help="opacus grad_sample_mode values to try; the first is the default",
    )
    parser.add_argument(
        "--threads", type=int, help="torch intra-op threads (default: torch's, one per core)"
    )
    args = parser.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)

    torch.manual_seed(0)
    x_all, y_all = purchase_like(args.records + args.test_records)
    x, y = x_all[: args.records], y_all[: args.records]
    x_test, y_test = x_all[args.records :], y_all[args.records :]
    q = args.batch_size / args.records
    per_epoch = round(1 / q)
    batches = poisson_batches(args.records, q, per_epoch * (args.epochs + 1), seed=3)
    epochs = [batches[i * per_epoch : (i + 1) * per_epoch] for i in range(args.epochs + 1)]
    init = MLP(x.shape[1], 100, HIDDEN, generator=torch.Generator().manual_seed(0))

    print(
        f"data: {args.records} x {x.shape[1]} (100 classes), MLP {HIDDEN}, expected batch "
        f"{args.batch_size} (q = {q:.4g}, {per_epoch} steps/epoch), sigma = {args.sigma}, "
        f"C = {args.clip}, lr = {args.lr}, momentum 0.9; torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads; {args.epochs} measured epochs + 1 warm-up"
    )
    results: list[Outcome] = []

    def record(name: str, seconds: float, model: nn.Module) -> None:
        results.append(Outcome(name, seconds, accuracy(model, x_test, y_test)))
        print(f"  {name:<20} {seconds:8.3f} s/epoch", flush=True)

    seconds, model = run_nonprivate(x, y, init, epochs, args)
    record("non-private", seconds, model)
    seconds, model = run_epsstar(x, y, init, epochs, args, vmap=False)
    record("epsstar", seconds, model)
    seconds, model = run_epsstar(x, y, init, epochs, args, vmap=True)
    record("epsstar vmap", seconds, model)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    for mode in modes:
        try:
            seconds, model = run_opacus(x, y, init, epochs, args, mode)
        except Exception as error:  # a mode that does not support the model
            print(f"  opacus {mode}: unsupported ({type(error).__name__}: {error})")
            continue
        record(f"opacus {mode}" + (" (default)" if mode == modes[0] else ""), seconds, model)

    base = results[0].seconds_per_epoch
    ours = next(r for r in results if r.name == "epsstar").seconds_per_epoch
    opacus_runs = [r for r in results if r.name.startswith("opacus")]
    print()
    print("| trainer | s / epoch | × non-private | opacus default ÷ this | test accuracy |")
    print("|---|---:|---:|---:|---:|")
    default = next((r for r in opacus_runs if "default" in r.name), None)
    for r in results:
        ratio = "" if default is None else f"{default.seconds_per_epoch / r.seconds_per_epoch:.1f}"
        print(
            f"| {r.name} | {r.seconds_per_epoch:.3f} | {r.seconds_per_epoch / base:.2f} | "
            f"{ratio} | {r.accuracy:.3f} |"
        )
    if default is not None:
        fastest = min(opacus_runs, key=lambda r: r.seconds_per_epoch)
        print()
        print(
            f"epsstar vs non-private: {ours / base:.2f}x the time; "
            f"opacus default / epsstar: {default.seconds_per_epoch / ours:.1f}x; "
            f"fastest opacus ({fastest.name}) / epsstar: {fastest.seconds_per_epoch / ours:.1f}x"
        )
    print(f"epsstar DP-SGD / non-private: {ours / base:.2f}×")


if __name__ == "__main__":
    main()
