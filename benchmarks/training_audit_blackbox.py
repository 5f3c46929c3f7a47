"""Black-box audits of trainers written outside epsstar, under each guessing rule.

The trainers below are plain torch (and one scikit-learn network), written here and not with
epsstar's trainer; ``epsstar audit-training --function training_audit_blackbox:fit`` audits
them as a user would audit their own code (the same trainer through ``--command`` in one row,
to show that the two agree). Each row is repeated with the audit's ``--seed`` 0, 1, ... (other
canaries, other inclusions, another training seed):

- memorisers, not private, claiming ε = 1: an MLP 8-256-256-2 trained 150 epochs with Adam
  (torch) and an MLP 8-256-256-2 of scikit-learn (150 iterations), both reaching training
  accuracy 1 on a table whose labels the features predict at best for 65 % of the records;
- DP-SGD written out in torch (per-example clipping through ``torch.func``, Poisson sampling
  at a fixed rate, Gaussian noise with σ from dp_accounting's PLD accountant for the claimed
  ε at δ, a fixed normaliser), with SGD and with Adam, at ε = 1, 2 and 4: the validity check;
- the same DP-SGD with σ calibrated for ten times its data (the sampling rate divided by 10
  in the accountant only);
- DP-SGD with its full noise but broken clipping: the noisy sum of unclipped gradients
  clipped afterwards, and one clip of the batch's mean gradient instead of each example's.

One run (1,000 population canaries, ``input``): the canaries' losses are saved in the JSON,
and every guessing rule is bounded from those same scores through the statistics functions
the audit uses (k from :func:`choose_k` for each rule's sides), so the four rules are compared
on the same canaries and the same training; the audit itself ran ``--guesses both`` and its
bound is checked to be the one recomputed. Many runs (``--runs R``: R runs with the crafted
canary and R without; a small table, full-batch steps from zero weights, a small learning
rate so that the canary's loss does not saturate): the Clopper–Pearson bound and the μ-GDP
one, exact for full-batch DP-SGD. Columns: trainer, claim, design, rule, refuted of the
repeats, mean (min, max) of the lower bound, seconds per audit.

    python benchmarks/training_audit_blackbox.py          # every row, 20 repeats (5 of one)
    python benchmarks/training_audit_blackbox.py --quick  # one repeat of a few small rows
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from epsstar.cli.main import main as epsstar_main  # noqa: E402
from epsstar.statistics.auditing.one_run.choose_k import choose_k  # noqa: E402
from epsstar.statistics.auditing.one_run.guess_rules import (  # noqa: E402
    audit_guess_rule,
    rule_sides,
)
from epsstar.statistics.names import GUESS_RULES  # noqa: E402

#: The environment variable that carries a row's trainer (its JSON) to ``fit``.
TRAINER_VARIABLE = "BLACKBOX_TRAINER"
DELTA = 1e-5
FEATURES = 8
#: The label is the sign of the first feature plus noise of this scale: the best rule is right
#: for 65 % of the records (0.5 + arctan(1/2)/π).
LABEL_NOISE = 2.0
#: Records of --train (one run); half the canaries join them in each run.
TRAIN_RECORDS = 500
POPULATION_RECORDS = 3000
CANARIES = 1000
#: The records one run's trainer plans its sampling rate on: --train and half the canaries.
PLANNED_RECORDS = TRAIN_RECORDS + CANARIES // 2
#: Records of --train in the many-run design (the crafted canary joins them in half the runs).
SMALL_TRAIN_RECORDS = 20
CLIP = 1.0

#: The many-run bounds the table shows, by the JSON's method name: the one that holds for every
#: trainer, and the μ-GDP one, exact for full-batch DP-SGD (a composition of Gaussian steps).
MANY_RUN_BOUNDS = {
    "clopper_pearson": "(many runs) (ε, δ)",
    "gdp_clopper_pearson": "(many runs) μ-GDP",
}

Kind = Literal["memorise", "memorise-sklearn", "dp-sgd"]
Breakage = Literal["none", "clip-after-noise", "clip-batch-mean"]


@dataclass(frozen=True)
class Trainer:
    """One trainer's settings, passed to :func:`fit` through the environment."""

    kind: Kind
    hidden: tuple[int, ...] = ()
    epochs: int = 0
    optimizer: Literal["sgd", "adam"] = "sgd"
    lr: float = 0.1
    #: DP-SGD: noise multiplier, Poisson sampling rate, steps, normaliser (expected batch).
    sigma: float = 0.0
    rate: float = 1.0
    steps: int = 0
    batch: float = 1.0
    breakage: Breakage = "none"
    zero_init: bool = False


