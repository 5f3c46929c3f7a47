"""Loaders take fitted models in memory: each meets the loader contract with the object it saved
to a file, the one loader that claims an object is found, and the others refuse it."""

from __future__ import annotations

import pickle
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import epsstar.audit.model.contract
from epsstar.audit.model.plugins import get_loader, loader_for_object
from epsstar.exceptions import InvalidInputError

ROWS = 200


def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    features = rng.normal(size=(ROWS, 4))
    labels = (features[:, 0] - features[:, 1] + rng.normal(size=ROWS) > 0).astype(np.int64)
    return features, labels


def sklearn_pipeline(folder: Path) -> tuple[object, Path]:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    pipeline = make_pipeline(StandardScaler(), LogisticRegression()).fit(*data())
    path = folder / "model.pkl"
    path.write_bytes(pickle.dumps(pipeline))
    return pipeline, path


def torch_module(folder: Path) -> tuple[object, Path]:
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    module = torch.nn.Sequential(
        torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Dropout(0.5), torch.nn.Linear(8, 2)
    )
    path = folder / "model.pt"
    with warnings.catch_warnings():  # TorchScript's deprecation: the format the loader reads
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        torch.jit.save(torch.jit.script(module.eval()), str(path))
    return module.train(), path  # the caller's module in training mode: audited in eval mode


def lightgbm_booster(folder: Path) -> tuple[object, Path]:
    lgb = pytest.importorskip("lightgbm")
    features, labels = data()
    booster = lgb.train(
        {"objective": "binary", "verbose": -1, "num_threads": 1},
        lgb.Dataset(features, labels),
        num_boost_round=5,
    )
    path = folder / "model.txt"
    booster.save_model(str(path))
    return booster, path


def lightgbm_classifier(folder: Path) -> tuple[object, Path]:
    lgb = pytest.importorskip("lightgbm")
    model = lgb.LGBMClassifier(n_estimators=5, verbose=-1, n_jobs=1).fit(*data())
    path = folder / "model.txt"
    model.booster_.save_model(str(path))
    return model, path


def xgboost_booster(folder: Path) -> tuple[object, Path]:
    xgb = pytest.importorskip("xgboost")
    features, labels = data()
    booster = xgb.train(
        {"objective": "binary:logistic", "nthread": 1}, xgb.DMatrix(features, labels), 5
    )
    path = folder / "model.ubj"
    booster.save_model(str(path))
    return booster, path


def xgboost_classifier(folder: Path) -> tuple[object, Path]:
    xgb = pytest.importorskip("xgboost")
    model = xgb.XGBClassifier(n_estimators=5, n_jobs=1).fit(*data())
    path = folder / "model.ubj"
    model.save_model(str(path))
    return model, path


def catboost_classifier(folder: Path) -> tuple[object, Path]:
    catboost = pytest.importorskip("catboost")
    model = catboost.CatBoostClassifier(
        iterations=5, verbose=False, thread_count=1, allow_writing_files=False
    ).fit(*data())
    path = folder / "model.cbm"
    model.save_model(str(path))
    return model, path


#: Each kind of object, the loader that takes it, how it is made and saved, and whether its
#: file is pickled (loaded with trust).
KINDS: dict[str, tuple[str, Callable[[Path], tuple[object, Path]], bool]] = {
    "sklearn-pipeline": ("sklearn", sklearn_pipeline, True),
    "torch-module": ("torchscript", torch_module, False),
    "lightgbm-booster": ("lightgbm", lightgbm_booster, False),
    "lightgbm-classifier": ("lightgbm", lightgbm_classifier, False),
    "xgboost-booster": ("xgboost", xgboost_booster, False),
    "xgboost-classifier": ("xgboost", xgboost_classifier, False),
    "catboost-classifier": ("catboost", catboost_classifier, False),
}


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
