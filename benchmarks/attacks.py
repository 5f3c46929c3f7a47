"""Reference-model attacks (offline LiRA and RMIA) against the loss attack: power, validity, cost.

Five targets, each with 8 reference models trained once on a reference split disjoint from
the target's training records and the population records; every audit runs
:func:`epsstar.audit.audit` (the code behind ``epsstar audit``) with ``--attack loss lira
rmia`` and the first K ∈ {1, 2, 4, 8} reference models:

- ``purchase-10``, ``purchase-50``: Purchase-like (``purchase_like``, 600 binary features,
  100 classes, data seed 0), the Epsilon* paper's 3×100 MLP trained without privacy for 10
  and 50 epochs (batch 64, SGD lr 0.05, momentum 0.9) on 2,500 records; 5,000 population
  records; a reference split of 5,000 records (each reference model on a random half, so
  on as many records as the target); 30,000 further records as fresh "members".
- ``adult``: UCI Adult (shipped files), the demo's 3×100 MLP, 20 epochs without privacy, on
  10,000 rows of the training file; population the 16,281 rows of the test file; reference
  split 12,000 other training-file rows (rows equal to a population row dropped); the rest
  (rows equal to a target training row dropped) are fresh "members".
- ``adult-dp3``: the same rows and MLP trained by DP-SGD to ε = 3 (5 epochs, batch 64, clip
  1, PLD accountant, δ = 1/(n ln n)); its reference models follow its recipe without privacy
  (as ``epsstar references --recipe`` does).
- ``digits-cnn``: scikit-learn's ``load_digits`` (1,797 images of 8×8 pixels), a small CNN
  (two 3×3 convolutions of 16 and 32 channels with 2×2 max-pooling, a linear layer; Adam lr
  1e-3, batch 32, 60 epochs) trained here with torch and exported as TorchScript (audited
  with ``input_shape=(1, 8, 8)``); 600 training, 600 population images, reference split of
  the other 597 (each reference CNN on 298).

The MLP references are trained by :func:`epsstar.training.runs.references.train_references` (the
code behind ``epsstar references``) with the target's ``training.json`` as recipe.

Tables printed:

1. per target and K: Epsilon*, held-out lower bound, TPR at 0.1 % FPR and AUC of each attack;
2. RMIA side by side with ML Privacy Meter's ``run_rmia`` (``attacks.py`` of a checkout of
   github.com/privacytrustlab/ml_privacy_meter given by ``--privacy-meter DIR``, loaded from
   there, never copied) on the same log-odds of the same target and K = 8 reference models,
   the same ``z`` records and the same scored records, with the same ``a``;
3. validity: fresh records posing as members, one disjoint set per repeat, audited with the
   K = 8 references; the share of gate statistics > 0 (``significant`` gate), and for the
   DP model the largest gate statistic against the accounted ε;
4. gain: best reference attack against the loss attack on the overfitted MLPs, and RMIA's
   ``a`` and LiRA's variance as the knobs that could explain a shortfall;
5. cost: seconds the K-reference audit spends loading and streaming its reference models
   against the loss-only audit's inference seconds (``provenance.seconds.inference``).

Trained models and data tables are cached under ``--cache`` (delete it after changing the
trainer); a rerun only audits.

    python benchmarks/attacks.py --privacy-meter /tmp/ml_privacy_meter
    python benchmarks/attacks.py --targets purchase-50 --repeats 10

About 10 minutes on 2 shared cores with the models cached, 14 minutes more to train them
first (docs/attacks.md).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
from numpy.typing import NDArray

from epsstar import __version__
from epsstar.cli.common.text_table import aligned_table
from epsstar.statistics.names import METHODS, AttackName, Method

TARGETS = ("purchase-10", "purchase-50", "adult", "adult-dp3", "digits-cnn")
KS = (1, 2, 4, 8)
N_REFERENCES = max(KS)
ATTACK_NAMES: tuple[AttackName, ...] = ("loss", "lira", "rmia")
LABEL = "label"
PURCHASE_ROWS = {"train": 2_500, "population": 5_000, "reference": 5_000, "fresh": 30_000}
ADULT_ROWS = {"train": 10_000, "reference": 12_000}
DIGITS_ROWS = {"train": 600, "population": 600}
FRESH_PER_REPEAT = 300
#: Interleaved rounds of (loss-only audit, K-reference audits) whose median times are kept.
COST_ROUNDS = 5
DIGITS_EPOCHS = 60
DATA_SEED = 0
#: The headline method of the tables in docs/attacks.md (the default when they were made).
METHOD: Method = "tails-tested"
METHOD_HELP = f"headline estimator (default {METHOD}, the method of the documented tables)"

Floats = NDArray[np.float64]


# --- data tables --------------------------------------------------------------------------------


def _write(path: Path, features: NDArray[Any], labels: NDArray[Any], names: Sequence[str]) -> None:
    import pandas as pd

    frame = pd.DataFrame(np.asarray(features, dtype=np.float64), columns=list(names))
    frame[LABEL] = np.asarray(labels, dtype=np.int64)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp.parquet")
    frame.to_parquet(temporary, index=False)
    temporary.replace(path)


def _rows_in(rows: NDArray[Any], labels: NDArray[Any], others: NDArray[Any], o_labels: Any) -> Any:
    """Which of ``rows`` (with ``labels``) equal one of ``others`` (features and label)."""
    seen = {r.tobytes() for r in np.column_stack([others, o_labels]).astype(np.float64)}
    both = np.column_stack([rows, labels]).astype(np.float64)
    return np.array([r.tobytes() in seen for r in both], dtype=bool)


def data_tables(dataset: str, cache: Path) -> dict[str, Path]:
    """Paths of the data set's train, population, reference and fresh tables (written once)."""
    folder = cache / "data" / dataset
    roles = ("train", "population", "reference", "fresh")
    paths = {role: folder / f"{role}.parquet" for role in roles}
    if dataset == "digits":
        paths.pop("fresh")
    if all(path.is_file() for path in paths.values()):
        return paths
    if dataset == "purchase":
        from epsstar.training.data.datasets import purchase_like

        total = sum(PURCHASE_ROWS.values())
        generated = purchase_like(total, seed=DATA_SEED)
        start = 0
        for role in roles:
            stop = start + PURCHASE_ROWS[role]
            x, y = generated.features[start:stop], generated.labels[start:stop]
            _write(paths[role], x, y, generated.columns)
            start = stop
    elif dataset == "adult":
        from epsstar.training.data.datasets import adult

        data = adult()
        order = np.random.default_rng(DATA_SEED).permutation(data.n_train)
        n_train, n_ref = ADULT_ROWS["train"], ADULT_ROWS["reference"]
        x, y = data.train_features, data.train_labels
        train_rows = np.sort(order[:n_train])
        ref_rows = np.sort(order[n_train : n_train + n_ref])
        fresh_rows = np.sort(order[n_train + n_ref :])
        pop_x, pop_y = data.population_features, data.population_labels
        # No reference row may be a population row; no fresh row may be a training row.
        ref_rows = ref_rows[~_rows_in(x[ref_rows], y[ref_rows], pop_x, pop_y)]
        fresh_rows = fresh_rows[
            ~_rows_in(x[fresh_rows], y[fresh_rows], x[train_rows], y[train_rows])
        ]
        names = data.feature_names
        _write(paths["train"], x[train_rows], y[train_rows], names)
        _write(paths["population"], pop_x, pop_y, names)
        _write(paths["reference"], x[ref_rows], y[ref_rows], names)
        _write(paths["fresh"], x[fresh_rows], y[fresh_rows], names)
    else:
        from sklearn.datasets import load_digits

        digits = load_digits()
        order = np.random.default_rng(DATA_SEED).permutation(digits.target.size)
        n_train, n_pop = DIGITS_ROWS["train"], DIGITS_ROWS["population"]
        parts = {
            "train": order[:n_train],
            "population": order[n_train : n_train + n_pop],
            "reference": order[n_train + n_pop :],
        }
        names = tuple(f"p{i}" for i in range(64))
        for role, rows in parts.items():
            _write(paths[role], digits.data[rows], digits.target[rows], names)
    return paths