def _read(train_path: str) -> tuple[Any, Any]:
    import torch

    frame = pd.read_csv(train_path)
    x = torch.tensor(frame.drop(columns="label").to_numpy(), dtype=torch.float32)
    return x, torch.tensor(frame["label"].to_numpy(), dtype=torch.long)


def _network(hidden: tuple[int, ...], zero_init: bool) -> Any:
    import torch

    layers: list[Any] = []
    width = FEATURES
    for size in hidden:
        layers += [torch.nn.Linear(width, size), torch.nn.ReLU()]
        width = size
    layers.append(torch.nn.Linear(width, 2))
    model = torch.nn.Sequential(*layers)
    if zero_init:
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.zero_()
    return model


def _memorise(model: Any, x: Any, y: Any, trainer: Trainer, generator: Any) -> None:
    import torch

    optimizer = torch.optim.Adam(model.parameters(), lr=trainer.lr)
    for _ in range(trainer.epochs):
        order: Any = torch.randperm(len(x), generator=generator)
        for batch in order.split(64):
            optimizer.zero_grad()
            loss: Any = torch.nn.functional.cross_entropy(model(x[batch]), y[batch])
            loss.backward()
            optimizer.step()


def _clipped(vector: Any, bound: float) -> Any:
    import torch

    return vector * torch.clamp(bound / (vector.norm() + 1e-12), max=1.0)


def _dp_sgd(model: Any, x: Any, y: Any, trainer: Trainer, generator: Any) -> None:
    """DP-SGD: per-example clipping, Poisson sampling at ``rate``, Gaussian noise σ·C on the
    clipped sum, divided by the fixed expected batch; or one of the two clipping bugs."""
    import torch
    from torch.func import functional_call, grad, vmap

    names = [name for name, _ in model.named_parameters()]
    shapes = [parameter.shape for _, parameter in model.named_parameters()]
    sizes = [parameter.numel() for _, parameter in model.named_parameters()]

    def loss(params: dict[str, Any], xi: Any, yi: Any) -> Any:
        out = functional_call(model, params, (xi.unsqueeze(0),))
        return torch.nn.functional.cross_entropy(out, yi.unsqueeze(0))

    by_vmap = vmap(grad(loss), in_dims=(None, 0, 0))

    def per_example(xs: Any, ys: Any) -> Any:
        """Each example's gradient, flattened in the order of the parameters."""
        if not trainer.hidden:  # linear: (softmax − one-hot) ⊗ x and its bias, in closed form
            weight, bias = model.parameters()
            error = torch.softmax(xs @ weight.detach().T + bias.detach(), dim=1)
            error -= torch.nn.functional.one_hot(ys, 2)
            return torch.cat([(error[:, :, None] * xs[:, None, :]).flatten(1), error], dim=1)
        grads = by_vmap({n: p.detach() for n, p in model.named_parameters()}, xs, ys)
        return torch.cat([grads[n].reshape(len(xs), -1) for n in names], dim=1)

    optimizer: torch.optim.Optimizer
    if trainer.optimizer == "adam":
        optimizer = torch.optim.Adam(model.parameters(), lr=trainer.lr)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=trainer.lr)
    total = sum(sizes)
    for _ in range(trainer.steps):
        sampled = torch.rand(len(x), generator=generator) < trainer.rate
        noise = torch.randn(total, generator=generator) * trainer.sigma * CLIP
        flat = per_example(x[sampled], y[sampled])
        if trainer.breakage == "clip-after-noise":
            step = _clipped((flat.sum(0) + noise) / trainer.batch, CLIP)
        elif trainer.breakage == "clip-batch-mean":
            mean = flat.mean(0) if len(flat) else torch.zeros(total)
            step = _clipped(mean, CLIP) + noise / trainer.batch
        else:
            norms = flat.norm(dim=1, keepdim=True)
            clipped = flat * torch.clamp(CLIP / (norms + 1e-12), max=1.0)
            step = (clipped.sum(0) + noise) / trainer.batch
        optimizer.zero_grad()
        for parameter, piece, shape in zip(
            model.parameters(), step.split(sizes), shapes, strict=True
        ):
            parameter.grad = piece.reshape(shape).clone()
        optimizer.step()


