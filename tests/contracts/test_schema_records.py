"""Each JSON schema in epsstar/schemas/ describes the records that write its documents.

The schemas are kept by hand, the JSON is written by the records
(:mod:`epsstar.plumbing.records.json_records`); :data:`RECORDS` names, for each object of each
schema, the record whose JSON it describes, and the tests hold the two to each other: the
schema's keys are the record's keys, and every record a document can reach is listed.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import types
import typing
from collections.abc import Iterator
from importlib import resources
from typing import Any

import pytest

from epsstar.audit.data.column_match import ColumnPair
from epsstar.audit.data.configs.manifest import ManifestEntry
from epsstar.audit.data.extraction_settings import ExtractionSettings
from epsstar.audit.data.files import FileDigest
from epsstar.audit.data.summary_plans import SideSummary, SummaryPlans
from epsstar.audit.engines.dask_engine import Engine
from epsstar.audit.inputs.served import ServedSource
from epsstar.audit.many import FleetDocument, ModelAudit, StrategySummary
from epsstar.audit.model.folders import ModelFolder
from epsstar.audit.model.output_reading import OutputReading
from epsstar.audit.model.plugins import LoaderInfo
from epsstar.audit.model.text_model import Adapter, TextModelInfo
from epsstar.audit.output import premise_result, text_result
from epsstar.audit.output.attack_result import AttackResult
from epsstar.audit.output.provenance import EngineRun, Provenance, Timings
from epsstar.audit.output.provenance import ReferenceModel as ReadReferenceModel
from epsstar.audit.output.result import (
    AuditResult,
    DeclaredAgainst,
    EpsilonDocument,
    StampedEstimate,
)
from epsstar.audit.output.slice_result import SliceResult, SliceRow
from epsstar.audit.output.threat_result import (
    AttributeInference,
    ExposedRecords,
    ExposedRow,
    RecordsPerUser,
    UserAggregate,
    UserLevel,
)
from epsstar.audit.training_audit.procedure import Claim
from epsstar.audit.training_audit.result import (
    RunRecord,
    ThreatModelAudit,
    TightnessRow,
    TrainingAuditResult,
)
from epsstar.audit.training_audit.text.designs import TextCanaryRecord
from epsstar.audit.training_audit.threat_models import ThreatModel
from epsstar.plumbing.records.by_side import BySide
from epsstar.plumbing.records.json_records import JsonRecord, json_keys
from epsstar.statistics.attacks.extraction import ExtractionRate, Rate
from epsstar.statistics.auditing.exposure import Exposure
from epsstar.statistics.auditing.feasibility import CanaryProjection
from epsstar.statistics.auditing.group_privacy import GroupClaim
from epsstar.statistics.auditing.identifiability import IdentifiabilityReading
from epsstar.statistics.auditing.many_runs.bounds import ManyRunBounds, MethodBound
from epsstar.statistics.auditing.one_run.bounds import OneRunBounds
from epsstar.statistics.auditing.one_run.choose_k import ChosenK
from epsstar.statistics.auditing.one_run.guess_rules import RuleBounds
from epsstar.statistics.bounds.from_counts import EpsilonLowerBound
from epsstar.statistics.bounds.gate import GateStatistic
from epsstar.statistics.bounds.leak_test import LeakTest
from epsstar.statistics.bounds.premise_tests import PremiseTest
from epsstar.statistics.estimators.delta_profile import DeltaPoint
from epsstar.statistics.fitting.goodness_of_fit import GoodnessOfFit
from epsstar.statistics.readings.attribute import AttributeSecurity
from epsstar.statistics.readings.readings import Readings, TprReading
from epsstar.statistics.results import BootstrapInterval, FitReport
from epsstar.statistics.transform import LossTransform
from epsstar.statistics.utility import Utility
from epsstar.training.attribute import AttributeTracking
from epsstar.training.results import (
    DataSummary,
    EpochStats,
    Hyperparameters,
    ModelSummary,
    PrivacySummary,
    Standardisation,
    TrainingResult,
    TrainingUtility,
    Versions,
)
from epsstar.training.runs.references import Recipe, ReferencesResult
from epsstar.training.runs.references import ReferenceModel as TrainedReferenceModel
from epsstar.training.text.results import (
    LoraSummary,
    TextDataSummary,
    TextHyperparameters,
    TextModelSummary,
    TextTrainingResult,
    TextVersions,
)

#: For each object of each schema (``schema name``, JSON pointer), the record whose JSON it
#: describes. An object with ``oneOf``/``anyOf`` branches is described by all its branches
#: together (a record whose keys vary, or ``null`` beside an object).
RECORDS: dict[tuple[str, str], type] = {
    # audit.schema.json
    ("audit", "#"): AuditResult,
    ("audit", "#/properties/declared_privacy"): DeclaredAgainst,
    ("audit", "#/properties/epsilon_star_by_delta/items"): DeltaPoint,
    ("audit", "#/$defs/blind_baseline"): premise_result.BlindBaseline,
    ("audit", "#/$defs/blind_baseline/properties/fitted_rows"): BySide,
    ("audit", "#/$defs/blind_baseline/properties/tests/items"): PremiseTest,
    ("audit", "#/$defs/exposed_records"): ExposedRecords,
    ("audit", "#/$defs/exposed_records/properties/records/items"): ExposedRow,
    ("audit", "#/$defs/user_level"): UserLevel,
    ("audit", "#/$defs/user_level/properties/records_per_user"): RecordsPerUser,
    ("audit", "#/$defs/user_level/properties/aggregates/items"): UserAggregate,
    ("audit", "#/$defs/attribute_inference"): AttributeInference,
    ("audit", "#/$defs/attribute_inference/properties/training_bound"): AttributeSecurity,
    ("audit", "#/$defs/text_windows"): text_result.WindowsUsed,
    ("audit", "#/$defs/text_audit"): text_result.TextAudit,
    ("audit", "#/$defs/text_audit/properties/model"): TextModelInfo,
    ("audit", "#/$defs/text_audit/properties/model/properties/adapter"): Adapter,
    ("audit", "#/$defs/text_audit/properties/tokens"): BySide,
    ("audit", "#/$defs/text_audit/properties/windows"): BySide,
    ("audit", "#/$defs/text_audit/properties/most_exposed/items"): text_result.ExposedRecord,
    ("audit", "#/$defs/text_audit/properties/blind_baseline"): text_result.BlindBaseline,
    ("audit", "#/$defs/text_extraction"): text_result.Extraction,
    ("audit", "#/$defs/text_extraction/properties/settings"): ExtractionSettings,
    ("audit", "#/$defs/text_extraction/properties/records"): BySide,
    ("audit", "#/$defs/text_extraction/properties/rates/items"): ExtractionRate,
    ("audit", "#/$defs/text_extraction/properties/most_extracted/items"): (
        text_result.ExtractedRecord
    ),
    ("audit", "#/$defs/extraction_side"): text_result.ExtractionSide,
    ("audit", "#/$defs/extraction_rate"): Rate,
    ("audit", "#/$defs/slices"): SliceResult,
    ("audit", "#/$defs/slices/properties/slices/items"): SliceRow,
    ("audit", "#/$defs/attack"): AttackResult,
    ("audit", "#/$defs/output_reading"): OutputReading,
    ("audit", "#/$defs/lower_bound"): EpsilonLowerBound,
    ("audit", "#/$defs/readings"): Readings,
    ("audit", "#/$defs/readings/properties/tpr_at_fpr/items"): TprReading,
    ("audit", "#/$defs/utility"): Utility,
    ("audit", "#/$defs/loader"): LoaderInfo,
    ("audit", "#/$defs/provenance"): Provenance,
    ("audit", "#/$defs/provenance/properties/served"): ServedSource,
    ("audit", "#/$defs/provenance/properties/model_folder"): ModelFolder,
    ("audit", "#/$defs/provenance/properties/model_files/items"): FileDigest,
    ("audit", "#/$defs/provenance/properties/reference_models/items"): ReadReferenceModel,
    ("audit", "#/$defs/provenance/properties/columns/items"): ColumnPair,
    ("audit", "#/$defs/provenance/properties/engine"): EngineRun,
    ("audit", "#/$defs/provenance/properties/summaries"): SummaryPlans,
    ("audit", "#/$defs/provenance/properties/seconds"): Timings,
    ("audit", "#/$defs/summary"): SideSummary,
    ("audit", "#/$defs/gate"): GateStatistic,
    ("audit", "#/$defs/gate/properties/leak_test"): LeakTest,
    # epsilon.schema.json
    ("epsilon", "#"): EpsilonDocument,
    ("epsilon", "#/$defs/result"): StampedEstimate,
    ("epsilon", "#/$defs/fit"): FitReport,
    ("epsilon", "#/$defs/goodness_of_fit"): GoodnessOfFit,
    ("epsilon", "#/$defs/transform"): LossTransform,
    ("epsilon", "#/$defs/interval"): BootstrapInterval,
    # audit-many.schema.json
    ("audit-many", "#"): FleetDocument,
    ("audit-many", "#/$defs/engine"): Engine,
    ("audit-many", "#/$defs/strategy"): StrategySummary,
    ("audit-many", "#/$defs/entry"): ManifestEntry,
    ("audit-many", "#/$defs/model_fields"): ModelAudit,
    # audit-training.schema.json
    ("audit-training", "#"): TrainingAuditResult,
    ("audit-training", "#/properties/tightness/items"): TightnessRow,
    ("audit-training", "#/properties/data/items"): FileDigest,
    ("audit-training", "#/properties/training_runs/items"): RunRecord,
    ("audit-training", "#/properties/training_runs/items/properties/claim"): Claim,
    ("audit-training", "#/$defs/threat_model_audit"): ThreatModelAudit,
    ("audit-training", "#/$defs/threat_model_audit/properties/threat_model"): ThreatModel,
    ("audit-training", "#/$defs/threat_model_audit/properties/chosen_k"): ChosenK,
    ("audit-training", "#/$defs/threat_model_audit/properties/one_run"): OneRunBounds,
    ("audit-training", "#/$defs/threat_model_audit/properties/many_runs"): ManyRunBounds,
    (
        "audit-training",
        "#/$defs/threat_model_audit/properties/many_runs/properties/bounds/items",
    ): MethodBound,
    ("audit-training", "#/$defs/threat_model_audit/properties/identifiability"): (
        IdentifiabilityReading
    ),
    ("audit-training", "#/$defs/threat_model_audit/properties/guess_rule"): RuleBounds,
    ("audit-training", "#/$defs/threat_model_audit/properties/canaries_to_refute"): (
        CanaryProjection
    ),
    ("audit-training", "#/properties/group_claim"): GroupClaim,
    ("audit-training", "#/properties/text_canaries"): TextCanaryRecord,
    ("audit-training", "#/properties/text_canaries/properties/exposure"): Exposure,
    # training.schema.json
    ("training", "#"): TrainingResult,
    ("training", "#/properties/data"): DataSummary,
    ("training", "#/properties/model"): ModelSummary,
    ("training", "#/properties/model/properties/standardisation"): Standardisation,
    ("training", "#/properties/hyperparameters"): Hyperparameters,
    ("training", "#/properties/utility"): BySide,
    ("training", "#/properties/history/items"): EpochStats,
    ("training", "#/properties/versions"): Versions,
    ("training", "#/$defs/attribute_inference"): AttributeTracking,
    ("training", "#/$defs/attribute_inference/properties/bound"): AttributeSecurity,
    ("training", "#/$defs/attribute_inference/properties/data_independent_bound"): (
        AttributeSecurity
    ),
    ("training", "#/$defs/utility"): TrainingUtility,
    ("training", "#/$defs/privacy"): PrivacySummary,
    # text-training.schema.json
    ("text-training", "#"): TextTrainingResult,
    ("text-training", "#/properties/data"): TextDataSummary,
    ("text-training", "#/properties/model"): TextModelSummary,
    ("text-training", "#/properties/model/properties/lora"): LoraSummary,
    ("text-training", "#/properties/hyperparameters"): TextHyperparameters,
    ("text-training", "#/properties/versions"): TextVersions,
    # references.schema.json
    ("references", "#"): ReferencesResult,
    ("references", "#/properties/recipe"): Recipe,
    ("references", "#/properties/models/items"): TrainedReferenceModel,
}

#: The objects of the schemas that no record writes, and what writes them.
WRITTEN_WITHOUT_RECORD: dict[tuple[str, str], str] = {
    ("audit", "#/properties/utility"): "a mapping by side of the audit's Utility records",
    ("audit", "#/$defs/attack/properties/settings"): "each attack's settings, a JSON object",
    ("audit", "#/$defs/provenance/properties/engine/properties/partitions"): (
        "a mapping by side of the Dask partitions"
    ),
    ("epsilon", "#/$defs/result/properties/tail_fit/oneOf/1/additionalProperties"): (
        "each side's tail model, the JSON the tails methods give"
    ),
    ("audit-training", "#/properties/procedure"): "the procedure's own description",
    ("training", "#/$defs/fingerprint"): "the fingerprint of the run's inputs",
    ("training", "#/$defs/fingerprint/properties/data"): "the fingerprint of the run's inputs",
    ("training", "#/$defs/privacy/properties/accountant"): "the accountant's own description",
    ("training", "#/$defs/privacy/properties/bayes_security"): (
        "a mapping by neighbouring relation of Bayes security readings"
    ),
    ("training", "#/$defs/bayes_security_reading"): "a Bayes security reading of the accountant",
    **{
        ("demo-results", pointer): "epsstar demo: its results.json, a JSON object"
        for pointer in (
            "#",
            "#/properties/dataset",
            "#/properties/settings",
            "#/properties/seconds",
            "#/$defs/model",
            "#/$defs/model/properties/entry",
            "#/$defs/model/properties/entry/properties/params",
            "#/$defs/model/properties/training",
        )
    },
}

#: The records whose keys depend on their values, so that no fixed list holds them.
VARYING_KEYS: dict[type, str] = {
    FitReport: "a fitted distribution writes the parameters of its family",
}

#: The records each document is written from.
DOCUMENTS: tuple[type, ...] = (
    AuditResult,
    EpsilonDocument,
    FleetDocument,
    TrainingAuditResult,
    TrainingResult,
    TextTrainingResult,
    ReferencesResult,
)


def _schema(name: str) -> dict[str, Any]:
    text = (resources.files("epsstar") / "schemas" / f"{name}.schema.json").read_text("utf-8")
    document: dict[str, Any] = json.loads(text)
    return document


def _at(document: dict[str, Any], pointer: str) -> dict[str, Any]:
    node: Any = document
    for part in pointer.removeprefix("#").split("/")[1:]:
        node = node[int(part)] if isinstance(node, list) else node[part]
    assert isinstance(node, dict), pointer
    return node


def _objects(node: object, pointer: str = "#") -> Iterator[str]:
    """The pointer of every object in a schema that lists ``properties``."""
    if isinstance(node, dict):
        if "properties" in node:
            yield pointer
        for key, value in node.items():
            yield from _objects(value, f"{pointer}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _objects(value, f"{pointer}/{index}")


def _branches(node: dict[str, Any]) -> list[dict[str, Any]]:
    """The object itself and its ``oneOf``/``anyOf`` branches that list properties."""
    found = [node] if "properties" in node else []
    for key in ("oneOf", "anyOf"):
        found += [branch for branch in node.get(key, ()) if "properties" in branch]
    return found


def _keys(node: dict[str, Any], schema: dict[str, Any]) -> tuple[set[str], set[str]]:
    """The keys an object's schema lists, and those it requires, over its branches and the
    object of the same schema that it extends (a local ``$ref`` beside its own keys)."""
    listed: set[str] = set()
    required: set[str] = set()
    for branch in _branches(node):
        listed |= set(branch["properties"])
        required |= set(branch.get("required", ()))
    reference = node.get("$ref")
    if isinstance(reference, str) and reference.startswith("#/"):
        extended, extended_required = _keys(_at(schema, reference), schema)
        listed |= extended
        required |= extended_required
    return listed, required


SCHEMA_NAMES = (
    "audit",
    "epsilon",
    "audit-many",
    "audit-training",
    "training",
    "text-training",
    "references",
)


def _described(schema: str, pointer: str) -> bool:
    """Whether the table names this object or the object whose branch it is."""
    if (schema, pointer) in RECORDS or (schema, pointer) in WRITTEN_WITHOUT_RECORD:
        return True
    parent, _, index = pointer.rpartition("/")
    owner, _, kind = parent.rpartition("/")
    return index.isdigit() and kind in ("oneOf", "anyOf") and (schema, owner) in RECORDS


@pytest.mark.parametrize("name", [*SCHEMA_NAMES, "demo-results"])
def test_every_object_of_the_schema_is_in_the_table(name: str) -> None:
    unlisted = [pointer for pointer in _objects(_schema(name)) if not _described(name, pointer)]
    assert unlisted == [], f"{name}.schema.json: name the record of {unlisted}"


@pytest.mark.parametrize(
    ("schema", "pointer"), sorted(RECORDS), ids=[f"{s}:{p}" for s, p in sorted(RECORDS)]
)
def test_the_schema_lists_the_keys_of_its_record(schema: str, pointer: str) -> None:
    record = RECORDS[schema, pointer]
    if record in VARYING_KEYS:
        pytest.skip(f"{record.__name__}: {VARYING_KEYS[record]}")
    listed, required = _keys(_at(_schema(schema), pointer), _schema(schema))
    keys = set(json_keys(record))
    assert sorted(listed - keys) == [], f"{pointer}: keys {record.__name__} never writes"
    assert sorted(keys - listed) == [], f"{pointer}: keys of {record.__name__} not in the schema"
    assert required <= keys


def _namespace() -> dict[str, Any]:
    """Every class of epsstar's loaded modules by name, to read the annotations that name
    a class their module imports only for type checking."""
    found: dict[str, Any] = {}
    for name, module in list(sys.modules.items()):
        if name.startswith("epsstar") and module is not None:
            found.update(
                (attribute, value)
                for attribute, value in vars(module).items()
                if isinstance(value, type)
            )
    return found


NAMESPACE = _namespace()


def _evaluated(annotation: object, where: str) -> object:
    """An annotation (a text under ``from __future__ import annotations``) as an object."""
    if not isinstance(annotation, str):
        return annotation
    return eval(annotation, {**NAMESPACE, **vars(sys.modules[where])})


def _classes(hint: object) -> Iterator[type]:
    """The classes an annotation names (``X | None``, ``tuple[X, ...]``, ``BySide[X]``...)."""
    origin = typing.get_origin(hint)
    if isinstance(hint, type):
        yield hint
    elif origin is not None:
        if isinstance(origin, type) and origin is not types.UnionType:
            yield origin
        for argument in typing.get_args(hint):
            yield from _classes(argument)


def _rule(item: dataclasses.Field[Any]) -> Any:
    return item.metadata.get("epsstar.json")


def _written_types(record: type) -> Iterator[object]:
    """The annotations of what a record's JSON holds: its written fields (a flattened
    field's too) and its JSON properties' values."""
    for item in dataclasses.fields(record):
        rule = _rule(item)
        if rule is None or not rule.skip:
            yield _evaluated(item.type, record.__module__)
    for klass in record.__mro__:
        for value in vars(klass).values():
            if isinstance(value, property) and hasattr(value, "json_name") and value.fget:
                returned = value.fget.__annotations__.get("return")
                yield _evaluated(returned, value.fget.__module__)


def _reachable() -> dict[type, type]:
    """Every record a document's JSON holds, with the record that holds it."""
    found: dict[type, type] = {}
    waiting = list(DOCUMENTS)
    seen: set[type] = set(DOCUMENTS)
    while waiting:
        record = waiting.pop()
        for hint in _written_types(record):
            for klass in _classes(hint):
                if dataclasses.is_dataclass(klass) and klass not in seen:
                    seen.add(klass)
                    found[klass] = record
                    waiting.append(klass)
    return found


def _flattened(records: set[type]) -> set[type]:
    """The records whose keys a parent among ``records`` writes as its own (``flatten``)."""
    found: set[type] = set()
    for record in records:
        for item in dataclasses.fields(record):
            rule = _rule(item)
            if rule is not None and rule.flatten:
                hint = _evaluated(item.type, record.__module__)
                found |= {k for k in _classes(hint) if dataclasses.is_dataclass(k)}
    return found


def test_every_record_a_document_holds_is_in_the_table() -> None:
    listed = set(RECORDS.values())
    reachable = _reachable()
    flattened = _flattened({*DOCUMENTS, *reachable})
    missing = {
        record.__qualname__: f"held by {holder.__qualname__}"
        for record, holder in reachable.items()
        if record not in listed | flattened
    }
    assert missing == {}


def test_every_record_in_the_table_writes_its_json_from_its_fields() -> None:
    handwritten = [
        record.__qualname__
        for record in set(RECORDS.values())
        if not issubclass(record, JsonRecord) or "to_dict" in vars(record)
    ]
    assert handwritten == []
