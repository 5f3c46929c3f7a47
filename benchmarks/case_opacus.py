"""A real library under audit: opacus's ``PrivacyEngine`` on a data set of two records.

opacus (issues #571 and #819 of meta-pytorch/opacus) divides the noisy sum of clipped
gradients by an expected batch size that it computes from the data set's length. Two
neighbouring data sets (with and without one record) are then averaged over different
numbers, so the noise the adversary sees has a different scale in the two worlds, which the
accountant's Gaussian analysis does not cover. The effect grows as the data set shrinks and
as the model's outputs grow.

Each trainer below is audited as a user would audit it: ``epsstar audit-training
--function`` with the crafted canary (an out-of-distribution record with another label)
added to the two training records in R runs and left out of R others, the claim being what
opacus's own accountant reports for the noise multiplier it trains with (Poisson rate 1,
``--steps`` steps, δ = 1e-5). The trainers:

- ``opacus``: ``PrivacyEngine().make_private`` on a ``DataLoader`` of the whole table, as
  opacus's tutorials write it;
- ``fixed``: a plain torch DP-SGD loop with the same clipping and noise that divides by a
  public batch size (2), as the DP-SGD analysis assumes;
- ``epsstar``: epsstar's own trainer (``audit-training`` without ``--function``), batch size
  2, as many epochs as the others take steps, its noise chosen by its own accountant for the
  same target, its features standardised on the population (the default); it is slower a run,
  so it gets ``--own-runs`` runs a side;
- ``epsstar-data``: the same with ``--standardise-on data``, the mean and standard deviation
  fitted on each run's table, canary included, outside the guarantee (not run by default:
  name it in ``--trainers``);

on a linear model with 2 outputs (the first issue's setting) and 100 outputs (the second's).

    python benchmarks/case_opacus.py --runs 1000

needs ``pip install opacus`` (not a dependency of epsstar). It prints one row a trainer and
output count: the runs, the claim, the lower bound and whether it refutes, the counts of the
test that decided, and the seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
DELTA = 1e-5
FEATURES = 5
#: epsstar's own trainer, by the table it standardises on.
OWN = {"epsstar": "population", "epsstar-data": "data"}

MODULE = """
import os
import warnings
from pathlib import Path

import pandas as pd
import torch
from torch.utils.data import DataLoader, TensorDataset

warnings.simplefilter("ignore")
STEPS = int(os.environ["CASE_STEPS"])
SIGMA = float(os.environ["CASE_SIGMA"])
OUTPUTS = int(os.environ["CASE_OUTPUTS"])
TRAINER = os.environ["CASE_TRAINER"]
PUBLIC_BATCH = 2
LR = 0.5
CLIP = 1.0


def read(train_path):
    frame = pd.read_csv(train_path)
    x = torch.tensor(frame.drop(columns="label").to_numpy(), dtype=torch.float32)
    return x, torch.tensor(frame["label"].to_numpy(), dtype=torch.long)


def with_opacus(model, x, y):
    from opacus import PrivacyEngine

    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    loader = DataLoader(TensorDataset(x, y), batch_size=len(x))
    private, optimizer, loader = PrivacyEngine(accountant="rdp").make_private(
        module=model, optimizer=optimizer, data_loader=loader,
        noise_multiplier=SIGMA, max_grad_norm=CLIP,
    )
    loss = torch.nn.CrossEntropyLoss()
    for _ in range(STEPS):
        for xb, yb in loader:
            optimizer.zero_grad()
            if len(xb):
                loss(private(xb), yb).backward()
            optimizer.step()


def with_fixed_normaliser(model, x, y):
    params = list(model.parameters())
    for _ in range(STEPS):
        clipped = []
        for i in range(len(x)):
            model.zero_grad()
            torch.nn.functional.cross_entropy(model(x[i : i + 1]), y[i : i + 1]).backward()
            grads = [p.grad.detach().clone() for p in params]
            norm = float(torch.sqrt(sum((g ** 2).sum() for g in grads)))
            clipped.append([g * min(1.0, CLIP / max(norm, 1e-12)) for g in grads])
        with torch.no_grad():
            for j, p in enumerate(params):
                noisy = sum(g[j] for g in clipped) + torch.randn_like(p) * SIGMA * CLIP
                p -= LR * noisy / PUBLIC_BATCH


def fit(train_path, out_dir, seed):
    x, y = read(train_path)
    torch.manual_seed(seed)
    model = torch.nn.Linear(x.shape[1], OUTPUTS)
    (with_opacus if TRAINER == "opacus" else with_fixed_normaliser)(model, x, y)
    saved = torch.nn.Linear(x.shape[1], OUTPUTS)
    saved.load_state_dict(model.state_dict())
    torch.jit.trace(saved.eval(), x[:1]).save(str(Path(out_dir) / "model.pt"))
