"""Shared test settings."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default",
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("thorough", max_examples=400, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(scope="session")
def validate_json() -> Callable[[str, Any], None]:
    """``validate_json("audit", document)`` fails unless it holds to ``audit.schema.json``.

    The schemas are read from the package (``epsstar/schemas/``); they refer to each
    other by file name.
    """
    from importlib import resources

    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    folder = resources.files("epsstar") / "schemas"
    schemas = {
        item.name: json.loads(item.read_text(encoding="utf-8"))
        for item in folder.iterdir()
        if item.name.endswith(".schema.json")
    }
    registry: Registry[Any] = Registry().with_resources(
        (name, Resource.from_contents(schema)) for name, schema in schemas.items()
    )

    def validate(name: str, document: Any) -> None:
        validator = Draft202012Validator(schemas[f"{name}.schema.json"], registry=registry)
        errors = [f"{e.json_path}: {e.message}" for e in validator.iter_errors(document)]
        assert not errors, "\n".join(errors[:10])

    return validate