# --- models -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    dataset: str
    model: Path
    references: tuple[Path, ...]
    tables: dict[str, Path]
    input_shape: tuple[int, ...] | None
    accounted_epsilon: float | None
    train_seconds: float
    reference_seconds: float


def _mlp_config(name: str) -> Any:
    from epsstar.cli.commands import demo
    from epsstar.training.trainer import TrainingConfig

    if name.startswith("purchase"):
        epochs = 10 if name == "purchase-10" else 50
        return TrainingConfig(epochs=epochs, batch_size=64, hidden=(100, 100, 100), lr=0.05)
    if name == "adult":
        return TrainingConfig(epochs=20, batch_size=demo.BATCH_SIZE, hidden=demo.HIDDEN, lr=0.01)
    return TrainingConfig(
        epochs=demo.DP_EPOCHS,
        batch_size=demo.BATCH_SIZE,
        hidden=demo.HIDDEN,
        clip=demo.CLIP,
        lr=0.01,
        target_epsilon=3.0,
    )


def _timed_json(folder: Path) -> dict[str, Any]:
    path = folder / "seconds.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def _mlp_target(name: str, cache: Path) -> Target:
    from epsstar.training.data.tables import load_table
    from epsstar.training.runs.pipeline import train_to_directory
    from epsstar.training.runs.references import read_recipe, train_references

    dataset = "purchase" if name.startswith("purchase") else "adult"
    tables = data_tables(dataset, cache)
    folder = cache / "models" / name
    target_dir, refs_dir = folder / "target", folder / "references"
    seconds = _timed_json(folder)
    train = load_table(tables["train"], LABEL)
    if not (target_dir / "training.json").is_file():
        population = load_table(
            tables["population"], LABEL, features=train.feature_names, classes=train.classes
        )
        start = time.perf_counter()
        train_to_directory(
            train, _mlp_config(name), target_dir, population=population, progress=False
        )
        seconds["target"] = time.perf_counter() - start
    if not (refs_dir / "references.json").is_file():
        reference = load_table(
            tables["reference"], LABEL, features=train.feature_names, classes=train.classes
        )
        population = load_table(
            tables["population"], LABEL, features=train.feature_names, classes=train.classes
        )
        start = time.perf_counter()
        train_references(
            reference,
            read_recipe(target_dir / "training.json"),
            refs_dir,
            count=N_REFERENCES,
            seed=0,
            population=population,
            progress=False,
        )
        seconds["references"] = time.perf_counter() - start
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "seconds.json").write_text(json.dumps(seconds))
    record = json.loads((target_dir / "training.json").read_text())
    privacy = record.get("privacy")
    return Target(
        name=name,
        dataset=dataset,
        model=target_dir / "model.onnx",
        references=tuple(refs_dir / f"ref-{k + 1:02d}" / "model.onnx" for k in range(N_REFERENCES)),
        tables=tables,
        input_shape=None,
        accounted_epsilon=None if not privacy else float(privacy["epsilon"]),
        train_seconds=float(seconds.get("target", float("nan"))),
        reference_seconds=float(seconds.get("references", float("nan"))),
    )


