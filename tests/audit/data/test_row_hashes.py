"""The row hash of the shared-row check, against a direct computation row by row."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from epsstar.audit.data.checks import _MULTIPLIERS, row_hashes
from epsstar.audit.model.features import Features

MODULUS = 2**64


def _by_row(features: Features, labels: np.ndarray) -> list[int]:
    """sum_k bits(float32(v_k) + 0) * m_k mod 2**64 over a row's numbers (columns in order,
    a tensor column's values in C order), plus the pandas hashes of text and label."""
    rows = len(labels)
    numeric = [np.asarray(c).reshape(rows, -1) for c in features.columns if c.dtype.kind in "biuf"]
    text = [c for c in features.columns if c.dtype.kind not in "biuf"]
    extra = [pd.util.hash_array(np.asarray(c, dtype=object)) for c in text]
    extra.append(pd.util.hash_array(np.asarray(labels, dtype=np.int64)))
    hashes = []
    for i in range(rows):
        values = [v for flat in numeric for v in flat[i]]
        total = 0
        for k, value in enumerate(values):
            with np.errstate(over="ignore"):  # 1e39 is read as float32 infinity, on purpose
                rounded = np.float32(value) + np.float32(0.0)
            bits = int(np.array([rounded]).view(np.uint32)[0])
            total += bits * int(_MULTIPLIERS[k % len(_MULTIPLIERS)])
        for k, hashed in enumerate(extra):
            total += int(hashed[i]) * int(_MULTIPLIERS[(1000 + k) % len(_MULTIPLIERS)])
        hashes.append(total % MODULUS)
    return hashes


@settings(max_examples=25, deadline=None)
@given(
    rows=st.integers(1, 6),
    width=st.integers(1, 70),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_hash_is_the_sum_of_bit_patterns_times_multipliers(
    rows: int, width: int, seed: int
) -> None:
    # Exact integers: the hash is defined modulo 2**64, so any change in the order or the
    # rounding of the terms (a wrong multiplier, a missed -0, float64 bits) shows.
    rng = np.random.default_rng(seed)
    columns: list[np.ndarray] = []
    for j in range(width):
        kind = j % 4
        if kind == 0:
            columns.append(rng.integers(0, 3, rows).astype(np.uint8))
        elif kind == 1:
            columns.append(rng.choice([-0.0, 0.0, 1.5, 1e39, -2.25], rows))
        elif kind == 2:
            columns.append(rng.integers(-5, 5, rows).astype(np.int64))
        else:
            columns.append(rng.random(rows) < 0.5)
    features = Features(tuple(f"c{j}" for j in range(width)), tuple(columns))
    labels = rng.integers(0, 3, rows).astype(np.int64)
    assert row_hashes(features, labels).tolist() == _by_row(features, labels)


def test_a_tensor_column_text_and_widths_past_the_multipliers_are_hashed_alike() -> None:
    rng = np.random.default_rng(3)
    rows = 4
    tensor = rng.normal(size=(rows, 2, 3)).astype(np.float32)
    wide = rng.integers(0, 2, (rows, len(_MULTIPLIERS) + 5)).astype(np.float64)
    text = np.array(["a", "b", "a", "c"], dtype=object)
    labels = np.array([0, 1, 0, 1], dtype=np.int64)
    for features in (
        Features(("X",), (tensor,)),
        Features.from_matrix(wide),
        Features(("t", "x"), (text, wide[:, 0])),
    ):
        assert row_hashes(features, labels).tolist() == _by_row(features, labels)


def test_equal_rows_hash_equal_whatever_their_storage_type() -> None:
    labels = np.array([1, 1], dtype=np.int64)
    stored = [
        Features(("a", "b"), (np.array([3, 0], dtype=np.int16), np.array([True, False]))),
        Features(("a", "b"), (np.array([3.0, -0.0]), np.array([1.0, 0.0], dtype=np.float32))),
    ]
    first, second = (row_hashes(f, labels) for f in stored)
    assert first.tolist() == second.tolist()
    assert first[0] != first[1]


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.integers(0, 2**64 - 1) | st.integers(0, 6), max_size=30),
    among=st.lists(st.integers(0, 2**64 - 1) | st.integers(0, 6), max_size=30),
)
def test_the_shared_row_lookup_agrees_with_isin(values: list[int], among: list[int]) -> None:
    from epsstar.audit.data.checks import _occurs_in

    mine = np.array(values, dtype=np.uint64)
    theirs = np.array(among, dtype=np.uint64)
    assert _occurs_in(mine, theirs).tolist() == np.isin(mine, theirs).tolist()