"""


def opacus_claim(steps: int, target: float) -> tuple[float, float]:
    """The noise multiplier opacus picks for ``target`` at Poisson rate 1 over ``steps``
    steps, and the ε its accountant then reports (the claim a user reads)."""
    from opacus.accountants import RDPAccountant
    from opacus.accountants.utils import get_noise_multiplier

    sigma = get_noise_multiplier(
        target_epsilon=target, target_delta=DELTA, sample_rate=1.0, steps=steps, accountant="rdp"
    )
    accountant = RDPAccountant()
    accountant.history = [(sigma, 1.0, steps)]
    return float(sigma), float(accountant.get_epsilon(DELTA))


def write_tables(folder: Path, outputs: int, seed: int) -> tuple[Path, Path]:
    rng = np.random.default_rng(seed)

    def table(n: int) -> pd.DataFrame:
        frame = pd.DataFrame(
            rng.normal(size=(n, FEATURES)), columns=[f"x{i}" for i in range(FEATURES)]
        )
        frame["label"] = rng.integers(0, outputs, size=n)
        return frame

    train, population = folder / f"train{outputs}.csv", folder / f"population{outputs}.csv"
    table(2).to_csv(train, index=False)
    table(1000).to_csv(population, index=False)
    return train, population


def audit(
    folder: Path,
    trainer: str,
    outputs: int,
    runs: int,
    steps: int,
    sigma: float,
    claim: float,
    target: float,
    jobs: int,
) -> dict[str, object]:
    train, population = write_tables(folder, outputs, seed=outputs)
    out = folder / f"{trainer}-{outputs}.json"
    env = {
        **os.environ,
        "CASE_STEPS": str(steps),
        "CASE_SIGMA": repr(sigma),
        "CASE_OUTPUTS": str(outputs),
        "CASE_TRAINER": trainer,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    if trainer in OWN:
        procedure = ["--target-epsilon", repr(target), "--batch-size", "2"]
        procedure += ["--epochs", str(steps), "--lr", "0.5", "--momentum", "0"]
        procedure += ["--standardise-on", OWN[trainer]]
    else:
        procedure = ["--function", "case_fit:fit", "--trust-model"]
        procedure += ["--claimed-epsilon", repr(claim)]
    argv = [sys.executable, "-m", "epsstar", "audit-training", *procedure]
    argv += ["--train", str(train), "--population", str(population), "--label-column", "label"]
    argv += ["--delta", repr(DELTA), "--runs", str(runs), "--threat-model", "crafted"]
    argv += ["--jobs", str(jobs), "--quiet", "--json", str(out)]
    started = time.perf_counter()
    finished = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if finished.returncode not in (0, 1):
        raise SystemExit(f"{trainer}, {outputs} outputs: {finished.stderr.strip()}")
    document = json.loads(out.read_text("utf-8"))
    model = document["threat_models"][0]
    counts = model["many_runs"]
    return {
        "trainer": trainer,
        "outputs": outputs,
        "runs": runs,
        "claim": document["claimed_epsilon"],
        "bound": document["epsilon_lower_bound"],
        "refuted": document["refuted"],
        "false_positives": f"{counts['false_positives']}/{counts['negatives']}",
        "false_negatives": f"{counts['false_negatives']}/{counts['positives']}",
        "seconds": seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000, help="runs with the canary, and without")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--epsilon", type=float, default=1.0, help="the target given to opacus")
    parser.add_argument("--outputs", default="2,100")
    parser.add_argument("--own-runs", type=int, default=300, help="runs a side, epsstar's trainer")
    parser.add_argument("--trainers", default="opacus,fixed,epsstar")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    sigma, claim = opacus_claim(args.steps, args.epsilon)
    print(
        f"noise multiplier {sigma:.4g} at Poisson rate 1 over {args.steps} steps; "
        f"opacus's RDP accountant reports epsilon {claim:.4f} at delta {DELTA:g}"
    )
    print(
        "| trainer | outputs | runs a side | claimed ε | lower bound | refuted "
        "| false positives | false negatives | seconds |"
    )
    print("|---|---:|---:|---:|---:|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "case_fit.py").write_text(MODULE, "utf-8")
        for outputs in (int(part) for part in args.outputs.split(",")):
            for trainer in args.trainers.split(","):
                runs = args.own_runs if trainer in OWN else args.runs
                row = audit(
                    folder,
                    trainer,
                    outputs,
                    runs,
                    args.steps,
                    sigma,
                    claim,
                    args.epsilon,
                    args.jobs,
                )
                print(
                    f"| {row['trainer']} | {row['outputs']} | {row['runs']} | {row['claim']:.4f} "
                    f"| {row['bound']:.3f} | {'yes' if row['refuted'] else 'no'} "
                    f"| {row['false_positives']} | {row['false_negatives']} "
                    f"| {row['seconds']:.0f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