def _cnn() -> Any:
    import torch

    class DigitsCnn(torch.nn.Module):
        """Pixels 0..16 in, 10 class logits out."""

        def __init__(self) -> None:
            super().__init__()
            self.features = torch.nn.Sequential(
                torch.nn.Conv2d(1, 16, 3, padding=1),
                torch.nn.ReLU(),
                torch.nn.MaxPool2d(2),
                torch.nn.Conv2d(16, 32, 3, padding=1),
                torch.nn.ReLU(),
                torch.nn.MaxPool2d(2),
            )
            self.head = torch.nn.Linear(32 * 2 * 2, 10)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            logits: torch.Tensor = self.head(torch.flatten(self.features(x / 16.0), 1))
            return logits

    return DigitsCnn()


def train_cnn(features: Floats, labels: NDArray[np.int64], seed: int, path: Path) -> float:
    """Train the digits CNN on the rows given, write it as TorchScript; its train accuracy."""
    import torch

    torch.manual_seed(seed)
    model = _cnn()
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.as_tensor(features, dtype=torch.float32).reshape(-1, 1, 8, 8)
    y = torch.as_tensor(labels, dtype=torch.int64)
    generator = torch.Generator().manual_seed(seed)
    for _ in range(DIGITS_EPOCHS):
        order = torch.randperm(y.numel(), generator=generator)
        for start in range(0, y.numel(), 32):
            batch = order[start : start + 32]
            optimiser.zero_grad()
            torch.autograd.backward(torch.nn.functional.cross_entropy(model(x[batch]), y[batch]))
            optimiser.step()
    model.eval()
    with torch.no_grad():
        accuracy = float((model(x).argmax(1) == y).float().mean())
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp.pt")
    torch.jit.save(torch.jit.trace(model, x[:1]), str(temporary))  # type: ignore[no-untyped-call]
    temporary.replace(path)
    return accuracy


def _cnn_target(cache: Path) -> Target:
    import pandas as pd

    from epsstar.training.runs.references import half_rows

    tables = data_tables("digits", cache)
    folder = cache / "models" / "digits-cnn"
    seconds = _timed_json(folder)
    read = {role: pd.read_parquet(path) for role, path in tables.items()}

    def arrays(frame: Any) -> tuple[Floats, NDArray[np.int64]]:
        return frame.drop(columns=LABEL).to_numpy(np.float64), frame[LABEL].to_numpy(np.int64)

    target = folder / "target" / "model.pt"
    if not target.is_file():
        start = time.perf_counter()
        train_cnn(*arrays(read["train"]), 0, target)
        seconds["target"] = time.perf_counter() - start
    references = tuple(folder / f"ref-{k + 1:02d}" / "model.pt" for k in range(N_REFERENCES))
    if not all(path.is_file() for path in references):
        ref_x, ref_y = arrays(read["reference"])
        start = time.perf_counter()
        # The halves and seeds of epsstar references: rows by (0, k), training seed k.
        for k, rows in enumerate(half_rows(ref_y.size, N_REFERENCES, 0)):
            train_cnn(ref_x[rows], ref_y[rows], k, references[k])
        seconds["references"] = time.perf_counter() - start
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "seconds.json").write_text(json.dumps(seconds))
    return Target(
        name="digits-cnn",
        dataset="digits",
        model=target,
        references=references,
        tables=tables,
        input_shape=(1, 8, 8),
        accounted_epsilon=None,
        train_seconds=float(seconds.get("target", float("nan"))),
        reference_seconds=float(seconds.get("references", float("nan"))),
    )


def build_target(name: str, cache: Path) -> Target:
    return _cnn_target(cache) if name == "digits-cnn" else _mlp_target(name, cache)


# --- audits -------------------------------------------------------------------------------------


@dataclass
class Captured:
    """What the audit's reference models scored, and what they were read with."""

    train: Floats | None = None
    population: Floats | None = None
    arguments: tuple[Any, ...] = ()


CAPTURED = Captured()


