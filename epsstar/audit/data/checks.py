"""Checks that the training and population data can support an audit at all.

Valid-looking data can still make Epsilon* meaningless:

* the same file, or two files with the same content, as training and population data:
  both sides are members, every test has FPR = 1 − FNR and Epsilon* is 0 whatever the model
  leaks. :func:`refuse_same_data` refuses it;
* members among the population records. If a fraction ``f`` of the population are
  training records, the FPR of any test is at least ``f`` times its TPR, so every ratio of
  eq. 7 is at most about ``1/f`` and Epsilon* at most about ``ln(1/f)`` (4.6 at 1 %), however
  much the model leaks; a release gate could pass on a leaky model. The rows of both tables
  are hashed (features rounded to float32, with the encoded label) and
  :func:`data_warnings` warns when more than :data:`MAX_SHARED_FRACTION` of the population
  rows also occur in the training data. Independent records of tabular data with
  categorical features coincide now and then (0.14 % of the UCI Adult test rows also occur
  in its training rows), so the threshold leaves room for that;
* labels of a single class on either side: Epsilon* then compares the losses of one class
  (or of one class against all), and an audit of a subset says little about the rest of
  the data;
* otherwise, class shares that differ between the two data sets (by more than
  :data:`MAX_SHARE_DIFFERENCE`, and significantly): the population is then not a sample of
  the training distribution, and the losses of different class mixes differ whether or
  not the model leaks, which moves Epsilon* either way.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from epsstar.audit.model.features import Features
from epsstar.audit.model.output_reading import OutputReading
from epsstar.exceptions import (
    ColumnOrderWarning,
    EpsstarWarning,
    InputFileError,
    OutputReadingWarning,
    SuspectDataWarning,
    UnseenCategoryWarning,
)

__all__ = [
    "MAX_SHARED_FRACTION",
    "MAX_SHARE_DIFFERENCE",
    "MIX_SIGNIFICANCE",
    "InputChecks",
    "TableScan",
    "check_inputs",
    "data_warnings",
    "refuse_same_data",
    "row_hashes",
    "shared_rows",
]

#: Population rows that also occur in the training data, above which the audit warns.
MAX_SHARED_FRACTION = 0.01
#: A class's share may differ this much between the two data sets before the audit warns
#: (and only when a chi-square test of homogeneity rejects at :data:`MIX_SIGNIFICANCE`).
MAX_SHARE_DIFFERENCE = 0.1
MIX_SIGNIFICANCE = 1e-3


@dataclass(frozen=True, slots=True)
class TableScan:
    """One table's row hashes and its number of rows per class (in class-index order).

    A table too large to hold a hash per row keeps those of a random ``hash_rate`` of its
    rows (:meth:`sampled`), chosen by the hash itself, so that a row occurring in both
    tables is kept in both or in neither; ``n_rows`` is then the table's rows.
    """

    hashes: NDArray[np.uint64]
    class_counts: NDArray[np.int64]
    n_rows: int | None = None
    hash_rate: float = 1.0

    @property
    def rows(self) -> int:
        return int(self.hashes.size) if self.n_rows is None else self.n_rows

    def sampled(self, rate: float) -> TableScan:
        """This scan with the hashes of a random ``rate`` of its rows."""
        kept = self.hashes[_hash_sample(self.hashes, rate)]
        return TableScan(kept, self.class_counts, self.rows, rate)


_MIX = np.uint64(0x9E3779B97F4A7C15)


def _hash_sample(hashes: NDArray[np.uint64], rate: float) -> NDArray[np.bool_]:
    """Rows kept in a ``rate`` sample: those whose remixed hash falls below ``rate``·2⁶⁴."""
    if rate >= 1:
        return np.ones(hashes.size, dtype=bool)
    with np.errstate(over="ignore"):
        mixed = hashes * _MIX
        mixed ^= mixed >> np.uint64(29)
    return np.asarray(mixed < np.uint64(min(math.floor(rate * 2.0**64), 2**64 - 1)))


def refuse_same_data(
    train: Path, population: Path, digests: Mapping[Literal["train", "population"], str]
) -> None:
    """Refuse one file, or two files with the same content, as both data sets.

    ``digests`` holds the SHA-256 of each file under ``"train"`` and ``"population"``.
    """
    if train.resolve() == population.resolve() or train.samefile(population):
        raise InputFileError(
            f"the training and population data must be different files: the same records on "
            f"both sides give Epsilon* = 0 whatever the model leaks. Found {str(train)!r} as both."
        )
    if digests["train"] == digests["population"]:
        raise InputFileError(
            f"the training and population data must differ: two files with the same content "
            f"give Epsilon* = 0 whatever the model leaks. Found {str(train)!r} and "
            f"{str(population)!r}, both with sha256 {digests['train'][:16]}..."
        )


_MULTIPLIERS = np.random.default_rng(20250611).integers(
    0, np.iinfo(np.uint64).max, size=4096, dtype=np.uint64, endpoint=True
) | np.uint64(1)
"""Fixed odd 64-bit multipliers of the row hash (one per value of a row, cycled past 4096)."""


def _multipliers(count: int, offset: int = 0) -> NDArray[np.uint64]:
    return np.asarray(np.resize(np.roll(_MULTIPLIERS, -offset), count), dtype=np.uint64)


def row_hashes(features: Features, labels: NDArray[np.int64]) -> NDArray[np.uint64]:
    """One hash per row of features and encoded label.

    Numbers and booleans are read as float32 (-0 as 0), so 3, 3.0 and True/1 hash alike
    whatever type the file stored, and a row's float32 bit patterns ``b_k`` are combined as
    ``sum_k b_k * m_k`` modulo 2**64 with fixed random odd multipliers ``m_k``; text columns
    and the label are hashed with pandas and added the same way. Equal rows always get
    equal hashes; two different rows collide with a probability of about 2**-64.

    The sum is taken one value position ``k`` at a time over the whole batch (a column, or
    one position of a tensor column), each a contiguous pass over reused buffers: unlike
    gathering rows first, nothing is transposed, which is what made hashing cost as much as
    running a small model (``benchmarks/audit_throughput.py``).
    """
    rows = len(labels)
    numeric = [c for c in features.columns if c.dtype.kind in "biuf"]
    text = [c for c in features.columns if c.dtype.kind not in "biuf"]
    total = np.zeros(rows, dtype=np.uint64)
    flats = [np.asarray(c).reshape(rows, -1) for c in numeric]
    multipliers = _multipliers(sum(flat.shape[1] for flat in flats))
    value = np.empty(rows, dtype=np.float32)
    term = np.empty(rows, dtype=np.uint64)
    position = 0
    with np.errstate(over="ignore"):
        for flat in flats:
            for k in range(flat.shape[1]):
                value[:] = flat[:, k]
                value += np.float32(0.0)  # -0 becomes 0
                np.multiply(value.view(np.uint32), multipliers[position], out=term, dtype=np.uint64)
                total += term
                position += 1
    others = [pd.util.hash_array(np.asarray(c, dtype=object)) for c in text]
    others.append(pd.util.hash_array(np.asarray(labels, dtype=np.int64)))
    with np.errstate(over="ignore"):
        for k, hashed in enumerate(others):
            total += np.asarray(hashed, dtype=np.uint64) * _multipliers(1, offset=1000 + k)[0]
    return total


def _single_class(role: str, scan: TableScan, classes: Sequence[object]) -> str | None:
    present = np.flatnonzero(scan.class_counts)
    if present.size != 1:
        return None
    label = classes[int(present[0])]
    return (
        f"the {role} labels hold a single class ({label!s}, all {scan.rows:,} rows): Epsilon* "
        f"then rests on the losses of that class alone and says little about the model's "
        f"other classes"
    )


def _class_mix(train: TableScan, population: TableScan, classes: Sequence[object]) -> str | None:
    """The classes' shares differ by more than :data:`MAX_SHARE_DIFFERENCE` and a
    chi-square test of homogeneity rejects at level :data:`MIX_SIGNIFICANCE`."""
    from scipy.stats import chi2_contingency

    table = np.stack([train.class_counts, population.class_counts])
    present = np.flatnonzero(table.sum(axis=0))
    table = table[:, present]
    shares = table / table.sum(axis=1, keepdims=True)
    gaps = np.abs(shares[0] - shares[1])
    if present.size < 2 or gaps.max() <= MAX_SHARE_DIFFERENCE:
        return None
    if chi2_contingency(table).pvalue >= MIX_SIGNIFICANCE:
        return None
    worst = int(np.argmax(gaps))
    label = classes[int(present[worst])]
    return (
        f"class {label!s} makes up {shares[0, worst]:.1%} of the training rows but "
        f"{shares[1, worst]:.1%} of the population rows: the population is not a sample of the "
        f"training data's distribution, so Epsilon* compares different mixes of classes"
    )


def _occurs_in(values: NDArray[np.uint64], among: NDArray[np.uint64]) -> NDArray[np.bool_]:
    """``np.isin(values, among)`` by binary search in the sorted ``among`` (several times
    faster than ``np.isin`` on hundreds of thousands of 64-bit hashes)."""
    ordered = np.sort(among)
    if ordered.size == 0:
        return np.zeros(values.shape, dtype=bool)
    where = np.minimum(np.searchsorted(ordered, values), ordered.size - 1)
    return np.asarray(ordered[where] == values)


def shared_rows(train: TableScan, population: TableScan) -> int:
    """Population rows whose features and label also occur in the training data (estimated
    as the count among the sampled rows over the rate when the scans keep a sample)."""
    found = int(np.count_nonzero(_occurs_in(population.hashes, train.hashes)))
    rate = min(train.hash_rate, population.hash_rate)
    return found if rate >= 1 else round(found / rate)


def data_warnings(
    train: TableScan, population: TableScan, classes: Sequence[object]
) -> list[tuple[str, bool]]:
    """One line per reason the data undermine the audit (see the module docstring), each
    with whether it fails a release gate: a single class and shared rows can hide a leak;
    a different class mix is the auditor's choice of population, and only reported."""
    found = [
        (warning, True)
        for warning in (
            _single_class("training", train, classes),
            _single_class("population", population, classes),
        )
        if warning is not None
    ]
    if not found:
        mix = _class_mix(train, population, classes)
        found += [] if mix is None else [(mix, False)]
    shared = shared_rows(train, population)
    fraction = shared / population.rows
    about = "about " if min(train.hash_rate, population.hash_rate) < 1 else ""
    if fraction > MAX_SHARED_FRACTION:
        found.append(
            (
                f"{about}{shared:,} of the {population.rows:,} population rows "
                f"({fraction:.1%}) also occur in the training data (more than "
                f"{MAX_SHARED_FRACTION:.0%}): members among the non-members bias Epsilon* "
                f"towards 0 (to at most about "
                f"ln(1/{fraction:.3g}) = {np.log(1.0 / fraction):.2f})",
                True,
            )
        )
    return found