def fit(train_path: str, out_dir: str, seed: int) -> None:
    """Train the trainer that ``BLACKBOX_TRAINER`` describes on ``train_path`` and save it in
    ``out_dir``: what ``audit-training --function`` calls in each run."""
    trainer = Trainer(**json.loads(os.environ[TRAINER_VARIABLE]))
    trainer = replace(trainer, hidden=tuple(trainer.hidden))
    if trainer.kind == "memorise-sklearn":
        _fit_sklearn(train_path, Path(out_dir), seed, trainer)
        return
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    x, y = _read(train_path)
    model = _network(trainer.hidden, trainer.zero_init)
    train = _memorise if trainer.kind == "memorise" else _dp_sgd
    train(model, x, y, trainer, generator)
    torch.jit.trace(model.eval(), x[:1]).save(  # type: ignore[no-untyped-call]
        str(Path(out_dir) / "model.pt")
    )


def _fit_sklearn(train_path: str, out_dir: Path, seed: int, trainer: Trainer) -> None:
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier
    from threadpoolctl import threadpool_limits

    frame = pd.read_csv(train_path)
    model = MLPClassifier(
        hidden_layer_sizes=trainer.hidden,
        max_iter=trainer.epochs,
        alpha=0.0,
        learning_rate_init=trainer.lr,
        tol=0.0,
        n_iter_no_change=trainer.epochs,
        random_state=seed,
    )
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # 150 iterations, as designed
        model.fit(frame.drop(columns="label").to_numpy(), frame["label"].to_numpy())
    importlib.import_module("skops.io").dump(model, out_dir / "model.skops")  # no type info


@cache
def dp_sigma(epsilon: float, rate: float, steps: int) -> float:
    """σ for which ``steps`` Poisson-sampled Gaussian steps at ``rate`` are (ε, δ)-DP, from
    dp_accounting's PLD accountant."""
    import dp_accounting
    from dp_accounting import pld

    def event(sigma: float) -> Any:
        step = dp_accounting.PoissonSampledDpEvent(rate, dp_accounting.GaussianDpEvent(sigma))
        return dp_accounting.SelfComposedDpEvent(step, steps)

    return float(dp_accounting.calibrate_dp_mechanism(pld.PLDAccountant, event, epsilon, DELTA))


@cache
def dp_epsilon(sigma: float, rate: float, steps: int) -> float:
    """The PLD accountant's ε at δ of ``steps`` Poisson-sampled Gaussian steps."""
    import dp_accounting
    from dp_accounting import pld

    accountant = pld.PLDAccountant()
    step = dp_accounting.PoissonSampledDpEvent(rate, dp_accounting.GaussianDpEvent(sigma))
    accountant.compose(step, steps)
    return float(accountant.get_epsilon(DELTA))


