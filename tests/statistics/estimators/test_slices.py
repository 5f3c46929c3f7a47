"""Epsilon* per slice: the statistics, the slice keys read from files, ``--slice-by`` end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from epsstar.audit.attacks.slices import MAX_SLICES, read_slice_keys
from epsstar.exceptions import InputFileError, InvalidInputError
from epsstar.statistics.bounds.from_counts import bonferroni_confidence
from epsstar.statistics.bounds.held_out_bound import split_lower_bound
from epsstar.statistics.estimators.estimator import epsilon_star, estimate
from epsstar.statistics.estimators.methods import Bootstrap, method_config
from epsstar.statistics.estimators.slices import SlicedScores, slice_estimates
from tests.conftest import invoke

DELTA = 1e-4


def _sliced(rng: np.random.Generator) -> SlicedScores:
    """Slice 0 leaks (members' scores lower), slice 1 does not, slice 2 is tiny."""
    member_codes = np.repeat([0, 1, 2], [800, 700, 20])
    nonmember_codes = np.repeat([0, 1, 2], [900, 600, 30])
    members = np.concatenate(
        [rng.normal(-1.5, 1, 800), rng.normal(0, 1, 700), rng.normal(0, 1, 20)]
    )
    nonmembers = rng.normal(0, 1, nonmember_codes.size)
    # Shuffle so that a slice's records are not contiguous.
    m, p = rng.permutation(members.size), rng.permutation(nonmembers.size)
    return SlicedScores(members[m], nonmembers[p], member_codes[m], nonmember_codes[p], 3)


def test_each_slice_is_the_estimator_on_its_records() -> None:
    scored = _sliced(np.random.default_rng(1))
    config = method_config("tails-tested")
    table = slice_estimates(
        scored, config, delta=DELTA, minimum=100, seed=3, interval=Bootstrap(0.9, 20)
    )
    assert table.confidence_each == pytest.approx(1 - 0.05 / 2)  # two slices estimated
    for code in (0, 1):
        members = scored.members[scored.member_codes == code]
        nonmembers = scored.nonmembers[scored.nonmember_codes == code]
        got = table.estimates[code]
        assert (got.n_members, got.n_nonmembers) == (members.size, nonmembers.size)
        # A slice keeps its records' order, so its seeded halves are those of this call.
        direct = estimate(
            members,
            nonmembers,
            config,
            delta=DELTA,
            seed=3,
            interval=Bootstrap(0.9, 20),
        )
        assert got.epsilon is not None
        assert got.lower_bound is not None
        assert got.empirical is not None
        assert got.epsilon.epsilon == pytest.approx(direct.epsilon, abs=1e-9)
        assert got.empirical.epsilon == pytest.approx(
            epsilon_star(members, nonmembers, delta=DELTA, method="empirical").epsilon
        )
        bound = split_lower_bound(
            members, nonmembers, delta=DELTA, confidence=table.confidence_each, seed=3
        )
        assert got.lower_bound.epsilon == bound.epsilon
        assert got.lower_bound.confidence == pytest.approx(0.975)
    leaking, quiet = table.estimates[0].epsilon, table.estimates[1].epsilon
    assert leaking is not None
    assert quiet is not None
    assert leaking.epsilon > 1.0 > quiet.epsilon
    tiny = table.estimates[2]
    assert tiny.epsilon is None
    assert tiny.lower_bound is None
    assert tiny.unavailable is not None
    assert "at least 100" in tiny.unavailable


def test_bonferroni_confidence() -> None:
    assert bonferroni_confidence(0.95, 1) == pytest.approx(0.95)
    assert bonferroni_confidence(0.95, 5) == pytest.approx(0.99)
    assert bonferroni_confidence(0.9, 0) == pytest.approx(0.9)


def test_constant_scores_leave_the_slice_unavailable_not_the_table() -> None:
    codes = np.repeat([0, 1], 200)
    rng = np.random.default_rng(0)
    members = np.concatenate([np.full(200, 0.5), rng.normal(size=200)])
    nonmembers = np.concatenate([np.full(200, 0.5), rng.normal(size=200)])
    table = slice_estimates(
        SlicedScores(members, nonmembers, codes, codes, 2),
        method_config("parametric"),
        delta=DELTA,
        minimum=100,
    )
    assert table.estimates[1].epsilon is not None
    assert table.estimates[0].unavailable  # every score equal: no distribution to fit


@pytest.mark.parametrize(
    ("codes", "message"),
    [(np.array([0, 3]), "0..2"), (np.array([0]), "one code per score")],
)
def test_sliced_scores_refuse_codes_that_do_not_fit(codes: Any, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        SlicedScores(np.zeros(2), np.zeros(1), codes, np.zeros(1, dtype=np.int64), 3)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=60), st.integers(0, 2**32 - 1))
def test_groups_partition_the_records(codes: list[int], seed: int) -> None:
    rng = np.random.default_rng(seed)
    member_codes = np.array(codes, dtype=np.int64)
    nonmember_codes = rng.integers(0, 5, size=len(codes))
    members, nonmembers = rng.normal(size=len(codes)), rng.normal(size=len(codes))
    scored = SlicedScores(members, nonmembers, member_codes, nonmember_codes, 5)
    for code, (got_m, got_p) in enumerate(scored.groups()):
        assert sorted(got_m) == sorted(members[member_codes == code])
        assert sorted(got_p) == sorted(nonmembers[nonmember_codes == code])


