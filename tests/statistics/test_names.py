"""The table of names: complete descriptions, and every user-facing list drawn from it."""

from __future__ import annotations

import argparse
import typing
from typing import Any

import pytest

from epsstar.cli.main import build_parser
from epsstar.exceptions import InvalidInputError
from epsstar.statistics import names
from epsstar.statistics.names import (
    ATTACKS,
    FAMILIES,
    GATES,
    LOSSES,
    METHODS,
    OUTPUT_KINDS,
    SEARCHES,
    Name,
    Names,
)

TABLES: dict[str, tuple[Names[Any], Any]] = {
    "method": (METHODS, names.Method),
    "family": (FAMILIES, names.Family),
    "search": (SEARCHES, names.Search),
    "outputs": (OUTPUT_KINDS, names.OutputKind),
    "loss": (LOSSES, names.LossName),
    "gate": (GATES, names.GateRule),
    "attack": (ATTACKS, names.AttackName),
    "engine": (names.ENGINES, names.EngineName),
    "utility": (names.UTILITIES, names.UtilityName),
    "accountant": (names.ACCOUNTANTS, names.AccountantName),
    "records": (names.ATTRIBUTE_RECORDS, names.AttributeRecords),
    "standardise-on": (names.STANDARDISATIONS, names.StandardiseOn),
}
#: Tables whose descriptions complete the training audit's sentences, shorter than their help.
SHORT_DESCRIPTIONS: dict[str, tuple[Names[Any], Any]] = {
    "--bound": (names.TRAINING_BOUNDS, names.BoundName),
    "--guesses": (names.GUESS_RULES, names.GuessRule),
    "--canary-design": (names.CANARY_DESIGNS, names.CanaryDesign),
}


@pytest.mark.parametrize("option", TABLES)
def test_every_name_has_a_summary_and_a_description(option: str) -> None:
    table, _ = TABLES[option]
    assert table.option == option
    assert len(table) >= 2
    for name, entry in table.items():
        assert entry.name == name
        assert entry.summary.strip()
        assert "\n" not in entry.summary
        assert len(entry.description) > len(entry.summary)
        # Descriptions complete a sentence ("The headline figure ..."): no capital, no stop.
        assert entry.description[0].islower()
        assert not entry.description.endswith(".")
        assert "%" not in entry.summary  # argparse formats help text with %


@pytest.mark.parametrize("option", {**TABLES, **SHORT_DESCRIPTIONS})
def test_literal_types_list_the_same_names(option: str) -> None:
    table, literal = {**TABLES, **SHORT_DESCRIPTIONS}[option]
    assert table.option == option
    assert typing.get_args(literal) == table.names


def test_default_method_and_the_methods_named_by_the_request() -> None:
    assert METHODS.names == (
        "parametric",
        "empirical",
        "tails",
        "tails-crossfit",
        "tails-tested",
        "tails-shape-tested",
        "atoms-crossfit",
        "atoms-tested",
    )
    assert names.DEFAULT_METHOD == "tails-shape-tested"
    assert FAMILIES.names == ("normal", "gmm")
    assert OUTPUT_KINDS.names == ("probabilities", "logits")
    assert LOSSES.names == ("logit", "cross_entropy")


def test_lookups_and_messages() -> None:
    assert "tails" in METHODS
    assert "magic" not in METHODS
    assert 3 not in METHODS
    assert list(METHODS) == list(METHODS.names)
    assert METHODS["tails"].summary == "empirical body with generalised-Pareto tails"
    with pytest.raises(KeyError):
        METHODS["magic"]
    assert METHODS.check("empirical") == "empirical"
    with pytest.raises(
        InvalidInputError,
        match=r"^method must be one of parametric, empirical, tails, tails-crossfit, "
        r"tails-tested, tails-shape-tested, atoms-crossfit, atoms-tested\. Found 'magic'\.$",
    ):
        METHODS.check("magic")
    assert LOSSES.alternatives() == "'logit' or 'cross_entropy'"
    three = Names("x", (Name("a", "s", "d"), Name("b", "s", "d"), Name("c", "s", "d")))
    assert three.alternatives() == "'a', 'b' or 'c'"


def test_the_table_refuses_empty_or_repeated_entries() -> None:
    with pytest.raises(InvalidInputError, match="non-empty description"):
        Name("a", "one line", " ")
    with pytest.raises(InvalidInputError, match=r"distinct names. Found \['a', 'a'\]"):
        Names("x", (Name("a", "s", "d"), Name("a", "s", "d")))


def _choices(parser: argparse.ArgumentParser, command: str) -> dict[str, tuple[str, ...]]:
    """Option string → choices of one subcommand's options that have choices."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {
        option: tuple(action.choices)
        for action in sub.choices[command]._actions
        if action.choices is not None
        for option in action.option_strings
    }


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("epsilon", {"--method": METHODS, "--family": FAMILIES, "--search": SEARCHES}),
        (
            "audit",
            {
                "--method": METHODS,
                "--family": FAMILIES,
                "--outputs": OUTPUT_KINDS,
                "--loss": LOSSES,
                "--attack": ATTACKS,
            },
        ),
        ("audit-many", {"--method": METHODS, "--family": FAMILIES, "--loss": LOSSES}),
        ("train", {"--standardise-on": names.STANDARDISATIONS}),
        ("audit-training", {"--standardise-on": names.STANDARDISATIONS}),
    ],
)
def test_command_line_choices_are_the_table(command: str, expected: dict[str, Names[Any]]) -> None:
    parser = build_parser()
    choices = _choices(parser, command)
    for option, table in expected.items():
        assert choices[option] == table.names, option
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    # Wrapping may break lines at spaces and hyphens: compare without whitespace.
    help_text = "".join(sub.choices[command].format_help().split())
    for table in expected.values():
        for entry in table.values():
            assert "".join(entry.summary.split()) in help_text, entry.name


def test_report_wording_comes_from_the_table() -> None:
    from epsstar.audit.output.figures import estimator_description

    for name, entry in METHODS.items():
        assert estimator_description(name, None) == entry.description
    described = estimator_description("parametric", "gmm")
    assert described.startswith(METHODS["parametric"].description)
    assert FAMILIES["gmm"].description in described
    assert "'future'" in estimator_description("future", None)
