"""Loaders take fitted models in memory: each meets the loader contract with the object it saved
to a file, the one loader that claims an object is found, and the others refuse it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import epsstar.audit.model.contract
from epsstar.audit.model.plugins import get_loader, loader_for_object
from epsstar.exceptions import InvalidInputError
from tests.loaders.model_objects import KINDS, data, sklearn_pipeline, torch_module


@pytest.mark.parametrize("kind", KINDS)
def test_each_loader_of_objects_meets_the_contract(kind: str, tmp_path: Path) -> None:
    name, make, trust = KINDS[kind]
    obj, path = make(tmp_path)
    loader, _ = get_loader(name)
    # The suite's default tolerance: its chunked predictions sum in another order (BLAS);
    # the audits of tests/api compare the object with its file exactly.
    epsstar.audit.model.contract.check_loader(
        loader, path, data()[0], trust=trust, model_object=obj
    )
    assert loader_for_object(obj)[1].name == name


def test_the_contract_fails_a_loader_whose_object_predicts_otherwise(tmp_path: Path) -> None:
    from sklearn.linear_model import LogisticRegression

    _, path = sklearn_pipeline(tmp_path)
    other = LogisticRegression(C=1e-3).fit(*data())
    loader, _ = get_loader("sklearn")
    with pytest.raises(AssertionError, match="(?s)'object_loading' failed.*predicts otherwise"):
        epsstar.audit.model.contract.check_loader(
            loader, path, data()[0], trust=True, model_object=other
        )


def test_the_torch_module_is_audited_in_eval_mode_and_left_as_it_was(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    module: Any = torch_module(tmp_path)[0]
    loader: Any = get_loader("torchscript")[0]
    loaded = loader.load_object(module)
    features = data()[0]
    assert np.array_equal(loaded.predict(features), loaded.predict(features))  # no dropout
    assert module.training
    assert torch.is_grad_enabled()


@pytest.mark.parametrize(
    "obj", [{"weights": [1, 2]}, object(), np.zeros(3)], ids=["dict", "object", "array"]
)
def test_an_object_no_loader_claims_is_refused_naming_its_type_and_the_loaders(
    obj: Any,
) -> None:
    with pytest.raises(InvalidInputError) as caught:
        loader_for_object(obj)
    message = str(caught.value)
    assert "\n" not in message
    assert message.endswith(f"Found a {type(obj).__module__}.{type(obj).__qualname__}.")
    listed = message.split("loaders of objects: ")[1].split(")")[0].split(", ")
    assert {"sklearn", "torchscript", "lightgbm"} <= set(listed)


def test_an_unfitted_estimator_is_refused_naming_its_type() -> None:
    from sklearn.linear_model import LogisticRegression

    loader: Any = get_loader("sklearn")[0]
    with pytest.raises(InvalidInputError, match=r"must be fitted .* unfitted sklearn\.linear"):
        loader.load_object(LogisticRegression())
