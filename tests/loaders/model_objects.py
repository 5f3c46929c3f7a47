"""Fitted models of every kind a loader takes in memory, each with the file it is saved as."""

from __future__ import annotations

import pickle
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

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


def population() -> tuple[np.ndarray, np.ndarray]:
    """Records of the same distribution the models were not fitted on."""
    rng = np.random.default_rng(4)
    features = rng.normal(size=(ROWS, 4))
    labels = (features[:, 0] - features[:, 1] + rng.normal(size=ROWS) > 0).astype(np.int64)
    return features, labels


def keras_model(folder: Path) -> tuple[object, Path]:
    import os

    os.environ.setdefault("KERAS_BACKEND", "torch")
    keras = pytest.importorskip("keras")
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(8, "relu"), keras.layers.Dense(2, "softmax")]
    )
    path = folder / "model.keras"
    model.save(path)
    return model, path


KINDS["keras-sequential"] = ("keras", keras_model, False)
