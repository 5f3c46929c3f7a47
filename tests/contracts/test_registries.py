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
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from jsonschema import Draft202012Validator

from epsstar.audit.attacks.attack import AttackParameters
from epsstar.audit.attacks.inputs import AttackInputs
from epsstar.audit.attacks.registry import REGISTRY as ATTACK_REGISTRY
from epsstar.audit.engines.dask_engine import Engine
from epsstar.audit.model.plugins import get_loader
from epsstar.audit.training_audit.result import BOUNDS, TrainingAuditResult
from epsstar.audit.training_audit.threat_models import (
    CANARY_KINDS,
    registered_threat_models,
    threat_model,
    threat_model_names,
)
from epsstar.cli.main import build_parser
from epsstar.exceptions import EpsstarError
from epsstar.statistics.estimators.estimator import estimate
from epsstar.statistics.estimators.methods import CONFIG_TYPES
from epsstar.statistics.losses import compute_losses
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
from epsstar.statistics.results import EpsilonStarResult
from tests.audit.training_audit.test_threat_model_registry import audit_a_rememberer

ROOT = Path(__file__).resolve().parents[2]


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
    many_methods = tuple(b.one_run for b in BOUNDS.values()) + tuple(
        b.many_runs for b in BOUNDS.values()
    )
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
            enums=(("audit", "/$defs/gate_rule"),),
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


def test_options_shown_with_their_choices_in_the_docs_list_the_registry() -> None:
    """``--option {a,b,c}`` in a page, as the usage line shows it, lists the option's names."""
    by_option = {
        option: entry.names for entry in REGISTRIES.values() for _, option in entry.options
    }
    shown = 0
    for page in sorted((ROOT / "docs").glob("*.md")):
        text = page.read_text(encoding="utf-8")
        for option, listed in re.findall(r"`(--[a-z-]+) \{([^}]*)\}", text):
            if option in by_option:
                shown += 1
                assert tuple(listed.split(",")) == by_option[option], (page.name, option)
    assert shown >= 10


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


# --- every registered entry runs on a small input, and refuses a bad one in one line -----------


def _one_line_refusal(call: Any, *arguments: Any, **options: Any) -> str:
    with pytest.raises(EpsstarError) as refused:
        call(*arguments, **options)
    assert "\n" not in str(refused.value)
    return str(refused.value)


def _losses() -> tuple[Any, Any]:
    rng = np.random.default_rng(5)
    return rng.normal(-0.5, 1.0, 400), rng.normal(0.0, 1.0, 400)


# A fit test may reject a Normal fit to these few losses; that is not what this test checks.
@pytest.mark.filterwarnings("ignore::epsstar.exceptions.PoorFitWarning")
@pytest.mark.parametrize("method", METHODS.names)
def test_every_method_estimates_and_refuses_non_finite_losses(method: str) -> None:
    config = next(kind for kind in CONFIG_TYPES if kind.method == method)()
    train, population = _losses()
    result = estimate(train, population, config, delta=1e-3)
    assert isinstance(result, EpsilonStarResult)
    assert result.method == method
    assert np.isfinite(result.epsilon)
    train[3] = np.nan
    assert "finite" in _one_line_refusal(estimate, train, population, config, delta=1e-3)


@pytest.mark.parametrize("loss", LOSSES.names)
@pytest.mark.parametrize("outputs", OUTPUT_KINDS.names)
def test_every_loss_and_output_kind_gives_finite_losses_and_refuses_bad_labels(
    loss: Any, outputs: Any
) -> None:
    labels = np.array([0, 1, 1, 0])
    predictions = np.array([0.2, 0.7, 0.9, 0.4])
    if outputs == "logits":
        predictions = np.log(predictions / (1 - predictions))
    losses = compute_losses(labels, predictions, loss=loss, outputs=outputs)
    assert losses.dtype == np.float64
    assert losses.shape == (4,)
    assert np.isfinite(losses).all()
    _one_line_refusal(compute_losses, [0, 1, 2, 0], predictions, loss=loss, outputs=outputs)


def test_every_attack_is_registered_under_its_name() -> None:
    assert tuple(ATTACK_REGISTRY) == ATTACKS.names
    for name, registered in ATTACK_REGISTRY.items():
        assert registered.name == name
        assert (registered.score is None) == (name == "loss")  # the loss attack scores by losses


@pytest.mark.parametrize("name", [name for name in ATTACKS.names if name != "loss"])
def test_every_attack_refuses_inputs_without_what_it_needs_in_one_line(name: Any) -> None:
    scorer = ATTACK_REGISTRY[name].score
    assert scorer is not None
    _one_line_refusal(scorer, AttackInputs(), AttackParameters(), 0)


@pytest.mark.parametrize("name", ENGINES.names)
def test_every_engine_is_a_record_the_schema_allows(name: Any) -> None:
    engine = Engine(name)
    assert engine.on_dask == (name == "dask")
    many = _schema("audit-many")
    branches = many["$defs"]["engine"]["oneOf"]
    validator = [b for b in branches if b["properties"]["name"]["const"] == name]
    assert len(validator) == 1
    Draft202012Validator(validator[0]).validate(engine.to_dict())
    if not engine.on_dask:
        _one_line_refusal(Engine, name, "tcp://127.0.0.1:8786")


@pytest.mark.parametrize("bound", TRAINING_BOUNDS.names)
def test_every_bound_decides_an_audit(bound: str, tmp_path: Path) -> None:
    assert set(BOUNDS) == set(TRAINING_BOUNDS.names)
    result = audit_a_rememberer("input", tmp_path, bound=bound)
    assert isinstance(result, TrainingAuditResult)
    assert result.bound == bound
    assert result.threat_models[0].method == BOUNDS[bound].one_run
    assert result.refuted
    assert TRAINING_BOUNDS[bound].description in result.verdict


@pytest.mark.parametrize("rule", GUESS_RULES.names)
def test_every_guess_rule_guesses_in_an_audit(rule: str, tmp_path: Path) -> None:
    result = audit_a_rememberer("input", tmp_path, guesses=rule)
    (audit,) = result.threat_models
    assert audit.one_run is not None
    assert result.refuted


def _builtin_loaders() -> tuple[str, ...]:
    """The loaders ``pyproject.toml`` declares in the ``epsstar.loaders`` entry points."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return tuple(project["project"]["entry-points"]["epsstar.loaders"])


def test_the_docs_table_lists_every_builtin_loader() -> None:
    assert tuple(docs_table("docs/plugins.md", "name")) == _builtin_loaders()


@pytest.mark.parametrize("name", _builtin_loaders())
def test_every_builtin_loader_is_found_by_its_name(name: str) -> None:
    loader, info = get_loader(name)
    assert loader.name == name
    assert info.name == name
    assert isinstance(loader.suffixes, tuple)