def _instrument() -> None:
    """Keep the reference models' log-odds of each audit, and the paths, reading and label
    map they were scored with (``SharedReferences.inputs``: the target's read of each table
    carries the references, so their cost is timed as the audit's inference instead)."""
    from epsstar.audit.engines.one_pass import SharedReferences

    original: Callable[..., Any] = SharedReferences.inputs

    def kept(self: SharedReferences, streamed: Any, tables: Any, label_map: Any, *rest: Any) -> Any:
        result = original(self, streamed, tables, label_map, *rest)
        references = result.references
        CAPTURED.train, CAPTURED.population = references.train, references.population
        CAPTURED.arguments = ([path for _, path in self.loaded], tables, label_map)
        return result

    setattr(SharedReferences, "inputs", kept)  # noqa: B010 - the benchmark's probe


def run_audit(
    target: Target, k: int, *, train: Path | None = None, seed: int = 0, method: Method = METHOD
) -> Any:
    """The audit of ``target`` with the first ``k`` reference models (0: the loss attack only)."""
    from epsstar.audit import AuditOptions, ModelFile, Tables, audit
    from epsstar.audit.attacks.scoring import AttackSettings

    settings = (
        AttackSettings(ATTACK_NAMES, target.references[:k]) if k else AttackSettings(("loss",))
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return audit(
            ModelFile(target.model, outputs="logits" if target.input_shape else None),
            Tables(
                train or target.tables["train"],
                target.tables["population"],
                LABEL,
                input_shape=target.input_shape,
            ),
            AuditOptions(seed=seed, method=method),
            attack=settings,
        )


@dataclass(frozen=True, slots=True)
class AttackRow:
    target: str
    k: int
    attack: str
    epsilon_star: float
    lower_bound: float
    tpr_001: float
    tpr_01: float
    auc: float
    gate: float
    n_members: int
    n_nonmembers: int


@dataclass(frozen=True, slots=True)
class CostRow:
    target: str
    k: int
    target_inference: float
    reference_seconds: float
    audit_seconds: float
    loss_audit_seconds: float
    per_model_seconds: float


def read_per_model() -> float:
    """Seconds to load the reference models of the last audit and stream both tables
    through each one separately (each model re-reads the tables: the audit's reference
    step before it shared one read), with the same reading and label map."""
    from epsstar.audit.engines.references import log_odds_of
    from epsstar.audit.model.plugins import loader_for_path
    from epsstar.plumbing.files.digests import sha256_of

    paths, reading, label_map = CAPTURED.arguments[:3]
    start = time.perf_counter()
    for path in paths:
        plugin, _ = loader_for_path(path)
        model = plugin.load(path, outputs=None, trust=False)
        log_odds_of(model, path, reading, label_map)
        sha256_of(path)
    return time.perf_counter() - start


def attack_rows(name: str, k: int, result: Any) -> list[AttackRow]:
    return [
        AttackRow(
            name,
            k,
            a.name,
            a.epsilon.epsilon,
            a.lower_bound.epsilon,
            a.tpr_at(0.001),
            a.tpr_at(0.01),
            a.auc,
            float("nan") if a.gate is None else a.gate.value,
            a.n_members,
            a.n_nonmembers,
        )
        for a in result.attacks
    ]


# --- ML Privacy Meter ---------------------------------------------------------------------------


def privacy_meter(folder: Path) -> ModuleType:
    """``attacks.py`` of an ML Privacy Meter checkout, loaded from there."""
    path = folder / "attacks.py"
    if not path.is_file():
        raise SystemExit(f"--privacy-meter: no attacks.py in {str(folder)!r}")
    spec = importlib.util.spec_from_file_location("privacy_meter_attacks", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def roc_numbers(member_scores: Floats, nonmember_scores: Floats) -> tuple[float, float]:
    """(TPR at FPR ≤ 0.1 %, AUC) of "member if score is high", as Privacy Meter computes them
    (``sklearn.metrics.roc_curve``: the last ROC point with FPR ≤ 0.001)."""
    from sklearn.metrics import auc, roc_curve

    labels = np.r_[np.ones(member_scores.size), np.zeros(nonmember_scores.size)]
    fpr, tpr, _ = roc_curve(labels, np.r_[member_scores, nonmember_scores])
    return float(tpr[np.flatnonzero(fpr <= 0.001)[-1]]), float(auc(fpr, tpr))


@dataclass(frozen=True, slots=True)
class MeterRow:
    target: str
    pipeline: str
    tpr: float
    se: float
    auc: float
    seconds: float
    n_members: int
    n_nonmembers: int


def compare_meter(
    name: str, module: ModuleType, phi: tuple[Floats, Floats], refs: tuple[Floats, Floats], a: float
) -> list[MeterRow]:
    """Our ``rmia_offline`` and Privacy Meter's ``run_rmia`` on the same log-odds: members,
    the audit's scored population records, its ``z`` records, K = all reference rows."""
    from scipy.special import expit

    from epsstar.audit.attacks.kinds.rmia import z_split
    from epsstar.statistics.attacks.rmia import rmia_offline

    on_train, on_population = phi
    ref_train, ref_population = refs
    scored, z = z_split(on_population.size, 0)
    x = np.concatenate([on_train, on_population[scored]])
    ref_x = np.hstack([ref_train, ref_population[:, scored]])
    n = on_train.size
    start = time.perf_counter()
    ours = rmia_offline(x, ref_x, on_population[z], ref_population[:, z], a=a)
    ours_seconds = time.perf_counter() - start
    k = ref_train.shape[0]
    # Privacy Meter's layout: one column per model, the target first (index 0), its
    # "paired" model next (index 1, which run_rmia leaves out), then the K references,
    # all OUT; signals are the probabilities of the true label.
    start = time.perf_counter()
    signals = np.column_stack([expit(x), expit(x), expit(ref_x).T])
    z_signals = np.column_stack(
        [expit(on_population[z]), expit(on_population[z]), expit(ref_population[:, z]).T]
    )
    memberships = np.zeros_like(signals, dtype=bool)
    theirs = module.run_rmia(0, signals, z_signals, memberships, k, a)
    their_seconds = time.perf_counter() - start
    rows = []
    for pipeline, member, other, seconds in (
        ("epsstar rmia_offline", -ours.scores[:n], -ours.scores[n:], ours_seconds),
        ("privacy meter run_rmia", theirs[:n], theirs[n:], their_seconds),
    ):
        tpr, area = roc_numbers(np.asarray(member), np.asarray(other))
        rows.append(
            MeterRow(
                name,
                pipeline,
                tpr,
                float(np.sqrt(tpr * (1 - tpr) / n)),
                area,
                seconds,
                n,
                int(scored.size),
            )
        )
    return rows


# --- validity -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ValidityRow:
    target: str
    attack: str
    repeats: int
    alarms: int
    max_gate: float
    mean_epsilon: float
    max_epsilon: float
    accounted: float | None


def validity(target: Target, repeats: int, method: Method = METHOD) -> list[ValidityRow]:
    """Disjoint sets of fresh records as "members", each audited with the K = 8 references
    (same statistics as the audit, on the log-odds read once for the whole fresh table)."""
    from epsstar.audit.attacks.from_losses import audit_losses
    from epsstar.audit.attacks.inputs import AttackInputs
    from epsstar.audit.attacks.references import ReferenceConfidences
    from epsstar.audit.attacks.scoring import AttackSettings, attack_results
    from epsstar.audit.options import AuditOptions

    whole = run_audit(target, N_REFERENCES, train=target.tables["fresh"], method=method)
    assert CAPTURED.train is not None
    assert CAPTURED.population is not None
    fresh_losses, pop_losses = whole.train_losses, whole.population_losses
    if whole.attacks and whole.attacks[0].name == "loss":
        fresh_losses = whole.attacks[0].member_scores
        pop_losses = whole.attacks[0].nonmember_scores
    ref_fresh, ref_pop = CAPTURED.train, CAPTURED.population
    settings = AttackSettings(ATTACK_NAMES, target.references)
    available = fresh_losses.size // FRESH_PER_REPEAT
    count = min(repeats, available)
    outcomes: dict[str, list[tuple[float, float]]] = {name: [] for name in ATTACK_NAMES}
    order = np.random.default_rng(1).permutation(fresh_losses.size)
    for r in range(count):
        rows = np.sort(order[r * FRESH_PER_REPEAT : (r + 1) * FRESH_PER_REPEAT])
        options = AuditOptions(seed=r, method=method)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            base = audit_losses(
                fresh_losses[rows], pop_losses, utility=whole.utility, options=options
            )
            inputs = AttackInputs(
                (-fresh_losses[rows], -pop_losses),
                ReferenceConfidences(ref_fresh[:, rows], ref_pop, ()),
            )
            results = attack_results(settings, base, inputs, options)
        for result in results:
            assert result.gate is not None
            outcomes[result.name].append((result.gate.value, result.epsilon.epsilon))
    out = []
    for name, values in outcomes.items():
        gates = np.array([g for g, _ in values])
        estimates = np.array([e for _, e in values])
        out.append(
            ValidityRow(
                target.name,
                name,
                len(values),
                int((gates > 0).sum()),
                float(gates.max()),
                float(estimates.mean()),
                float(estimates.max()),
                target.accounted_epsilon,
            )
        )
    return out


# --- diagnostics of the gain --------------------------------------------------------------------


def gain_knobs(
    name: str, phi: tuple[Floats, Floats], refs: tuple[Floats, Floats]
) -> list[list[str]]:
    """TPR at 0.1 % FPR and AUC of RMIA for several ``a`` and of LiRA with either variance,
    on the K = 8 log-odds of the audit (members against the RMIA-scored population)."""
    from epsstar.audit.attacks.kinds.rmia import z_split
    from epsstar.statistics.attacks.lira import LiraVariance, lira_offline
    from epsstar.statistics.attacks.rmia import rmia_offline

    on_train, on_population = phi
    ref_train, ref_population = refs
    scored, z = z_split(on_population.size, 0)
    x = np.concatenate([on_train, on_population[scored]])
    ref_x = np.hstack([ref_train, ref_population[:, scored]])
    n = on_train.size
    lines = []
    for a in (0.0, 0.3, 0.6, 1.0):
        s = rmia_offline(x, ref_x, on_population[z], ref_population[:, z], a=a).scores
        tpr, area = roc_numbers(-s[:n], -s[n:])
        lines.append([name, f"rmia a={a:g}", f"{tpr:.4f}", f"{area:.4f}"])
    variances: tuple[LiraVariance, ...] = ("global", "per_record")
    for variance in variances:
        s = lira_offline(x, ref_x, variance=variance).scores
        tpr, area = roc_numbers(-s[:n], -s[n:])
        lines.append([name, f"lira {variance}", f"{tpr:.4f}", f"{area:.4f}"])
    s = -x  # the loss attack on the same records
    tpr, area = roc_numbers(-s[:n], -s[n:])
    lines.append([name, "loss", f"{tpr:.4f}", f"{area:.4f}"])
    return lines


def calibration_row(
    name: str, phi: tuple[Floats, Floats], refs: tuple[Floats, Floats]
) -> list[str]:
    """R^2 of the target's log-odds on the reference models' mean, and the spreads."""
    out = [name]
    sides = [(phi[1], refs[1].mean(axis=0)), (phi[0], refs[0].mean(axis=0))]
    spreads = []
    for target, mean in sides:
        r = float(np.corrcoef(target, mean)[0, 1])
        out.append(f"{r * r:.3f}")
        spreads += [f"{target.std():.3f}", f"{(target - mean).std():.3f}"]
    return out + spreads


def ratio_interval(
    best: tuple[Floats, Floats], loss: tuple[Floats, Floats], resamples: int = 200
) -> str:
    """The 5 % and 95 % bootstrap quantiles of TPR@0.1%(best) / TPR@0.1%(loss)."""
    rng = np.random.default_rng(0)
    ratios = []
    n = best[0].size
    for _ in range(resamples):
        members = rng.integers(0, n, n)
        values = []
        for member_scores, others in (best, loss):
            chosen = others[rng.integers(0, others.size, others.size)]
            values.append(roc_numbers(-member_scores[members], -chosen)[0])
        ratios.append(values[0] / values[1] if values[1] > 0 else np.inf)
    low, high = np.quantile(np.array(ratios), [0.05, 0.95])
    return f"{low:.2f}-{high:.2f}"


def upper_rate(alarms: int, repeats: int, level: float = 0.95) -> float:
    """One-sided Clopper-Pearson upper bound on a rate of ``alarms`` in ``repeats``."""
    from scipy.stats import beta

    return 1.0 if alarms >= repeats else float(beta.ppf(level, alarms + 1, repeats - alarms))


# --- main ---------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", nargs="+", choices=TARGETS, default=list(TARGETS))
    parser.add_argument("--cache", type=Path, default=Path("/tmp/epsstar-attacks"))
    parser.add_argument(
        "--repeats", type=int, default=100, help="validity repeats per target (default 100)"
    )
    parser.add_argument(
        "--privacy-meter", type=Path, default=None, help="an ML Privacy Meter checkout"
    )
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument("--method", choices=METHODS, default=METHOD, help=METHOD_HELP)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    meter = None if args.privacy_meter is None else privacy_meter(args.privacy_meter)
    _instrument()
    print(
        f"epsstar {__version__}; targets {args.targets}; K {list(KS)}; {args.repeats} validity "
        f"repeats of {FRESH_PER_REPEAT} fresh records; cache {args.cache}; "
        f"{args.threads} torch thread(s)"
    )
    clock = time.perf_counter()
    targets = []
    for name in args.targets:
        target = build_target(name, args.cache)
        targets.append(target)
        print(
            f"  {name}: target trained in {target.train_seconds:.1f} s, "
            f"{N_REFERENCES} references in {target.reference_seconds:.1f} s (when first trained)"
            + (
                ""
                if target.accounted_epsilon is None
                else f"; accounted eps {target.accounted_epsilon:.4f}"
            ),
            flush=True,
        )
    rows: list[AttackRow] = []
    costs: list[CostRow] = []
    meter_rows: list[MeterRow] = []
    knobs: list[list[str]] = []
    calibration: list[list[str]] = []
    scores: dict[tuple[str, int], dict[str, tuple[Floats, Floats]]] = {}
    logodds: dict[str, tuple[tuple[Floats, Floats], tuple[Floats, Floats]]] = {}
    accuracy: dict[str, tuple[float, float]] = {}
    for target in targets:
        timings: dict[int, list[tuple[float, float, float, float, float]]] = {k: [] for k in KS}
        for round_ in range(COST_ROUNDS):
            start = time.perf_counter()
            loss_only = run_audit(target, 0, method=args.method)
            loss_seconds = time.perf_counter() - start
            inference = loss_only.provenance.seconds.inference
            for k in KS:
                start = time.perf_counter()
                result = run_audit(target, k, method=args.method)
                seconds = time.perf_counter() - start
                per_model = read_per_model()
                references = result.provenance.seconds.inference - inference
                timings[k].append((inference, references, seconds, loss_seconds, per_model))
                if round_ == COST_ROUNDS - 1:
                    rows.extend(attack_rows(target.name, k, result))
                    scores[(target.name, k)] = {
                        a.name: (a.member_scores, a.nonmember_scores) for a in result.attacks
                    }
            print(f"  audited {target.name}, round {round_ + 1}/{COST_ROUNDS}", flush=True)
        for k in KS:
            median = np.median(np.array(timings[k]), axis=0)
            costs.append(CostRow(target.name, k, *(float(v) for v in median)))
        accuracy[target.name] = (
            loss_only.utility["train"].accuracy,
            loss_only.utility["population"].accuracy,
        )
        assert CAPTURED.train is not None
        assert CAPTURED.population is not None
        phi = (-loss_only.train_losses, -loss_only.population_losses)
        refs = (CAPTURED.train, CAPTURED.population)
        logodds[target.name] = (phi, refs)
        if meter is not None:
            meter_rows.extend(compare_meter(target.name, meter, phi, refs, 0.3))
        calibration.append(calibration_row(target.name, phi, refs))
        if target.name.startswith("purchase"):
            knobs.extend(gain_knobs(target.name, phi, refs))

    print("\nTable 1. Each attack per target and number of reference models K\n")
    header = [
        "target",
        "K",
        "attack",
        "Epsilon*",
        "lower bound",
        "TPR@0.1%",
        "TPR@1%",
        "AUC",
        "gate stat",
        "members",
        "non-members",
    ]
    table = [header]
    for row in rows:
        table.append(
            [
                row.target,
                str(row.k),
                row.attack,
                f"{row.epsilon_star:.3f}",
                f"{row.lower_bound:.3f}",
                f"{row.tpr_001:.4f}",
                f"{row.tpr_01:.4f}",
                f"{row.auc:.4f}",
                f"{row.gate:.3f}",
                str(row.n_members),
                str(row.n_nonmembers),
            ]
        )
    print(aligned_table(table, left_columns=3))

    if meter_rows:
        print(
            "\nTable 2. RMIA (a = 0.3, gamma = 1, K = 8): epsstar against ML Privacy Meter's "
            "run_rmia on the same log-odds, members and scored population records; TPR at "
            "FPR <= 0.1 % and AUC both by sklearn.metrics.roc_curve; SE = sqrt(TPR (1 - TPR) "
            "/ members)\n"
        )
        table = [
            [
                "target",
                "pipeline",
                "TPR@0.1%",
                "SE",
                "AUC",
                "score seconds",
                "members",
                "non-members",
            ]
        ]
        for m in meter_rows:
            table.append(
                [
                    m.target,
                    m.pipeline,
                    f"{m.tpr:.4f}",
                    f"{m.se:.4f}",
                    f"{m.auc:.4f}",
                    f"{m.seconds:.3f}",
                    str(m.n_members),
                    str(m.n_nonmembers),
                ]
            )
        print(aligned_table(table, left_columns=2))

    valid_targets = [t for t in targets if "fresh" in t.tables]
    if valid_targets and args.repeats > 0:
        print(
            f"\nTable 3. Validity: fresh records posing as members ({FRESH_PER_REPEAT} per "
            f"repeat, disjoint), K = 8, audit seed = repeat; alarms = gate statistic > 0 "
            f"(significant gate)\n"
        )
        table = [
            [
                "target",
                "attack",
                "repeats",
                "alarms",
                "alarm rate",
                "95% upper",
                "max gate stat",
                "mean Epsilon*",
                "max Epsilon*",
                "accounted eps",
            ]
        ]
        for target in valid_targets:
            for v in validity(target, args.repeats, args.method):
                table.append(
                    [
                        v.target,
                        v.attack,
                        str(v.repeats),
                        str(v.alarms),
                        f"{v.alarms / v.repeats:.3f}",
                        f"{upper_rate(v.alarms, v.repeats):.3f}",
                        f"{v.max_gate:.3f}",
                        f"{v.mean_epsilon:.3f}",
                        f"{v.max_epsilon:.3f}",
                        "-" if v.accounted is None else f"{v.accounted:.3f}",
                    ]
                )
            print(f"  validity of {target.name} done", flush=True)
        print(aligned_table(table, left_columns=2))
        alarms = sum(int(row[3]) for row in table[1:])
        repeats = sum(int(row[2]) for row in table[1:])
        print(
            f"\nAll cells pooled: {alarms} alarms in {repeats} audits, rate "
            f"{alarms / repeats:.3f}, one-sided 95% upper bound {upper_rate(alarms, repeats):.3f} "
            f"(cells share their population records, so they are not independent)"
        )
        dp = [t for t in targets if t.accounted_epsilon is not None]
        for target in dp:
            accounted = float(target.accounted_epsilon or 0.0)
            above = [r for r in rows if r.target == target.name and r.gate > accounted]
            largest = max((r.gate for r in rows if r.target == target.name), default=float("nan"))
            print(
                f"\n{target.name}: on its members, {len(above)} of "
                f"{sum(r.target == target.name for r in rows)} (attack, K) gate statistics "
                f"exceed the accounted eps {target.accounted_epsilon:.4f}; largest {largest:.4f}"
            )

    if knobs:
        print(
            "\nTable 4. Gain on the overfitted MLPs (K = 8); the ratio's interval: 200 "
            "bootstrap resamples of the members and non-members (the same members for both "
            "attacks), TPR at FPR <= 0.1 % by roc_curve on the audit's scores\n"
        )
        table = [
            [
                "target",
                "best reference attack",
                "its TPR@0.1%",
                "loss TPR@0.1%",
                "ratio",
                "its TPR@1%",
                "loss TPR@1%",
                "its Epsilon*",
                "loss Epsilon*",
                "ratio 90% bootstrap",
            ]
        ]
        for name in ("purchase-10", "purchase-50"):
            at8 = {r.attack: r for r in rows if r.target == name and r.k == N_REFERENCES}
            if not at8:
                continue
            best = max((at8["lira"], at8["rmia"]), key=lambda r: r.tpr_001)
            ratio = best.tpr_001 / at8["loss"].tpr_001 if at8["loss"].tpr_001 else float("inf")
            table.append(
                [
                    name,
                    best.attack,
                    f"{best.tpr_001:.4f}",
                    f"{at8['loss'].tpr_001:.4f}",
                    f"{ratio:.2f}",
                    f"{best.tpr_01:.4f}",
                    f"{at8['loss'].tpr_01:.4f}",
                    f"{best.epsilon_star:.3f}",
                    f"{at8['loss'].epsilon_star:.3f}",
                    ratio_interval(
                        scores[(name, N_REFERENCES)][best.attack],
                        scores[(name, N_REFERENCES)]["loss"],
                    ),
                ]
            )
        print(aligned_table(table, left_columns=2))
        print(
            "\nTable 4b. The knobs (K = 8; members against RMIA's scored population records; "
            "roc_curve as in Table 2)\n"
        )
        print(aligned_table([["target", "score", "TPR@0.1%", "AUC"], *knobs], left_columns=2))
        print(
            "\nTable 4c. How much of the target's log-odds the reference models predict "
            "(K = 8): R^2 of phi_target on the references' mean, per side; the spread of "
            "phi_target and of phi_target - mean\n"
        )
        header = [
            "target",
            "R^2 non-members",
            "R^2 members",
            "sd phi (non-m.)",
            "sd phi - mean (non-m.)",
            "sd phi (members)",
            "sd phi - mean (members)",
        ]
        print(aligned_table([header, *calibration], left_columns=1))
    elif calibration:
        print("\nTable 4c. R^2 of phi_target on the references' mean (K = 8)\n")
        header = [
            "target",
            "R^2 non-members",
            "R^2 members",
            "sd phi (non-m.)",
            "sd phi - mean (non-m.)",
            "sd phi (members)",
            "sd phi - mean (members)",
        ]
        print(aligned_table([header, *calibration], left_columns=1))

    print(
        "\nTable 5. Cost: reference models' load + streaming seconds in the K-reference audit "
        "(its inference seconds less the loss-only audit's: the references ride on the "
        "target's reads) against the loss-only audit's inference seconds; limit (K + 1) x 1.1; "
        f"medians of {COST_ROUNDS} interleaved rounds. per-model reads: the same models loaded and "
        "streamed one by one, each reading both tables (right after each audit)\n"
    )
    table = [
        [
            "target",
            "K",
            "target inference s",
            "references s",
            "ratio (t+refs)/t",
            "limit",
            "met",
            "audit s",
            "loss-only audit s",
            "per-model reads s",
            "their ratio",
        ]
    ]
    for c in costs:
        ratio = (c.target_inference + c.reference_seconds) / c.target_inference
        limit = (c.k + 1) * 1.1
        table.append(
            [
                c.target,
                str(c.k),
                f"{c.target_inference:.3f}",
                f"{c.reference_seconds:.3f}",
                f"{ratio:.2f}",
                f"{limit:.1f}",
                "yes" if ratio <= limit else "no",
                f"{c.audit_seconds:.1f}",
                f"{c.loss_audit_seconds:.1f}",
                f"{c.per_model_seconds:.3f}",
                f"{(c.target_inference + c.per_model_seconds) / c.target_inference:.2f}",
            ]
        )
    print(aligned_table(table, left_columns=1))
    print(
        "\nTargets: accuracy (from the audit) and training seconds (target; the 8 references), "
        "as measured when first trained into the cache\n"
    )
    table = [["target", "train accuracy", "test accuracy", "target s", "8 references s"]]
    for target in targets:
        train_acc, test_acc = accuracy[target.name]
        table.append(
            [
                target.name,
                f"{train_acc:.4f}",
                f"{test_acc:.4f}",
                f"{target.train_seconds:.1f}",
                f"{target.reference_seconds:.1f}",
            ]
        )
    print(aligned_table(table, left_columns=1))
    print(f"\nTotal {time.perf_counter() - clock:.0f} s")


if __name__ == "__main__":
    main()