@dataclass(frozen=True)
class Row:
    """One row of the table: a trainer, its claim and the audit's design."""

    name: str
    claim: float
    trainer: Trainer
    canaries: int = CANARIES
    runs: int = 1
    command: bool = False
    repeats: int = 20
    note: str = field(default="", compare=False)

    @property
    def design(self) -> str:
        if self.runs > 1:
            return f"{self.runs:,} runs a side, crafted"
        how = " (--command)" if self.command else ""
        return f"{self.canaries:,} canaries, input{how}"


def _one_run_dp(epsilon: float, optimizer: Literal["sgd", "adam"], **change: Any) -> Trainer:
    batch, steps = 100.0, 50
    rate = batch / PLANNED_RECORDS
    lr = 0.5 if optimizer == "sgd" else 0.01
    trainer = Trainer(
        "dp-sgd", (32,), optimizer=optimizer, lr=lr, rate=rate, steps=steps, batch=batch
    )
    return replace(replace(trainer, sigma=dp_sigma(epsilon, rate, steps)), **change)


def _many_run_dp(epsilon: float, **change: Any) -> Trainer:
    steps = 100
    trainer = Trainer(
        "dp-sgd", (), lr=0.01, rate=1.0, steps=steps, batch=float(SMALL_TRAIN_RECORDS)
    )
    return replace(replace(trainer, sigma=dp_sigma(epsilon, 1.0, steps), zero_init=True), **change)


def rows(quick: bool, design: str | None = None) -> list[Row]:
    """The rows of the table (``quick``: one repeat of a few small ones, for the test), or
    those of one ``design`` (``one-run``, ``many-runs``)."""
    if quick:
        small = Trainer("memorise", (32,), epochs=5, lr=1e-2)
        return [
            Row("memorising MLP (torch)", 1.0, small, canaries=100, repeats=1),
            Row("memorising MLP (torch)", 1.0, small, canaries=100, repeats=1, command=True),
            Row("DP-SGD, SGD", 1.0, replace(_one_run_dp(1.0, "sgd"), steps=5), 100, repeats=1),
            Row("DP-SGD, correct", 1.0, replace(_many_run_dp(1.0), steps=5), runs=24, repeats=1),
        ]  # fmt: skip
    chosen = []
    if design in (None, "one-run"):
        chosen += _one_run_rows()
    if design in (None, "many-runs"):
        chosen += _many_run_rows()
    return chosen


def _one_run_rows() -> list[Row]:
    memorise = Trainer("memorise", (256, 256), epochs=150, lr=1e-3)
    table = [
        Row("memorising MLP 8-256-256-2 (torch)", 1.0, memorise),
        Row("memorising MLP 8-256-256-2 (torch)", 1.0, memorise, repeats=3, command=True),
        Row(
            "memorising MLP 8-256-256-2 (scikit-learn)",
            1.0,
            Trainer("memorise-sklearn", (256, 256), epochs=150, lr=1e-3),
        ),
    ]
    for epsilon in (1.0, 2.0, 4.0):
        for optimizer in ("sgd", "adam"):
            table.append(Row(f"DP-SGD, {optimizer}", epsilon, _one_run_dp(epsilon, optimizer)))
    correct = _one_run_dp(1.0, "sgd")
    ten_times = dp_sigma(1.0, correct.rate / 10, correct.steps)
    table.append(Row("DP-SGD, σ for 10× the data", 1.0, replace(correct, sigma=ten_times)))
    for breakage in ("clip-after-noise", "clip-batch-mean"):
        table.append(Row(f"DP-SGD, {breakage}", 1.0, replace(correct, breakage=breakage)))
    return table


def _many_run_rows() -> list[Row]:
    correct = _many_run_dp(1.0)
    ten_times = dp_sigma(1.0, correct.rate / 10, correct.steps)
    return [
        Row("DP-SGD, σ for 10× the data", 1.0, replace(correct, sigma=ten_times), runs=250),
        # fewer repeats: 500 training runs an audit, 2–6 minutes on two shared cores
        Row("DP-SGD, correct", 1.0, correct, runs=250, repeats=5),
    ]


