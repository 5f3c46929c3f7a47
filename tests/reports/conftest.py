"""Audit results shared by the report tests: the fixture models and a synthetic large audit."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from epsstar.audit.output.result import AuditResult
from epsstar.statistics.bounds.held_out_bound import split_lower_bound
from epsstar.statistics.estimators.estimator import epsilon_star
from epsstar.statistics.readings.readings import membership_readings
from epsstar.statistics.utility import Utility
from tests.conftest import audit_files, made_up_provenance

MODELS = Path(__file__).resolve().parents[2] / "fixtures" / "models"

CASES = {
    "binary": ("binary_mlp.skops", "binary_train.parquet", "binary_population.parquet"),
    "multiclass": ("multiclass_mlp.onnx", "multiclass_train.csv", "multiclass_population.parquet"),
}


def audit_fixture(case: str, **options: Any) -> AuditResult:
    """Audit a fixture model; the paper's parametric estimator unless ``method`` is given."""
    options.setdefault("method", "parametric")
    model, train, population = CASES[case]
    return audit_files(
        MODELS / model, MODELS / train, MODELS / population, label_column="label", **options
    )


@pytest.fixture(scope="session")
def binary_result() -> AuditResult:
    return audit_fixture("binary", max_epsilon=5.0)


@pytest.fixture(scope="session")
def multiclass_result() -> AuditResult:
    return audit_fixture("multiclass", max_epsilon=1.0)


def synthetic_result(n: int, *, seed: int = 0, shift: float = 1.0) -> AuditResult:
    """An audit of Gamma losses (members lower) with made-up utility and provenance."""
    rng = np.random.default_rng(seed)
    train = rng.gamma(2.0, 1.0, n)
    population = rng.gamma(2.0 + shift, 1.0, n)
    delta = 1.0 / (n * np.log(n))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parametric = epsilon_star(train, population, delta=delta, seed=seed, method="parametric")
    empirical = epsilon_star(train, population, delta=delta, method="empirical")
    provenance = made_up_provenance(n, n, seed=seed)
    return AuditResult(
        epsilon=parametric,
        empirical=empirical,
        lower_bound=split_lower_bound(train, population, delta=delta, seed=seed),
        readings=membership_readings(train, population, parametric),
        utility={"population": Utility(n, 0.8, 0.85), "train": Utility(n, 0.9, 0.95)},
        provenance=provenance,
        train_losses=train,
        population_losses=population,
    )


@pytest.fixture(scope="session")
def make_synthetic() -> Callable[..., AuditResult]:
    """:func:`synthetic_result`, for tests that need audits of a chosen size."""
    return synthetic_result


@pytest.fixture(scope="session")
def make_audit() -> Callable[..., AuditResult]:
    """:func:`audit_fixture`, for tests that need other audit options."""
    return audit_fixture


@pytest.fixture(scope="session")
def audit_arguments() -> list[str]:
    """``epsstar audit`` arguments for the binary fixture model (without outputs)."""
    model, train, population = CASES["binary"]
    return [
        "audit",
        str(MODELS / model),
        "--train",
        str(MODELS / train),
        "--population",
        str(MODELS / population),
        "--label-column",
        "label",
        "--quiet",
    ]
