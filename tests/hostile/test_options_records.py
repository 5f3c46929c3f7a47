"""Every options record refuses each kind of bad value when it is built, in one line that names
the option and ends with the value, from the constraints declared on its fields.

The cases are drawn from the declarations themselves (:func:`constraints_of`), so a field that
gains a constraint is tested with it; the table of exact messages pins the wording users see.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest

from epsstar.audit.attacks.scoring import AttackSettings
from epsstar.audit.data.extraction_settings import ExtractionSettings
from epsstar.audit.data.reading import Tables
from epsstar.audit.data.text_records import TextTables
from epsstar.audit.options import AuditOptions
from epsstar.audit.premise.settings import PremiseSettings
from epsstar.audit.training_audit.audit import TrainingAuditSetup
from epsstar.audit.training_audit.canaries import Crafting
from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.records.constraints import (
    ColumnName,
    ColumnNames,
    Constraint,
    EachOf,
    InRange,
    Maybe,
    OneOf,
    WholeNumber,
    constraints_of,
    shown,
)
from epsstar.training.text.settings import TextTrainingConfig
from epsstar.training.trainer import TrainingConfig

#: Each options record, built from the fewest values it needs and the field under test (the
#: text tables' files in the current folder, a test's own, :func:`_in_tmp_path`).
RECORDS: dict[str, tuple[type[Any], Callable[..., object]]] = {
    "AuditOptions": (AuditOptions, AuditOptions),
    "AttackSettings": (AttackSettings, AttackSettings),
    "TrainingConfig": (TrainingConfig, lambda **field: TrainingConfig(**{"epochs": 1, **field})),
    "TextTrainingConfig": (
        TextTrainingConfig,
        lambda **field: TextTrainingConfig(**{"text_column": "text", "epochs": 1, **field}),
    ),
    "TrainingAuditSetup": (
        TrainingAuditSetup,
        lambda **field: TrainingAuditSetup(
            Path("train.csv"), Path("population.csv"), "label", **field
        ),
    ),
    "Crafting": (Crafting, Crafting),
    "PremiseSettings": (PremiseSettings, PremiseSettings),
    "Tables": (
        Tables,
        lambda **field: Tables(
            **{
                "train": "train.csv",
                "population": "population.csv",
                "label_column": "label",
                **field,
            }
        ),
    ),
    "TextTables": (
        TextTables,
        lambda **field: TextTables("train.txt", "population.txt", **field),
    ),
    "ExtractionSettings": (ExtractionSettings, ExtractionSettings),
}


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("train.txt", "population.txt"):
        (tmp_path / name).write_text("a record\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)


def _bad_values(rule: Constraint[Any]) -> list[tuple[object, str]]:
    """Values ``rule`` refuses, each with what its message ends with: of the wrong kind, out of
    range, not finite, a boolean for a count, an unknown name, an empty column, a name twice."""
    if isinstance(rule, Maybe):
        return _bad_values(rule.inner)
    if isinstance(rule, EachOf):
        return [
            ("text", "'text'"),
            *[((value,), found) for value, found in _bad_values(rule.inner)],
        ]
    if isinstance(rule, InRange):
        below = rule.low if rule.closed in ("neither", "right") else rule.low - 1
        outside = [below, math.nan]
        if math.isfinite(rule.high):
            outside.append(rule.high + 1)
        return [("many", "'many'"), *[(value, shown(value)) for value in outside]]
    if isinstance(rule, WholeNumber):
        return [(value, shown(value)) for value in (True, 2.5, "3", rule.minimum - 1)]
    if isinstance(rule, OneOf):
        return [("no-such-name", "'no-such-name'"), (3, "3")]
    if isinstance(rule, ColumnNames):
        return [("a", "the string 'a'"), (("a", "a"), "'a' twice"), ((), "none")]
    if isinstance(rule, ColumnName):
        return [("", "''"), (3, "3")]
    raise AssertionError(f"no bad values for {rule!r}")  # a new kind of constraint


CASES = [
    pytest.param(record, name, value, found, id=f"{record}.{name}={value!r}")
    for record, (kind, _) in RECORDS.items()
    for name, rule in constraints_of(kind).items()
    for value, found in _bad_values(rule)
]


@pytest.mark.parametrize(("record", "name", "value", "found"), CASES)
def test_a_bad_value_is_refused_when_the_record_is_built(
    record: str, name: str, value: object, found: str
) -> None:
    with pytest.raises(InvalidInputError) as refused:
        RECORDS[record][1](**{name: value})
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(f"{name} must "), message
    assert message.endswith(f"Found {found}."), message


def test_every_record_declares_its_options() -> None:
    declared = {record: list(constraints_of(kind)) for record, (kind, _) in RECORDS.items()}
    assert declared == {
        "AuditOptions": [
            "delta",
            "method",
            "family",
            "interval",
            "n_bootstrap",
            "max_epsilon",
            "confidence",
            "seed",
            "gate",
        ],
        "AttackSettings": ["rmia_a", "rmia_gamma", "min_k"],
        "TrainingConfig": [
            "epochs",
            "batch_size",
            "hidden",
            "lr",
            "momentum",
            "clip",
            "target_epsilon",
            "noise_multiplier",
            "delta",
            "microbatches",
            "accountant",
            "max_noise_multiplier",
            "standardise_on",
            "seed",
        ],
        "TextTrainingConfig": [
            "text_column",
            "epochs",
            "batch_size",
            "lr",
            "clip",
            "target_epsilon",
            "noise_multiplier",
            "delta",
            "accountant",
            "max_noise_multiplier",
            "max_length",
            "lora_rank",
            "lora_alpha",
            "physical_batch",
            "seed",
        ],
        "TrainingAuditSetup": [
            "features",
            "canaries",
            "runs",
            "claimed_epsilon",
            "delta",
            "confidence",
            "bound",
            "seed",
            "k",
            "guesses",
            "canary_repeats",
            "train_records",
        ],
        "Crafting": ["distance", "spread"],
        "PremiseSettings": ["folds", "group_by", "attribute", "top_records"],
        "Tables": ["label_column", "features", "batch_size", "loss"],
        "TextTables": ["text_column", "batch_size"],
        "ExtractionSettings": [
            "extraction_prefix",
            "extraction_suffix",
            "extraction_records",
            "extraction_samples",
            "extraction_temperature",
            "extraction_top_k",
            "max_extraction_rate",
        ],
    }


#: The wording users read, exactly (the command line names the flag instead when typed).
MESSAGES: list[tuple[str, dict[str, object], str]] = [
    ("AuditOptions", {"delta": 0.7}, "delta must be in (0, 0.5). Found 0.7."),
    ("AuditOptions", {"max_epsilon": math.nan}, "max_epsilon must be in [0, inf). Found nan."),
    ("AuditOptions", {"interval": 1.5}, "interval must be in (0, 1). Found 1.5."),
    ("AuditOptions", {"n_bootstrap": 1}, "n_bootstrap must be an integer ≥ 2. Found 1."),
    (
        "AuditOptions",
        {"gate": "vote"},
        "gate must be one of significant, estimate, lower-bound. Found 'vote'.",
    ),
    ("AttackSettings", {"rmia_a": 2.0}, "rmia_a must be in [0, 1]. Found 2.0."),
    ("AttackSettings", {"min_k": 0.0}, "min_k must be in (0, 1]. Found 0.0."),
    ("TrainingConfig", {"hidden": (64, 0)}, "hidden must be an integer ≥ 1. Found 0."),
    ("TrainingConfig", {"momentum": 1.0}, "momentum must be in [0, 1). Found 1.0."),
    ("TrainingConfig", {"seed": -1}, "seed must be an integer ≥ 0. Found -1."),
    ("TrainingConfig", {"accountant": "gdp"}, "accountant must be one of pld, rdp. Found 'gdp'."),
    (
        "TrainingConfig",
        {"standardise_on": "train"},
        "standardise_on must be one of population, data, none. Found 'train'.",
    ),
    (
        "TrainingConfig",
        {"target_epsilon": 1.0, "noise_multiplier": 1.0},
        "give either target_epsilon or noise_multiplier, not both. Found 1.0 and 1.0.",
    ),
    ("TrainingAuditSetup", {"k": 0}, "k must be an integer ≥ 1. Found 0."),
    (
        "TrainingAuditSetup",
        {"runs": 3},
        "runs must be 1 (one run with every canary) or at least 4 (runs with and without the "
        "canary, half of them to choose the threshold). Found 3.",
    ),
    (
        "TrainingAuditSetup",
        {"features": ("a", "b", "a")},
        "features must name each column once. Found 'a' twice.",
    ),
    (
        "Tables",
        {"features": "a,b"},
        "features must be a sequence of column names. Found the string 'a,b'.",
    ),
    ("Tables", {"features": ()}, "features must name at least one column. Found none."),
    ("Tables", {"label_column": ""}, "label_column must name a column. Found ''."),
    ("PremiseSettings", {"group_by": ""}, "group_by must name a column. Found ''."),
    (
        "ExtractionSettings",
        {"extraction_temperature": 0},
        "extraction_temperature must be in (0, inf). Found 0.",
    ),
    ("PremiseSettings", {"top_records": -1}, "top_records must be an integer ≥ 0. Found -1."),
    (
        "PremiseSettings",
        {"skip_blind_baseline": " "},
        "skipping the blind baseline needs a reason. Found ' '.",
    ),
    ("TextTables", {"batch_size": 0}, "batch_size must be an integer ≥ 1. Found 0."),
]


@pytest.mark.parametrize(("record", "field", "message"), MESSAGES)
def test_the_message_names_the_option_and_the_value(
    record: str, field: dict[str, object], message: str
) -> None:
    with pytest.raises(InvalidInputError) as refused:
        RECORDS[record][1](**field)
    assert str(refused.value) == message


def test_the_checked_values_are_kept_and_trusted() -> None:
    options = AuditOptions(delta=cast(Any, "0.001"), max_epsilon=2)
    assert (options.delta, options.max_epsilon) == (0.001, 2.0)
    config = TrainingConfig(epochs=1, hidden=cast(Any, [8, 4]))
    assert config.hidden == (8, 4)
    settings = AttackSettings(("loss",), rmia_gamma=2)
    assert dataclasses.replace(settings, min_k=0.5).rmia_gamma == 2.0