#: What the release gate says when a warning can hide a leak.
GATE_BLOCKED = (
    "the release gate fails: with the warnings above, Epsilon* cannot show that the model "
    "is within --max-epsilon"
)


@dataclass(frozen=True, slots=True)
class InputChecks:
    """What an audit found suspect in its inputs, and how the model's outputs were read.

    ``found`` holds one ``(category, line, whether it fails a release gate)`` per warning.
    """

    output_reading: OutputReading
    shared_rows: int
    found: tuple[tuple[type[EpsstarWarning], str, bool], ...]

    def lines(self, *, gate: bool) -> tuple[list[tuple[type[EpsstarWarning], str]], bool]:
        """The warnings to raise (with a gate, also the gate's failure when one of them
        fails it), and whether one of them fails the gate."""
        found = [(category, line) for category, line, _ in self.found]
        blocked = any(blocks for _, _, blocks in self.found)
        if gate and blocked:
            found.append((SuspectDataWarning, GATE_BLOCKED))
        return found, blocked


def check_inputs(
    scans: tuple[TableScan, TableScan],
    classes: Sequence[object],
    by_position: str | None,
    output_reading: OutputReading,
    model_notes: Sequence[str] = (),
) -> InputChecks:
    """Check both tables for shared rows and single classes (:func:`data_warnings`), and
    add the warnings that columns were matched by position (``by_position``, the line, if
    any), that the model's outputs were read ambiguously, and what the model said about
    the records it read (``model_notes``: categories it never saw)."""
    train, population = scans
    found: list[tuple[type[EpsstarWarning], str, bool]] = [
        (SuspectDataWarning, line, blocks_gate)
        for line, blocks_gate in data_warnings(train, population, classes)
    ]
    if by_position is not None:
        found.append((ColumnOrderWarning, by_position, False))
    if output_reading.ambiguous:
        found.append((OutputReadingWarning, output_reading.describe(), True))
    found += [(UnseenCategoryWarning, note, False) for note in model_notes]
    return InputChecks(output_reading, shared_rows(train, population), tuple(found))
