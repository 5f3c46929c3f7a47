"""``epsstar audit --attack loss lira rmia --reference-models ...`` end to end.

The shipped multi-class data (fixtures/models/multiclass_*.csv, 1,000 records) are split
into the target's training records, population records and a reference pool; reference
models are trained on random halves of the pool, so that no population record is in any
reference model's training data.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from epsstar.audit.attacks.scoring import AttackSettings
from epsstar.cli import main
from epsstar.exceptions import EpsstarWarning
from epsstar.statistics.names import LossName
from tests.conftest import audit_files

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "models"
N_REFERENCES = 6


def _fit(frame: pd.DataFrame, seed: int) -> Any:
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier
    from threadpoolctl import threadpool_limits

    # One BLAS thread: on a busy machine more threads make these tiny fits ten times slower.
    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore", ConvergenceWarning)  # overfitting is the point
        return MLPClassifier((32,), alpha=1.0, solver="lbfgs", max_iter=400, random_state=seed).fit(
            frame.drop(columns="label").to_numpy(), frame["label"].to_numpy()
        )


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """target.skops (trained on train.csv), ref0..ref5.skops (on halves of a reference pool
    disjoint from population.csv) and three_classes.skops (a model of 3 of the 4 classes)."""
    import skops.io

    here = tmp_path_factory.mktemp("attacks")
    pool = pd.concat(
        [
            pd.read_csv(FIXTURES / "multiclass_train.csv"),
            pd.read_csv(FIXTURES / "multiclass_population.csv"),
        ],
        ignore_index=True,
    )
    order = np.random.default_rng(0).permutation(len(pool))
    train, population, reference = (pool.iloc[part] for part in np.split(order, [300, 600]))
    train.to_csv(here / "train.csv", index=False)
    population.to_csv(here / "population.csv", index=False)
    skops.io.dump(_fit(train, 0), here / "target.skops")
    for k in range(N_REFERENCES):
        half = reference.sample(n=len(reference) // 2, random_state=k)
        skops.io.dump(_fit(half, k + 1), here / f"ref{k}.skops")
    skops.io.dump(_fit(reference[reference["label"] != "d"], 9), here / "three_classes.skops")
    return here


def _references(folder: Path) -> list[str]:
    return [str(folder / f"ref{k}.skops") for k in range(N_REFERENCES)]


def _command(folder: Path, *more: str) -> list[str]:
    return [
        "audit",
        str(folder / "target.skops"),
        "--train",
        str(folder / "train.csv"),
        "--population",
        str(folder / "population.csv"),
        "--label-column",
        "label",
        "--features",
        ",".join(f"x{i}" for i in range(8)),
        "--quiet",
        *more,
    ]


def test_three_attacks_end_to_end(
    folder: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    validate_json: Any,
) -> None:
    out, report = tmp_path / "out.json", tmp_path / "out.html"
    args = ["--reference-models", *_references(folder), "--attack", "loss", "lira", "rmia"]
    more = (
        "--json",
        str(out),
        "--report",
        str(report),
        "--max-epsilon",
        "100",
        "--match-columns-by-position",
    )
    assert main(_command(folder, *args, *more)) == 0
    printed = capsys.readouterr().out
    document = json.loads(out.read_text())
    validate_json("audit", document)
    attacks = {record["attack"]: record for record in document["attacks"]}
    assert list(attacks) == ["loss", "lira", "rmia"]
    # The headline is the loss attack's; its record repeats it.
    assert attacks["loss"]["epsilon_star"] == document["epsilon_star"]
    assert attacks["loss"]["epsilon_lower_bound"] == document["epsilon_lower_bound"]
    # Every population record is scored by the loss attack and LiRA; RMIA sets z aside.
    assert attacks["lira"]["n_nonmembers"] == attacks["loss"]["n_nonmembers"] == 300
    rmia = attacks["rmia"]["settings"]
    assert rmia["z_records"] + rmia["scored_population_records"] == 300
    assert attacks["rmia"]["n_nonmembers"] == rmia["scored_population_records"] == 225
    assert attacks["lira"]["settings"]["variance"] == "global"  # 6 < 64 reference models
    assert len(document["provenance"]["reference_models"]) == N_REFERENCES
    # Measured on these models: AUC loss 0.675, LiRA 0.722, RMIA 0.779 (the formulas
    # themselves are checked against scipy and by hand in
    # tests/statistics/attacks/test_attack_scores.py).
    assert attacks["lira"]["auc"] > attacks["loss"]["auc"] + 0.02
    assert attacks["rmia"]["auc"] > attacks["loss"]["auc"] + 0.02
    for record in attacks.values():
        assert [reading["fpr"] for reading in record["tpr_at_fpr"]] == [0.001, 0.01]
        assert record["gate"]["rule"] == "significant"
        assert record["gate"]["leak_found"]  # measured p-values: 3e-21, 5e-7, 2e-21
    # The strongest has the largest lower bound, then the largest Epsilon*.
    strongest = max(attacks.values(), key=lambda r: (r["epsilon_lower_bound"], r["epsilon_star"]))
    assert document["strongest_attack"] == strongest["attack"]
    assert f"strongest attack: {strongest['attack']}" in printed
    for name in ("loss", "lira", "rmia"):
        assert f"attack {name}: Epsilon* {attacks[name]['epsilon_star']:.4f}" in printed
    # The gate is over the three attacks, each leak test at level 0.05 / 3.
    gate = document["gate"]
    assert (gate["n_tests"], gate["level"]) == (3, pytest.approx(0.05 / 3))
    counted = {
        name: record["epsilon_star"] if record["gate"]["leak_p_value"] < 0.05 / 3 else 0.0
        for name, record in attacks.items()
    }
    assert gate["statistic"] == max(counted.values())
    seconds = document["provenance"]["seconds"]
    assert 0 < seconds["attacks"] <= seconds["total"]
    assert "slices" not in seconds
    assert counted[gate["test"]] == gate["statistic"]
    assert document["passed"] is True
    assert f"(the {gate['test']} attack's, the largest statistic of 3 attacks" in printed
    _check_attack_chart(report.read_text("utf-8"), attacks, strongest["attack"])


def _check_attack_chart(html: str, attacks: dict[str, Any], strongest: str) -> None:
    """One ROC line per attack (the strongest marked), the table's TPRs as marks, the
    records each attack used in the caption, and nothing drawn at NaN or infinity."""
    start = html.index('<figure id="fig-attacks">')
    figure = html[start : html.index("</figure>", start)]
    assert html.index('<table id="attacks-table">') < start
    for name, record in attacks.items():
        css = f"attack-{name}" + (" strongest" if name == strongest else "")
        assert figure.count(f'<polyline class="{css}"') == 1, name
        for reading in record["tpr_at_fpr"]:
            assert f"{name}: TPR {reading['tpr_observed']:.4g} at" in figure
    assert figure.count("<polyline") == 3 + 2  # the attacks, the diagonal, the bound
    assert re.search(r"\b(nan|inf|infinity)\b", figure, flags=re.IGNORECASE) is None
    caption = " ".join(figure[figure.index("<figcaption>") :].split())
    assert "rmia: 300 members and 225 non-members" in caption
    assert "75 population records are set aside as its z records" in caption


def test_only_reference_attacks_make_the_first_one_the_headline(
    folder: Path, tmp_path: Path
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EpsstarWarning)
        result = audit_files(
            folder / "target.skops",
            folder / "train.csv",
            folder / "population.csv",
            label_column="label",
            features=[f"x{i}" for i in range(8)],
            attack=AttackSettings(("rmia", "lira"), tuple(_references(folder)[:2])),
        )
    assert [attack.name for attack in result.attacks] == ["rmia", "lira"]
    assert result.epsilon == result.attacks[0].epsilon
    assert result.epsilon.n_population == result.attacks[0].n_nonmembers
    assert result.to_dict()["attacks"][1]["settings"]["reference_models"] == 2
    from epsstar.cli.commands.audit import format_summary

    assert "the headline is the rmia attack's (no loss attack asked for)" in format_summary(result)
    from epsstar.reports import render

    html = render(result, tmp_path / "report.html").read_text("utf-8")
    table = html[html.index('<table id="attacks-table">') :]
    table = table[: table.index("</table>")]
    assert "the headline above is the rmia attack's" in " ".join(table.split())
    rows = re.findall(r"<tr(?: class=\"strongest\")?><td>(\w+)", table)
    assert rows == ["rmia", "lira"]
    assert table.count("(strongest)") == 1
    assert f"<td>{result.to_dict()['strongest_attack']} (strongest)</td>" in table
    for attack in result.to_dict()["attacks"]:
        assert f'<td class="num">{attack["auc"]:.4f}</td>' in table
    # 225 and 300 non-members: TPR at 0.1 % FPR is that of the test flagging none.
    assert "With fewer than 1,000 non-members no test has an observed FPR between 0 and" in table
    assert "An uninformative attack" not in table  # said only where one is


def test_an_attack_s_warnings_name_the_attack() -> None:
    from epsstar.audit.attacks.prefixed_warnings import prefixed_warnings
    from epsstar.exceptions import PoorFitWarning

    expected = pytest.warns(PoorFitWarning, match="^the lira attack's scores: a poor fit$")
    with expected, prefixed_warnings("the lira attack's scores: "):
        warnings.warn(PoorFitWarning("a poor fit"), stacklevel=1)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--attack", "lira"], "the lira attack needs reference models (--reference-models)"),
        (
            ["--attack", "rmia", "--reference-models", "missing.skops"],
            "reference model: no such file. Found",
        ),
        (
            ["--attack", "lira", "--reference-models", "three_classes.skops"],
            "must stand for the target model's classes ['a', 'b', 'c', 'd'], in that order. "
            "Found ['a', 'b', 'c'].",
        ),
        (["--attack", "lira", "lira", "--reference-models", "ref0.skops"], "'lira' twice"),
        (
            ["--reference-models", "ref0.skops"],
            "reference models are used only by the lira, rmia and ref attacks",
        ),
        (["--attack", "strong"], "invalid choice: 'strong'"),
        (
            ["--attack", "rmia", "--reference-models", "ref0.skops", "--rmia-a", "1.5"],
            "--rmia-a must be in [0, 1]. Found 1.5.",
        ),
    ],
)
def test_bad_attack_input_is_one_line_exit_2_and_writes_nothing(
    folder: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    options: list[str],
    message: str,
) -> None:
    named = [str(folder / word) if word.endswith(".skops") else word for word in options]
    out = tmp_path / "out.json"
    try:
        code = main(_command(folder, *named, "--json", str(out)))
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    err = capsys.readouterr().err
    lines = [line for line in err.strip().splitlines() if not line.startswith("epsstar: warning")]
    assert code == 2, err
    assert message in lines[-1]
    if "invalid choice" not in message:  # argparse prints its usage first
        assert len(lines) == 1, err
    assert not out.exists()


def test_attacks_find_no_leak_where_the_members_were_never_seen(folder: Path) -> None:
    """ "Members" and population records from the same pool, none seen by the target: under
    the default gate (significant) each attack's statistic is 0 in most splits."""
    pool = pd.read_csv(folder / "population.csv")
    zeros = {"loss": 0, "lira": 0, "rmia": 0}
    seeds = range(5)
    for seed in seeds:
        order = np.random.default_rng(100 + seed).permutation(len(pool))
        split = folder / f"split{seed}"
        split.mkdir(exist_ok=True)
        pool.iloc[order[:150]].to_csv(split / "unseen.csv", index=False)
        pool.iloc[order[150:]].to_csv(split / "population.csv", index=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EpsstarWarning)
            result = audit_files(
                folder / "target.skops",
                split / "unseen.csv",
                split / "population.csv",
                label_column="label",
                features=[f"x{i}" for i in range(8)],
                attack=AttackSettings(("loss", "lira", "rmia"), tuple(_references(folder))),
                seed=seed,
            )
        for attack in result.attacks:
            assert attack.gate is not None
            zeros[attack.name] += attack.gate.value == 0.0
    assert all(count >= 4 for count in zeros.values()), zeros


