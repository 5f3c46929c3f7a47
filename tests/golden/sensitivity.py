"""How far each number of a golden case may move under another machine's float32 kernels.

A case that audits a float32 model is run twice more with every loss of that model shifted by
its derived tolerance (``tests/numerics.py``, points 3 to 5): the training losses down and the
population losses up, then the other way. Each number that moves is kept with the larger of
its two moves in ``tolerances.json`` beside the case's golden files, and is compared within
it; every other number (whatever is computed in float64 from fixed inputs) is compared as
before. The shifted runs show what a knife's-edge statistic does as well: a supremum whose
maximising record switches under the shift moves by the switch, and is compared by value.

The tolerance of a record's loss needs the model's weights in float64: they are read from
the fixture's scikit-learn twin (``tests/fixture_twins.py``).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from tests.fixture_twins import twin_layers
from tests.golden.cases import NUMBER, Case, close, run_case, text_numbers_close
from tests.numerics import loss_tolerance, network_tolerance


@contextlib.contextmanager
def shifted_losses(direction: int) -> Iterator[None]:
    """Within the block, each fixture float32 model's losses are shifted by their tolerance:
    ``direction`` −1 moves the training losses down and the population's up, +1 the other
    way (float64 models and models without a twin are left alone)."""
    from epsstar.audit.engines import streaming

    predict, losses = streaming.predict_batch, streaming.batch_losses
    seen: dict[int, Any] = {}  # the features of each model's latest batch

    def predict_batch(model: Any, features: Any, reading: Any) -> Any:
        seen[id(model)] = features
        return predict(model, features, reading)

    def batch_losses(model: Any, labels: Any, predictions: Any, reading: Any) -> Any:
        found = losses(model, labels, predictions, reading)
        layers = twin_layers(Path(model.source))
        if layers is None or getattr(model, "input_dtype", None) == "float64":
            return found
        logits = network_tolerance(layers, seen[id(model)].matrix(np.float64))
        tolerance = loss_tolerance(logits, predictions, model.output_kind)
        sign = direction if reading.role == "train" else -direction
        return found + sign * tolerance

    streaming.predict_batch, streaming.batch_losses = predict_batch, batch_losses
    try:
        yield
    finally:
        streaming.predict_batch, streaming.batch_losses = predict, losses


def tolerances(case: Case, reference: dict[str, Any], folder: Path) -> dict[str, float]:
    """Run ``case`` in ``folder`` with the losses shifted each way: how far each number of
    ``reference`` that the default comparison would not accept moved, by path."""
    found: dict[str, float] = {}
    for direction in (-1, 1):
        out = folder / f"shifted{direction:+d}"
        out.mkdir()
        with shifted_losses(direction):
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