# ----------------------------------------------------------------- keys read from files


def test_keys_compare_numbers_as_numbers_and_missing_last(tmp_path: Path) -> None:
    train = tmp_path / "train.csv"
    population = tmp_path / "population.csv"
    train.write_text("g,y\n10,0\n2,1\n1.0,0\n,1\n")
    population.write_text("g,y\n1,0\n2.0,1\n")
    keys = read_slice_keys(train, population, "g")
    assert keys.values == ("1", "2", "10", None)
    assert keys.train.tolist() == [2, 1, 0, 3]
    assert keys.population.tolist() == [0, 1]


def test_keys_of_text_and_parquet(tmp_path: Path) -> None:
    frame = pd.DataFrame({"g": ["b", "a", None, "b"], "y": [0, 1, 0, 1]})
    frame.to_parquet(tmp_path / "train.parquet")
    frame.iloc[:2].to_csv(tmp_path / "population.csv", index=False)
    keys = read_slice_keys(tmp_path / "train.parquet", tmp_path / "population.csv", "g")
    assert keys.values == ("a", "b", None)
    assert keys.train.tolist() == [1, 0, 2, 1]
    assert keys.population.tolist() == [1, 0]


def test_keys_refuse_too_many_values_and_unknown_columns(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("g,y\n" + "".join(f"{i},0\n" for i in range(MAX_SLICES + 1)))
    with pytest.raises(InvalidInputError, match=f"at most {MAX_SLICES} distinct.*Found 51"):
        read_slice_keys(path, path, "g")
    with pytest.raises(InputFileError, match="column 'h' must be one of its columns"):
        read_slice_keys(path, path, "h")


def test_keys_refuse_an_image_column(tmp_path: Path) -> None:
    path = tmp_path / "images.npz"
    np.savez(path, x=np.zeros((4, 1, 2, 2)), y=np.arange(4))
    with pytest.raises(InvalidInputError, match="one value per record"):
        read_slice_keys(path, path, "x")


# ----------------------------------------------------------------- --slice-by end to end


@pytest.fixture(scope="module")
def leaky_group(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tree that memorises group A (random labels) and generalises on group B (labels a
    function of the features); group C holds 30 records a side."""
    import skops.io
    from sklearn.tree import DecisionTreeClassifier

    here = tmp_path_factory.mktemp("slices")
    rng = np.random.default_rng(0)

    def table(n_a: int, n_b: int, n_c: int) -> pd.DataFrame:
        n = n_a + n_b + n_c
        x = rng.normal(size=(n, 3))
        group = np.repeat(["A", "B", "C"], [n_a, n_b, n_c])
        label = np.where(group == "A", rng.integers(0, 2, n), (x[:, 0] > 0).astype(int))
        return pd.DataFrame({"x0": x[:, 0], "x1": x[:, 1], "x2": x[:, 2], "g": group, "y": label})

    train, population = table(600, 600, 30), table(600, 600, 30)
    train.to_csv(here / "train.csv", index=False)
    population.to_csv(here / "population.csv", index=False)
    features = train[["x0", "x1", "x2"]].to_numpy()
    # Group B's rule is learnt near the root and group A's random labels are memorised in
    # leaves of four or more records: A's members sit far more often at high probability
    # for their label than its non-members.
    model = DecisionTreeClassifier(random_state=0, min_samples_leaf=4)
    skops.io.dump(model.fit(features, train["y"].to_numpy()), here / "tree.skops")
    return here


def _audit(folder: Path, *more: str) -> list[str]:
    return [
        "audit",
        str(folder / "tree.skops"),
        "--train",
        str(folder / "train.csv"),
        "--population",
        str(folder / "population.csv"),
        "--label-column",
        "y",
        "--features",
        "x0,x1,x2",
        "--trust",
        "--quiet",
        *more,
    ]


def test_slice_by_end_to_end(
    leaky_group: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    validate_json: Any,
) -> None:
    out = tmp_path / "out.json"
    args = _audit(leaky_group, "--slice-by", "g", "--interval", "0.9", "--n-bootstrap", "20")
    report = tmp_path / "report.html"
    code, printed, _ = invoke([*args, "--json", str(out), "--report", str(report)], capsys)
    assert code == 0
    document = json.loads(out.read_text())
    validate_json("audit", document)
    sliced = document["slices"]
    assert (sliced["column"], sliced["attack"], sliced["delta"]) == ("g", "loss", document["delta"])
    rows = {row["value"]: row for row in sliced["slices"]}
    assert list(rows) == ["A", "B", "C"]
    assert [(rows[v]["n_members"], rows[v]["n_nonmembers"]) for v in "ABC"] == [
        (600, 600),
        (600, 600),
        (30, 30),
    ]
    assert rows["A"]["epsilon_lower_bound"] > 0.5  # memorised: the bound sees it
    assert rows["A"]["epsilon_star"] > rows["B"]["epsilon_star"]
    assert rows["A"]["epsilon_star_interval"]["level"] == 0.9
    assert rows["C"]["epsilon_star"] is None
    assert "at least" in rows["C"]["unavailable"]
    assert sliced["confidence_each"] == pytest.approx(1 - 0.05 / 2)
    seconds = document["provenance"]["seconds"]
    assert "attacks" not in seconds  # the loss attack alone
    assert 0 < seconds["slices"] <= seconds["total"]
    assert "slices of 'g' (loss attack" in printed
    assert "no estimate for 1 slice(s) with fewer than" in printed
    assert ": C" in printed
    _check_report(report.read_text(), rows)


def _check_report(html: str, rows: dict[str, Any]) -> None:
    """The report's slice section: a chart row per estimated slice, the table, the small
    slices listed apart."""
    section = html[html.index('<section id="slices">') : html.index('<section id="losses">')]
    chart = section[section.index('<figure id="fig-slices">') : section.index("</figure>")]
    assert chart.count('class="slice-estimate"') == 2 + 1  # slices A and B, and the legend's
    assert chart.count('class="slice-interval"') == 2 + 1
    assert "NaN" not in chart
    assert "inf" not in chart.replace("information", "")
    assert "A · 600 members, 600 non-members" in chart
    table = section[section.index('<table id="slices-table">') : section.index("</table>")]
    for value in "AB":
        assert f'<td class="num">{rows[value]["epsilon_star"]:.4f}</td>' in table
        assert f'<td class="num">{rows[value]["epsilon_lower_bound"]:.4f}</td>' in table
    assert "<td>C</td>" not in table
    assert "No estimate for 1 slice with fewer than 100 records on a side" in section
    assert "C (30 / 30)" in section
    assert "all of them hold at once with 95 % confidence" in section


def test_slice_by_without_it_is_null_and_with_dask_is_refused(
    leaky_group: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.json"
    report = tmp_path / "report.html"
    code, _, _ = invoke([*_audit(leaky_group), "--json", str(out), "--report", str(report)], capsys)
    assert code == 0
    assert json.loads(out.read_text())["slices"] is None
    assert 'id="slices"' not in report.read_text()
    refused = tmp_path / "refused.json"
    code, _, err = invoke(
        [*_audit(leaky_group, "--slice-by", "g", "--engine", "dask"), "--json", str(refused)],
        capsys,
    )
    assert code == 2
    assert "single-process engine" in err
    assert len(err.strip().splitlines()) == 1
    assert not refused.exists()
    code, _, err = invoke([*_audit(leaky_group, "--slice-by", "x0")], capsys)
    assert code == 2
    assert "at most 50 distinct values" in err
    assert len(err.strip().splitlines()) == 1