def test_reference_classes_are_matched_as_labels_are() -> None:
    from epsstar.audit.attacks.references import check_stated_classes
    from epsstar.audit.data.tables import LabelMap
    from epsstar.exceptions import InvalidInputError

    target = LabelMap((0, 1))
    check_stated_classes(("0", "1"), target, Path("r.onnx"))  # the same classes, written as text
    check_stated_classes(None, target, Path("r.onnx"))  # states none: its width decides
    with pytest.raises(InvalidInputError, match=r"in that order. Found \['1', '0'\]\.$"):
        check_stated_classes((1, 0), target, Path("r.onnx"))
    with pytest.raises(InvalidInputError, match=r"Found \['0', '1', '2'\]\.$"):
        check_stated_classes((0, 1, 2), target, Path("r.onnx"))


def test_slices_of_rmia_count_only_the_records_it_scores(folder: Path, tmp_path: Path) -> None:
    from epsstar.audit.attacks.kinds.rmia import z_split

    out = tmp_path / "out.json"
    args = ["--reference-models", *_references(folder), "--attack", "rmia", "--slice-by", "label"]
    assert main(_command(folder, *args, "--json", str(out))) == 0
    sliced = json.loads(out.read_text())["slices"]
    assert sliced["attack"] == "rmia"
    population = pd.read_csv(folder / "population.csv")["label"].to_numpy()
    scored, _ = z_split(population.size, 0)
    expected = pd.Series(population[scored]).value_counts()
    members = pd.read_csv(folder / "train.csv")["label"].value_counts()
    for row in sliced["slices"]:
        assert row["n_nonmembers"] == expected[row["value"]]
        assert row["n_members"] == members[row["value"]]
    assert sum(row["n_nonmembers"] for row in sliced["slices"]) == 225


