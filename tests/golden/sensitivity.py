"""How far each number of a golden case may move under another machine's float32 kernels.

A case that audits a float32 model is run twice more with every loss of that model shifted
by its derived tolerance (``tests/numerics.py``, points 3, 5 and 6; ``tests/shifted_audit.py``):
the training losses down and the population losses up, then the other way. Each number that
moves is kept with the larger of its two moves in ``tolerances.json`` beside the case's
golden files, and is compared within it; every other number (whatever is computed in
float64 from fixed inputs) is compared as before. The shifted runs show what a knife's-edge
statistic does as well: a supremum whose maximising record switches under the shift moves
by the switch, and is compared by value.

The tolerance of a record's loss needs the model's weights in float64: they are read from
the fixture's scikit-learn twin (``tests/fixture_twins.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from tests.fixture_twins import twin_layers
from tests.golden.cases import NUMBER, Case, close, run_case, text_numbers_close
from tests.numerics import loss_tolerance, network_tolerance
from tests.shifted_audit import DIRECTIONS, shifted_losses


def fixture_tolerance(
    model: Any, features: Callable[[], np.ndarray], predictions: np.ndarray
) -> Any:
    """A fixture float32 model's loss tolerance against another machine's evaluation (None
    for a float64 model or a model without a scikit-learn twin)."""
    layers = twin_layers(Path(model.source))
    if layers is None or getattr(model, "input_dtype", None) == "float64":
        return None
    return loss_tolerance(network_tolerance(layers, features()), predictions, model.output_kind)


def tolerances(case: Case, reference: dict[str, Any], folder: Path) -> dict[str, float]:
    """Run ``case`` in ``folder`` with the losses shifted each way: how far each number of
    ``reference`` that the default comparison would not accept moved, by path."""
    found: dict[str, float] = {}
    for direction in DIRECTIONS:
        out = folder / f"shifted{direction:+d}"
        out.mkdir()
        with shifted_losses(direction, fixture_tolerance):
            shifted = run_case(case, out)
        for where, move in moves(reference, shifted, case.name):
            found[where] = max(found.get(where, 0.0), move)
    return found


def moves(reference: Any, shifted: Any, where: str) -> Iterator[tuple[str, float]]:
    """Each number of ``reference`` that ``shifted`` moves beyond the default comparison,
    by path and by how much (a number in a text is named by its path and ``#`` its place
    among the text's numbers)."""
    if isinstance(reference, dict) and isinstance(shifted, dict):
        for key in reference.keys() & shifted.keys():
            yield from moves(reference[key], shifted[key], f"{where}.{key}")
    elif isinstance(reference, list) and isinstance(shifted, list):
        if len(reference) == len(shifted):
            for index, (a, b) in enumerate(zip(reference, shifted, strict=True)):
                yield from moves(a, b, f"{where}[{index}]")
    elif isinstance(reference, str) and isinstance(shifted, str):
        a, b = NUMBER.findall(reference), NUMBER.findall(shifted)
        if len(a) == len(b):
            for index, (x, y) in enumerate(zip(a, b, strict=True)):
                if not text_numbers_close(x, y, last_place=True, tolerance=0.0):
                    yield f"{where}#{index}", abs(float(x) - float(y))
    elif isinstance(reference, bool) or isinstance(shifted, bool):
        return
    elif isinstance(reference, (int, float)) and isinstance(shifted, (int, float)):
        a, b = float(reference), float(shifted)
        if math.isfinite(a) and math.isfinite(b) and not close(a, b):
            yield where, abs(a - b)
