"""The float64 weights of a float32 fixture model, read from its scikit-learn twin.

The fixtures' ONNX and TorchScript files hold the weights of the scikit-learn model of the
same stem (``binary_mlp.onnx`` and ``binary_mlp_torch.onnx`` those of ``binary_mlp.skops``;
``fixtures/models/manifest.json``), rounded to float32. The tolerances of their outputs
(``tests/numerics.py``) are computed from these weights.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from tests.numerics import Layer, estimator_layers

MODELS = Path(__file__).resolve().parents[1] / "fixtures" / "models"


@cache
def twin_layers(source: Path) -> tuple[Layer, ...] | None:
    """The dense layers (weights ``fan-in × fan-out``, bias) of the fixture model
    ``source``'s scikit-learn twin; None for a scikit-learn file or a model without a twin."""
    twin = MODELS / f"{source.name.split('.')[0].removesuffix('_torch')}.skops"
    if source.suffix == ".skops" or source.parent != MODELS or not twin.exists():
        return None
    from epsstar.audit.model.plugins import loader_for_path

    estimator: Any = loader_for_path(twin)[0].load(twin)._estimator
    return tuple(estimator_layers(estimator))