def test_references_read_each_table_once_for_the_same_log_odds(folder: Path) -> None:
    """The reference models share one read of each table; every model's log-odds are, bit
    for bit, those it gives streamed on its own (small batches: several per table)."""
    from epsstar.audit.data.reading import Tables
    from epsstar.audit.engines.references import log_odds_of, reference_confidences
    from epsstar.audit.engines.streaming import stream_table
    from epsstar.audit.model.plugins import loader_for_path

    paths = [Path(path) for path in _references(folder)[:3]]
    reading = Tables(
        folder / "train.csv",
        folder / "population.csv",
        "label",
        features=[f"x{i}" for i in range(8)],
        batch_size=64,
    )
    target = loader_for_path(folder / "target.skops")[0].load(
        folder / "target.skops", outputs=None, trust=False
    )
    match = reading.match(target, "train", folder / "target.skops")
    label_map = stream_table(target, reading.read("train", match), classes=target.classes).label_map
    together = reference_confidences(paths, reading, label_map)
    for k, path in enumerate(paths):
        model = loader_for_path(path)[0].load(path, outputs=None, trust=False)
        alone = log_odds_of(model, path, reading, label_map)
        np.testing.assert_array_equal(together.train[k], alone[0])
        np.testing.assert_array_equal(together.population[k], alone[1])
    assert together.train.shape == (3, 300)
    assert not np.array_equal(together.train[0], together.train[1])


