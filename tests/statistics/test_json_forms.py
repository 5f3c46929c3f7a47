"""Every statistics record with a JSON form writes it from its fields (``JsonRecord``).

A hand-written ``to_dict`` (or any other method that builds a ``JsonObject``) under
``epsstar/statistics/`` fails here; Protocols may still declare ``to_dict``.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from dataclasses import dataclass
from types import ModuleType

import epsstar.statistics
from epsstar.plumbing.records.json_records import JsonRecord
from epsstar.plumbing.records.json_types import JsonObject


def _modules() -> list[ModuleType]:
    package = epsstar.statistics
    found = [package]
    for info in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}."):
        found.append(importlib.import_module(info.name))
    return found


def _classes() -> list[type]:
    return [
        klass
        for module in _modules()
        for _, klass in inspect.getmembers(module, inspect.isclass)
        if klass.__module__ == module.__name__
    ]


def _hand_written(klass: type) -> list[str]:
    """What of ``klass`` writes JSON by hand: ``to_dict`` outside :class:`JsonRecord`, or a
    method of its own returning a ``JsonObject``. A Protocol only declares them."""
    if getattr(klass, "_is_protocol", False):
        return []
    found = []
    if callable(getattr(klass, "to_dict", None)) and not issubclass(klass, JsonRecord):
        found.append(f"{klass.__qualname__}.to_dict outside JsonRecord")
    for name, member in vars(klass).items():
        if not inspect.isfunction(member):
            continue
        returns = member.__annotations__.get("return")
        if name == "to_dict" or returns in ("JsonObject", JsonObject):
            found.append(f"{klass.__qualname__}.{name} writes a JsonObject by hand")
    return found


def test_no_statistics_record_writes_its_json_by_hand() -> None:
    classes = _classes()
    assert len(classes) > 50  # the walk reached every room
    assert [finding for klass in classes for finding in _hand_written(klass)] == []


def test_the_statistics_records_with_a_json_form_are_json_records() -> None:
    records = {klass.__name__ for klass in _classes() if issubclass(klass, JsonRecord)}
    assert {
        "EpsilonStarResult",
        "GateStatistic",
        "GoodnessOfFit",
        "ManyRunBounds",
        "NormalFit",
        "RelativeTailed",
        "RuleBounds",
        "Supremum",
        "Utility",
    } <= records


def test_a_hand_written_json_form_is_found() -> None:
    @dataclass(frozen=True)
    class Handmade:
        value: float

        def to_dict(self) -> JsonObject:
            return {"value": self.value}

    @dataclass(frozen=True)
    class Overridden(JsonRecord):
        value: float

        def as_json(self) -> JsonObject:
            return {"value": self.value}

    assert _hand_written(Handmade) == [
        "test_a_hand_written_json_form_is_found.<locals>.Handmade.to_dict outside JsonRecord",
        "test_a_hand_written_json_form_is_found.<locals>.Handmade.to_dict writes a JsonObject "
        "by hand",
    ]
    assert _hand_written(Overridden) == [
        "test_a_hand_written_json_form_is_found.<locals>.Overridden.as_json writes a "
        "JsonObject by hand"
    ]
