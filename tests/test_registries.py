"""Every registry feeds every list of its names: the command line's choices and help, the JSON
schemas' enums, the docs' tables; and every registered entry passes its registry's checks.

A registry is a :class:`~epsstar.statistics.names.Names` table (or built from one, as the threat
models are from their modules). :data:`REGISTRIES` says where each one's names are listed; a
list of names anywhere in a schema that this file does not tie to a registry fails
:func:`test_no_schema_lists_registry_names_untied`, so a copy cannot drift unseen.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from epsstar.audit.training_audit.result import BOUNDS
from epsstar.audit.training_audit.threat_models import (
    CANARY_KINDS,
    registered_threat_models,
    threat_model,
    threat_model_names,
)
from epsstar.cli.main import build_parser
from epsstar.exceptions import EpsstarError
from epsstar.statistics.names import (
    ACCOUNTANTS,
    ATTACKS,
    ATTRIBUTE_RECORDS,
    ENGINES,
    FAMILIES,
    GATES,
    GUESS_RULES,
    LOSSES,
    METHODS,
    OUTPUT_KINDS,
    SEARCHES,
    TRAINING_BOUNDS,
    UTILITIES,
    Names,
)

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Registry:
    """Where one registry's names are listed: ``(command, option)`` pairs of the command line,
    ``(schema, JSON pointer)`` enums (``nullable``: the enum adds ``null``), and
    ``(docs page, first header cell)`` tables whose first column names them."""

    names: tuple[str, ...]
    table: Names[Any] | None = None
    options: tuple[tuple[str, str], ...] = ()
    enums: tuple[tuple[str, str], ...] = ()
    nullable: tuple[tuple[str, str], ...] = ()
    consts: tuple[tuple[str, str], ...] = ()
    docs: tuple[tuple[str, str], ...] = ()


def _registries() -> dict[str, Registry]:
    threats = threat_model_names()
    many_methods = tuple(one for one, _ in BOUNDS.values()) + tuple(m for _, m in BOUNDS.values())
    return {
        "attacks": Registry(
            ATTACKS.names,
            ATTACKS,
            options=(("audit", "--attack"),),
            enums=(("audit", "/$defs/attack_name"),),
        ),
        "methods": Registry(
            METHODS.names,
            METHODS,
            options=(("audit", "--method"), ("audit-many", "--method"), ("epsilon", "--method")),
            enums=(("epsilon", "/$defs/method"),),
        ),
        "families": Registry(
            FAMILIES.names,
            FAMILIES,
            options=(("audit", "--family"), ("epsilon", "--family")),
            nullable=(("epsilon", "/$defs/family"),),
        ),
        "searches": Registry(SEARCHES.names, SEARCHES, options=(("epsilon", "--search"),)),
        "output kinds": Registry(
            OUTPUT_KINDS.names,
            OUTPUT_KINDS,
            options=(("audit", "--outputs"),),
            enums=(("audit", "/$defs/output_kind"),),
        ),
        "losses": Registry(
            LOSSES.names, LOSSES, options=(("audit", "--loss"), ("audit-many", "--loss"))
        ),
        "gates": Registry(
            GATES.names,
            GATES,
            options=(("audit", "--gate"),),
            enums=(("audit", "/$defs/gate_rule"), ("audit-many", "/properties/gate")),
            docs=(("docs/release-gate.md", "`--gate`"),),
        ),
        "guess rules": Registry(
            GUESS_RULES.names, GUESS_RULES, options=(("audit-training", "--guesses"),)
        ),
        "training bounds": Registry(
            TRAINING_BOUNDS.names,
            TRAINING_BOUNDS,
            options=(("audit-training", "--bound"),),
            enums=(("audit-training", "/$defs/bound_name"),),
        ),
        "bound methods": Registry(many_methods, enums=(("audit-training", "/properties/method"),)),
        "threat models": Registry(
            threats.names,
            threats,
            options=(("audit-training", "--threat-model"),),
            enums=(("audit-training", "/$defs/threat_model_name"),),
            docs=(("docs/training-audit.md", "name"),),
        ),
        "canary kinds": Registry(CANARY_KINDS, enums=(("audit-training", "/$defs/canary_kind"),)),
        "engines": Registry(
            ENGINES.names,
            ENGINES,
            options=(
                ("audit", "--engine"),
                ("audit-many", "--engine"),
                ("audit-training", "--engine"),
            ),
            consts=(("audit-many", "/$defs/engine"),),
        ),
        "utilities": Registry(UTILITIES.names, UTILITIES, options=(("landscape", "--utility"),)),
        "accountants": Registry(
            ACCOUNTANTS.names, ACCOUNTANTS, options=(("train", "--accountant"),)
        ),
        "attribute records": Registry(
            ATTRIBUTE_RECORDS.names,
            ATTRIBUTE_RECORDS,
            options=(("train", "--attribute-records"),),
            enums=(("training", "/$defs/attribute_inference/properties/records"),),
        ),
    }


REGISTRIES = _registries()


def _schema(name: str) -> Any:
    text = (resources.files("epsstar") / "schemas" / f"{name}.schema.json").read_text("utf-8")
    return json.loads(text)


def _at(document: Any, pointer: str) -> Any:
    for part in pointer.strip("/").split("/"):
        document = document[part]
    return document


def _enums(node: Any, pointer: str = "") -> Iterator[tuple[str, list[Any]]]:
    """Every ``enum`` of a schema, with the pointer of the object that holds it."""
    if isinstance(node, dict):
        if isinstance(node.get("enum"), list):
            yield pointer, node["enum"]
        for key, value in node.items():
            yield from _enums(value, f"{pointer}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _enums(value, f"{pointer}/{index}")


def _subcommand(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found: argparse.ArgumentParser = sub.choices[command]
    return found


def docs_table(page: str, first_header: str) -> list[str]:
    """The first column's names (in backquotes) of the table of ``page`` whose first header
    cell is ``first_header``."""
    lines = (ROOT / page).read_text(encoding="utf-8").splitlines()
    start = next(
        i
        for i, line in enumerate(lines)
        if line.startswith("|") and line.strip("| ").split("|")[0].strip() == first_header
    )
    names = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cell = line.strip("|").split("|")[0]
        found = re.match(r"\s*`([^`]+)`", cell)
        assert found, f"{page}: a row of the {first_header!r} table names no entry: {line!r}"
        names.append(found.group(1))
    return names


# --- every list of a registry's names is the registry's ------------------------------------------


@pytest.mark.parametrize("registry", REGISTRIES)
def test_schema_enums_are_the_registry(registry: str) -> None:
    entry = REGISTRIES[registry]
    for schema, pointer in entry.enums:
        assert tuple(_at(_schema(schema), pointer)["enum"]) == entry.names, (schema, pointer)
    for schema, pointer in entry.nullable:
        assert tuple(_at(_schema(schema), pointer)["enum"]) == (*entry.names, None)
    for schema, pointer in entry.consts:
        branches = _at(_schema(schema), pointer)["oneOf"]
        assert tuple(b["properties"]["name"]["const"] for b in branches) == entry.names


def test_no_schema_lists_registry_names_untied() -> None:
    tied = {(s, p) for entry in REGISTRIES.values() for s, p in (*entry.enums, *entry.nullable)}
    every = {name for entry in REGISTRIES.values() for name in entry.names}
    folder = resources.files("epsstar") / "schemas"
    for path in folder.iterdir():
        schema = path.name.removesuffix(".schema.json")
        for pointer, values in _enums(json.loads(path.read_text("utf-8"))):
            if len(every.intersection(v for v in values if isinstance(v, str))) >= 2:
                assert (schema, pointer) in tied, f"{schema}{pointer} lists {values} untied"


@pytest.mark.parametrize("registry", REGISTRIES)
def test_command_line_choices_and_help_are_the_registry(registry: str) -> None:
    entry = REGISTRIES[registry]
    parser = build_parser()
    for command, option in entry.options:
        sub = _subcommand(parser, command)
        action = next(a for a in sub._actions if option in a.option_strings)
        assert tuple(action.choices or ()) == entry.names, (command, option)
        if entry.table is not None:
            # Wrapping may break lines at spaces and hyphens: compare without whitespace.
            shown = "".join(sub.format_help().split())
            for name in entry.names:
                assert "".join(entry.table[name].summary.split()) in shown, (command, name)


@pytest.mark.parametrize("registry", [r for r in REGISTRIES if REGISTRIES[r].docs])
def test_docs_tables_list_the_registry(registry: str) -> None:
    entry = REGISTRIES[registry]
    for page, header in entry.docs:
        assert tuple(docs_table(page, header)) == entry.names, page


@pytest.mark.parametrize("registry", [r for r in REGISTRIES if REGISTRIES[r].table is not None])
def test_every_entry_is_described_and_unknown_names_are_refused(registry: str) -> None:
    table = REGISTRIES[registry].table
    assert table is not None
    for _name, described in table.items():
        assert described.summary.strip()
        assert "\n" not in described.summary
        assert "%" not in described.summary  # argparse formats help text with %
        assert described.description[0].islower()
        assert not described.description.endswith(".")
    with pytest.raises(EpsstarError) as refused:
        table.check("no-such-name")
    assert "\n" not in str(refused.value)
    assert "'no-such-name'" in str(refused.value)


def test_threat_models_come_from_their_modules() -> None:
    models = registered_threat_models()
    assert threat_model_names().names == tuple(model.name for model in models)
    assert {model.canaries for model in models} <= set(CANARY_KINDS)
    for model in models:
        assert threat_model(model.name) is model