class _Counted:
    """A model that hands every call to ``model`` and keeps the rows of each call's input."""

    def __init__(self, model: Any, rows: list[int]) -> None:
        self._model, self._rows = model, rows

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def predict(self, features: Any) -> Any:
        self._rows.append(len(features))
        return self._model.predict(features)


@pytest.mark.parametrize("loss", ["logit", "cross_entropy"])
def test_the_target_and_its_references_score_each_batch_of_one_read(
    folder: Path, loss: LossName, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reference models ride on the target's pass over each table (one read of it), each
    model scored batch by batch, and give, bit for bit, the log-odds of the model-by-model
    path (the target's too, computed from the same predictions when its loss is not the
    logit loss)."""
    from epsstar.audit.data import tables as data_tables
    from epsstar.audit.data.reading import Tables
    from epsstar.audit.engines import references, streaming
    from epsstar.audit.engines.one_pass import SharedReferences
    from epsstar.audit.model.plugins import loader_for_path

    paths = [Path(path) for path in _references(folder)]
    reading = Tables(
        folder / "train.csv",
        folder / "population.csv",
        "label",
        features=[f"x{i}" for i in range(8)],
        batch_size=64,
        loss=loss,
    )
    target_path = folder / "target.skops"
    target = loader_for_path(target_path)[0].load(target_path, outputs=None, trust=False)
    shared = SharedReferences.load(target, paths, reading)
    rows: list[int] = []
    shared = SharedReferences(
        target,
        tuple((_Counted(model, rows), path) for model, path in shared.loaded),
        shared.models,
        shared.matches,
    )
    reads: list[int] = []
    original = data_tables.iter_batches

    def counted(*args: Any, **kwargs: Any) -> Any:
        reads.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(streaming, "iter_batches", counted)
    monkeypatch.setattr(references, "iter_batches", counted)
    streamed = []
    label_map = None
    for role in ("train", "population"):
        match = reading.match(target, role, target_path)
        read = reading.read(role, match)
        scores = shared.scores(read, match)
        table = streaming.stream_table(
            target, read, classes=target.classes, label_map=label_map, scorer=scores
        )
        label_map = table.label_map
        streamed.append((scores, table.losses))
    assert label_map is not None
    inputs = shared.inputs((streamed[0], streamed[1]), reading, label_map)
    assert len(reads) == 2  # one read per table, for the target and the six references
    # Every reference model saw the batches, never a whole table: memory follows the batch.
    assert max(rows) == 64
    assert sum(rows) == N_REFERENCES * 600
    monkeypatch.undo()
    # The model-by-model path: the target streamed again, the references on their own reads.
    before_target = references.log_odds_of(target, target_path, reading, label_map)
    before = references.reference_confidences(paths, reading, label_map)
    assert inputs.references is not None
    assert inputs.target is not None
    np.testing.assert_array_equal(inputs.references.train, before.train)
    np.testing.assert_array_equal(inputs.references.population, before.population)
    np.testing.assert_array_equal(inputs.target[0], before_target[0])
    np.testing.assert_array_equal(inputs.target[1], before_target[1])
    assert inputs.references.train.shape == (N_REFERENCES, 300)


def test_an_audit_with_references_reads_each_table_once(
    folder: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from epsstar.audit.data import tables as data_tables
    from epsstar.audit.engines import references, streaming

    reads: list[str] = []
    original = data_tables.iter_batches

    def counted(path: Any, *args: Any, **kwargs: Any) -> Any:
        reads.append(Path(path).name)
        return original(path, *args, **kwargs)

    monkeypatch.setattr(streaming, "iter_batches", counted)
    monkeypatch.setattr(references, "iter_batches", counted)
    args = ["--reference-models", *_references(folder), "--attack", "lira", "rmia"]
    assert main(_command(folder, *args, "--json", str(tmp_path / "out.json"))) == 0
    assert sorted(reads) == ["population.csv", "train.csv"]


def test_lira_against_the_target_itself_is_uninformative_and_left_out_of_the_gate(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], validate_json: Any
) -> None:
    """With the target as its only reference model, LiRA scores every record 0: the audit
    reports it uninformative, heads with the first informative attack, and gates over the
    others alone."""
    out, report = tmp_path / "out.json", tmp_path / "out.html"
    args = ["--reference-models", str(folder / "target.skops"), "--attack", "lira", "rmia"]
    more = ("--json", str(out), "--report", str(report), "--max-epsilon", "100")
    assert main(_command(folder, *args, *more, "--match-columns-by-position")) == 0
    printed = capsys.readouterr().out
    reason = "every record scores the same (the reference models are copies of the target?)"
    assert f"  attack lira: uninformative — {reason}\n" in printed
    assert "the headline is the rmia attack's (no loss attack asked for)" in printed
    document = json.loads(out.read_text())
    validate_json("audit", document)
    lira, rmia = document["attacks"]
    assert (lira["uninformative"], lira["reason"], lira["gate"]) == (True, reason, None)
    assert document["strongest_attack"] == "rmia"
    assert document["epsilon_star"] == rmia["epsilon_star"] > 0
    assert document["gate"] == rmia["gate"]  # one informative attack: its own gate
    html = report.read_text("utf-8")
    assert "the headline above is the rmia attack's" in " ".join(html.split())
    assert f"uninformative — {reason}" in html
    assert "<td>rmia (strongest)</td>" in html

    # Beside the loss attack the gate is over 2 tests, each at level (1 - c)/2, not 3.
    beside_loss = [*args[:3], "loss", "lira", "rmia"]
    assert main(_command(folder, *beside_loss, *more, "--match-columns-by-position")) == 0
    gated = json.loads(out.read_text())
    validate_json("audit", gated)
    assert gated["gate"]["n_tests"] == 2
    assert gated["gate"]["test"] in {"loss", "rmia"}
    assert [a["attack"] for a in gated["attacks"] if a.get("uninformative")] == ["lira"]