def write_tables(folder: Path, seed: int = 0) -> None:
    """``train.csv`` and ``population.csv`` (one run), ``small.csv`` (many runs)."""
    rng = np.random.default_rng(seed)

    def table(n: int) -> pd.DataFrame:
        x = rng.normal(size=(n, FEATURES))
        frame = pd.DataFrame(x, columns=[f"x{i}" for i in range(FEATURES)])
        frame["label"] = (x[:, 0] + LABEL_NOISE * rng.normal(size=n) > 0).astype(int)
        return frame

    table(TRAIN_RECORDS).to_csv(folder / "train.csv", index=False)
    table(POPULATION_RECORDS).to_csv(folder / "population.csv", index=False)
    table(SMALL_TRAIN_RECORDS).to_csv(folder / "small.csv", index=False)


@dataclass(frozen=True)
class Audit:
    """One audit's bounds (per rule for one run, one for many runs) and its seconds."""

    bounds: dict[str, float]
    claim: float
    seconds: float


def rule_bounds(threat: dict[str, Any], claim: float, confidence: float) -> dict[str, float]:
    """Each guessing rule's (ε, δ) bound from one run's saved scores, as the audit computes it
    (the one threat model's confidence is the audit's)."""
    scores = np.asarray(threat["scores"], dtype=float)
    included = np.asarray(threat["included"], dtype=bool)
    out: dict[str, float] = {}
    for rule in GUESS_RULES:
        k = {
            sides: choose_k(scores.size, claim, DELTA, confidence=confidence, sides=sides).k
            for sides in set(rule_sides(rule))
        }
        ruled = audit_guess_rule(
            scores,
            included,
            rule=rule,
            k=min(k.get(2, k.get(1, 1)), scores.size // 2),
            k_one_sided=min(k[1], scores.size // 2) if 1 in k else None,
            direction=threat["threat_model"]["direction"],
            delta=DELTA,
            confidence=confidence,
        )
        out[rule] = ruled.chosen.epsilon_lower
    return out


def audit(folder: Path, row: Row, seed: int) -> Audit:
    """Run ``epsstar audit-training`` on ``row`` with ``--seed seed``, in this process."""
    os.environ[TRAINER_VARIABLE] = json.dumps(asdict(row.trainer))
    out = folder / f"audit-{seed}.json"
    many = row.runs > 1
    argv = ["audit-training", "--population", str(folder / "population.csv")]
    argv += ["--train", str(folder / ("small.csv" if many else "train.csv"))]
    argv += ["--label-column", "label", "--claimed-epsilon", repr(row.claim)]
    argv += ["--delta", repr(DELTA), "--seed", str(seed), "--trust-model", "--quiet"]
    argv += ["--json", str(out), "--jobs", "1"]
    if many:
        argv += ["--runs", str(row.runs), "--threat-model", "crafted"]
    else:
        argv += ["--canaries", str(row.canaries), "--guesses", "both"]
    if row.command:
        argv += ["--command", f"{sys.executable} {Path(__file__).resolve()} --fit {{train}} "
                 "{out} {seed}"]  # fmt: skip
    else:
        argv += ["--function", f"{Path(__file__).stem}:fit"]
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):  # the audit's summary: the JSON is read
        code = epsstar_main(argv)
    seconds = time.perf_counter() - started
    if code not in (0, 1):
        raise SystemExit(f"{row.name}, seed {seed}: audit-training exited with {code}")
    document = json.loads(out.read_text("utf-8"))
    out.unlink()
    if many:
        bounds = document["threat_models"][0]["many_runs"]["bounds"]
        return Audit({MANY_RUN_BOUNDS[b["method"]]: b["epsilon_lower"] for b in bounds
                      if b["method"] in MANY_RUN_BOUNDS}, row.claim, seconds)  # fmt: skip
    threat = document["threat_models"][0]
    bounds = rule_bounds(threat, row.claim, float(document["confidence"]))
    if not np.isclose(bounds["both"], document["epsilon_lower_bound"], rtol=0, atol=1e-12):
        raise SystemExit(
            f"{row.name}, seed {seed}: recomputed 'both' {bounds['both']} differs from the "
            f"audit's {document['epsilon_lower_bound']}"
        )
    return Audit(bounds, row.claim, seconds)


def table_lines(row: Row, audits: Sequence[Audit]) -> list[str]:
    """The markdown lines of one row, a line per guessing rule."""
    seconds = float(np.mean([a.seconds for a in audits]))
    lines = []
    for rule in audits[0].bounds:
        values = np.array([a.bounds[rule] for a in audits])
        refuted = int(np.sum(values > row.claim))
        lines.append(
            f"| {row.name} | {row.claim:g} | {row.design} | {rule} "
            f"| {refuted}/{len(audits)} | {values.mean():.3f} ({values.min():.3f}, "
            f"{values.max():.3f}) | {seconds:.1f} |"
        )
    return lines


def run(
    rows_: Sequence[Row],
    repeats: int | None,
    echo: Callable[[str], None],
    first_seed: int = 0,
) -> list[str]:
    """Audit every row ``repeats`` times (its own count when None), with the audit's seeds
    from ``first_seed`` on, and return the table."""
    header = [
        "| trainer | claimed ε | design | rule | refuted | lower bound: mean (min, max) "
        "| s per audit |",
        "|---|---:|---|---|---:|---|---:|",
    ]
    lines = list(header)
    for line in header:
        echo(line)
    if str(HERE) not in sys.path:  # where --function finds this module
        sys.path.insert(0, str(HERE))
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        write_tables(folder)
        for row in rows_:
            count = row.repeats if repeats is None else min(repeats, row.repeats)
            audits = []
            for seed in range(first_seed, first_seed + count):
                audits.append(audit(folder, row, seed))
                progress = ", ".join(f"{k} {v:.3f}" for k, v in audits[-1].bounds.items())
                print(f"  {row.name}, {row.design}, seed {seed}: {progress} "
                      f"({audits[-1].seconds:.0f} s)", file=sys.stderr, flush=True)  # fmt: skip
            for line in table_lines(row, audits):
                lines.append(line)
                echo(line)
    return lines


def describe(rows_: Sequence[Row]) -> list[str]:
    """What each DP trainer's σ is and the accountant's ε of it at its true sampling rate."""
    out = []
    for row in rows_:
        trainer = row.trainer
        if trainer.kind == "dp-sgd":
            true = dp_epsilon(trainer.sigma, trainer.rate, trainer.steps)
            out.append(
                f"- {row.name} ({row.design}): σ = {trainer.sigma:.3f}, q = {trainer.rate:.3f}, "
                f"{trainer.steps} steps, accountant's ε at the true q = {true:.2f}"
            )
    return list(dict.fromkeys(out))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one repeat of a few small rows")
    parser.add_argument("--repeats", type=int, help="at most this many repeats a row")
    parser.add_argument("--only", help="only the rows whose trainer name contains this")
    parser.add_argument(
        "--first-seed", type=int, default=0, help="the audits' seeds start here (default 0)"
    )
    parser.add_argument("--design", choices=("one-run", "many-runs"), help="only these rows")
    parser.add_argument(
        "--fit",
        nargs=3,
        metavar=("TRAIN", "OUT", "SEED"),
        help="train one model as audit-training's --command calls it (used by the table)",
    )
    args = parser.parse_args(argv)
    if args.fit:
        fit(args.fit[0], args.fit[1], int(args.fit[2]))
        return
    chosen = rows(args.quick, args.design)
    chosen = [r for r in chosen if args.only is None or args.only in r.name]
    for line in describe(chosen):
        print(line, flush=True)
    started = time.perf_counter()
    run(chosen, args.repeats, lambda line: print(line, flush=True), args.first_seed)
    print(f"wall time {time.perf_counter() - started:.0f} s", flush=True)


if __name__ == "__main__":
    main()
