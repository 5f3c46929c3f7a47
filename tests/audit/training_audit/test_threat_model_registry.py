"""Every registered threat model passes the same checks: it is offered by the command line and
allowed by the schema, it is described, an audit under it gives its record (JSON valid against the
schema) and refutes a procedure that remembers its canaries, and a procedure that does not serve
it is refused in one line.

The procedure is a stand-in that trains nothing: it scores each canary by whether the run held
it (a record in the run's table, a gradient canary the run included), oriented as the threat
model's ``direction`` says members look. A threat model of text canaries is audited on text
records with a tokenizer trained here (:mod:`tests.text.tiny_lm`).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from epsstar.audit.training_audit.audit import TrainingAuditSetup, audit_training
from epsstar.audit.training_audit.frames import read_frame, row_hashes
from epsstar.audit.training_audit.procedure import Claim, RunRequest, RunScores
from epsstar.audit.training_audit.result import ThreatModelAudit, TrainingAuditResult
from epsstar.audit.training_audit.text.designs import TextCanaries
from epsstar.audit.training_audit.threat_models import (
    ThreatModelName,
    registered_threat_models,
    threat_model,
    threat_model_names,
)
from epsstar.cli.main import build_parser
from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.records.json_types import JsonObject

COLUMNS = ["a", "b", "label"]
NAMES = [model.name for model in registered_threat_models()]


@dataclass(frozen=True, slots=True)
class Remembers:
    """A procedure that serves ``served`` and whose scores give its members away."""

    served: tuple[ThreatModelName, ...]
    #: The text canaries it is handed (a language model's fine-tuning), if any.
    text: TextCanaries | None = None

    def describe(self) -> JsonObject:
        return {"kind": "callable", "trainer": "a stand-in that remembers"}

    def serves(self) -> tuple[ThreatModelName, ...]:
        return self.served

    def gradient_capacity(self) -> int:
        return 10_000

    def claim(self, n_records: int) -> Claim | None:
        return None

    def run(self, request: RunRequest) -> RunScores:
        table = read_frame(request.train, "train")
        scores = {}
        for name in request.threat_models:
            model = threat_model(name)
            if model.canaries == "gradient":
                member = np.asarray(request.gradient_included, dtype=np.float64)
            elif model.canaries == "text":
                held_texts = set(table["text"].tolist())
                texts = read_frame(request.canaries["text"], "canaries")["text"].tolist()
                member = np.array([t in held_texts for t in texts], dtype=np.float64)
            else:
                held = set(row_hashes(table, COLUMNS).tolist())
                hashes = row_hashes(
                    read_frame(request.canaries[model.canaries], "canaries"), COLUMNS
                )
                member = np.array([h in held for h in hashes.tolist()], dtype=np.float64)
            scores[name] = member if model.direction == "members_higher" else 1.0 - member
        return RunScores(scores, None, {"file": None}, 0.0)


def write_tables(folder: Path) -> tuple[Path, Path]:
    """A training table of 50 records and a population of 400 in ``folder`` (seeded)."""
    rng = np.random.default_rng(3)
    paths = []
    for name, n in (("train", 50), ("population", 400)):
        frame = pd.DataFrame(rng.normal(size=(n, 2)), columns=["a", "b"])
        frame["label"] = rng.integers(0, 2, size=n)
        frame.to_csv(folder / f"{name}.csv", index=False)
        paths.append(folder / f"{name}.csv")
    return paths[0], paths[1]


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return write_tables(tmp_path_factory.mktemp("tables"))


def _setup(tables: tuple[Path, Path], name: str) -> TrainingAuditSetup:
    return TrainingAuditSetup(
        *tables, "label", canaries=200, claimed_epsilon=1.0, delta=1e-5, threat_models=(name,)
    )


def _text_setup(folder: Path, name: str) -> TrainingAuditSetup:
    """Text records (50 training, 400 population) and a tokenizer in ``folder``."""
    pytest.importorskip("transformers")
    from tests.text.tiny_lm import sentences, tokenizer_for, write_jsonl

    train, population = sentences(50, 3), sentences(400, 4)
    tokenizer_for(train + population).save_pretrained(folder / "tokenizer")
    text = TextCanaries("text", folder / "tokenizer")
    return TrainingAuditSetup(
        write_jsonl(folder / "train.jsonl", train),
        write_jsonl(folder / "population.jsonl", population),
        "text",
        canaries=200,
        claimed_epsilon=1.0,
        delta=1e-5,
        threat_models=(name,),
        text=text,
    )


def audit_a_rememberer(name: str, folder: Path, **changes: Any) -> TrainingAuditResult:
    """The one-run audit under threat model ``name`` (and the setup's other ``changes``) of a
    procedure that remembers its canaries and serves every threat model, on the tables
    :func:`write_tables` writes (text records for a threat model of text canaries)."""
    served = tuple(model.name for model in registered_threat_models())
    if threat_model(name).canaries == "text":
        setup = replace(_text_setup(folder, name), **changes)
        return audit_training(Remembers(served, setup.text), setup)
    setup = replace(_setup(write_tables(folder), name), **changes)
    return audit_training(Remembers(served), setup)


@pytest.mark.parametrize("name", NAMES)
def test_the_command_line_and_the_schema_offer_it(name: str) -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    command = sub.choices["audit-training"]
    action = next(a for a in command._actions if "--threat-model" in a.option_strings)
    assert name in (action.choices or ())
    described = threat_model_names()[name]
    assert threat_model(name).sees in described.summary
    assert threat_model(name).score in described.description
    schema = json.loads(
        (resources.files("epsstar") / "schemas" / "audit-training.schema.json").read_text("utf-8")
    )
    assert name in schema["$defs"]["threat_model_name"]["enum"]


@pytest.mark.parametrize("name", NAMES)
def test_an_audit_under_it_refutes_a_procedure_that_remembers(
    name: str, tmp_path: Path, validate_json: Callable[[str, Any], None]
) -> None:
    result = audit_a_rememberer(name, tmp_path)
    (audit,) = result.threat_models
    assert isinstance(audit, ThreatModelAudit)
    assert audit.threat_model is threat_model(name)
    assert result.refuted
    document = json.loads(json.dumps(result.to_dict()))
    validate_json("audit-training", document)
    assert document["threat_models"][0]["threat_model"]["name"] == name


@pytest.mark.parametrize("name", NAMES)
def test_a_procedure_that_does_not_serve_it_is_refused_in_one_line(
    name: str, tables: tuple[Path, Path]
) -> None:
    others = tuple(other for other in NAMES if other != name)
    with pytest.raises(InvalidInputError) as refused:
        audit_training(Remembers(others), _setup(tables, name))
    assert "\n" not in str(refused.value)
    assert repr(name) in str(refused.value)
