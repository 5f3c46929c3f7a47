"""Where a DP-SGD step's time goes beyond a non-private step's, and what drawing its noise on
a helper thread would buy.

The model, data and batches are those of ``benchmarks/trainer_speed.py`` (Purchase-100-like
records, the 3×100 MLP, Poisson batches of expected size 256). Every variant runs the same
batches; the rounds alternate between variants, and the table gives the median and the
smallest milliseconds per step over the rounds:

* ``non-private step``  — mean loss, ``backward``, SGD with momentum (the benchmark's baseline);
* ``DP-SGD step``       — :func:`epsstar.training.trainer.noisy_gradient`, then the same SGD;
* ``DP-SGD, noise on a helper thread`` — the same arithmetic, with the step's
  ``torch.randn`` calls made on one helper thread while the clipped sum is computed (the same
  generator, the same calls in the same order: the weights are checked to be equal);
* ``clipped sum`` / ``gradient sum`` — :func:`~epsstar.training.clipping.clipped_gradient_sum`
  against :func:`~epsstar.training.clipping.gradient_sum`, the backward pass without the
  optimiser (their difference is what the norms and clip factors cost);
* ``noise draws`` — the step's 90,400 ``torch.randn`` draws alone, and ``uniform draws`` the
  same count of ``torch.rand``: what the generator costs before the normal transform; the
  same count of float32 normal draws from numpy's PCG64 and Philox generators.

Run:  PYTHONPATH=. python benchmarks/trainer_step_parts.py  [--threads 1 --rounds 10 --steps 200]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))

from trainer_speed import HIDDEN, poisson_batches, purchase_like, sequential_copy

from epsstar.cli.common.text_table import aligned_table
from epsstar.training.clipping import clipped_gradient_sum, gradient_sum
from epsstar.training.models import MLP
from epsstar.training.trainer import noisy_gradient

Step = Callable[[torch.Tensor], object]


def dp_steps(
    init: MLP, x: torch.Tensor, y: torch.Tensor, args: argparse.Namespace, helper: bool
) -> tuple[Step, MLP]:
    """One DP-SGD step of a fresh copy of ``init``; with ``helper`` its noise is drawn on a
    helper thread while the clipped sum is computed, otherwise by ``noisy_gradient``."""
    model = copy.deepcopy(init)
    params = list(model.parameters())
    optimiser = torch.optim.SGD(params, lr=args.lr, momentum=0.9)
    generator = torch.Generator().manual_seed(1)
    shapes = [p.shape for p in params]
    pool = ThreadPoolExecutor(1)
    std = args.sigma * args.clip

    def draw() -> list[torch.Tensor]:
        return [torch.randn(shape, generator=generator) for shape in shapes]

    def step(index: torch.Tensor) -> None:
        if helper:
            pending = pool.submit(draw)
            total = clipped_gradient_sum(model, x[index], y[index], False, args.clip)
            with torch.no_grad():
                for summed, noise in zip(total.gradients, pending.result(), strict=True):
                    summed.add_(noise.mul_(std)).div_(args.batch_size)
            gradients = total.gradients
        else:
            gradients = noisy_gradient(
                model,
                x[index],
                y[index],
                False,
                clip=args.clip,
                noise_std=std,
                normaliser=args.batch_size,
                generator=generator,
            ).gradients
        for p, g in zip(params, gradients, strict=True):
            p.grad = g
        optimiser.step()

    return step, model


def nonprivate_step(init: MLP, x: torch.Tensor, y: torch.Tensor, lr: float) -> Step:
    model = sequential_copy(init)
    optimiser = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    def step(index: torch.Tensor) -> None:
        optimiser.zero_grad(set_to_none=True)
        loss_fn(model(x[index]), y[index]).backward()
        optimiser.step()

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10240)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--steps", type=int, default=200, help="steps per round")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--sigma", type=float, default=1.0)
    parser.add_argument("--clip", type=float, default=1.0)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--threads", type=int, help="torch intra-op threads (default: torch's)")
    args = parser.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    x, y = purchase_like(args.records)
    init = MLP(x.shape[1], 100, HIDDEN, generator=torch.Generator().manual_seed(0))
    batches = poisson_batches(args.records, args.batch_size / args.records, args.steps, seed=3)
    shapes = [p.shape for p in init.parameters()]
    draws = sum(shape.numel() for shape in shapes)
    generator = torch.Generator().manual_seed(2)
    pcg = np.random.Generator(np.random.PCG64(2))
    philox = np.random.Generator(np.random.Philox(2))
    dp_step, dp_model = dp_steps(init, x, y, args, helper=False)
    helper_step, helper_model = dp_steps(init, x, y, args, helper=True)
    frozen = copy.deepcopy(init)
    variants: dict[str, Step] = {
        "non-private step": nonprivate_step(init, x, y, args.lr),
        "DP-SGD step": dp_step,
        "DP-SGD, noise on a helper thread": helper_step,
        "clipped sum": lambda i: clipped_gradient_sum(frozen, x[i], y[i], False, args.clip),
        "gradient sum": lambda i: gradient_sum(frozen, x[i], y[i], False),
        f"noise draws ({draws:,})": lambda i: [torch.randn(s, generator=generator) for s in shapes],
        f"uniform draws ({draws:,})": lambda i: torch.rand(draws, generator=generator),
        "numpy PCG64 normal draws": lambda i: pcg.standard_normal(draws, dtype=np.float32),
        "numpy Philox normal draws": lambda i: philox.standard_normal(draws, dtype=np.float32),
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, step in variants.items():
            start = time.perf_counter()
            for index in batches:
                step(index)
            times[name].append((time.perf_counter() - start) / len(batches) * 1e3)
    same = all(
        torch.equal(a, b)
        for a, b in zip(dp_model.parameters(), helper_model.parameters(), strict=True)
    )
    base = statistics.median(times["non-private step"])
    print(
        f"{torch.get_num_threads()} torch threads; {args.rounds} rounds of {args.steps} steps; "
        f"expected batch {args.batch_size}; torch {torch.__version__}"
    )
    whole_steps = list(variants)[:3]
    rows = [
        [
            name,
            f"{statistics.median(t):.3f}",
            f"{min(t):.3f}",
            f"{statistics.median(t) / base:.2f}" if name in whole_steps else "",
        ]
        for name, t in times.items()
    ]
    header = ["per step", "median ms", "min ms", "× non-private"]
    print(aligned_table([header, *rows], left_columns=1))
    print(f"helper-thread weights equal the step's: {'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
