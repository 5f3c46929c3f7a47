"""The procedure under audit, as this room sees it: train once on a table, score the canaries.

A :class:`Procedure` receives a :class:`RunRequest` — the run's training table (``--train``'s
rows and the canaries included in this run), the tables of every canary record, which gradient
canaries the run includes, the threat models to score — and returns :class:`RunScores`: one
score per canary for each threat model, what the run claims (:class:`Claim`) and the model it
made. :class:`CommandProcedure` runs a command template, :class:`CallableProcedure` a Python
function (a notebook's trainer); epsstar's own trainer is
``epsstar.training.threat_models.OwnTrainer``. Procedures travel to worker processes and Dask
workers by pickling, so they are frozen records of module-level classes.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import math
import os
import re
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, cast, runtime_checkable

import numpy as np

from epsstar.audit.model.loading import ModelFile, ModelObject
from epsstar.audit.model.plugins import OutputKind
from epsstar.audit.training_audit.external.command import CommandTemplate, run_command
from epsstar.audit.training_audit.external.initial_model import INIT_PLACEHOLDER, InitialModel
from epsstar.audit.training_audit.external.saved_model import find_saved_model
from epsstar.audit.training_audit.external.scoring import score_canaries
from epsstar.audit.training_audit.frames import read_frame
from epsstar.audit.training_audit.text.designs import TextCanaries
from epsstar.audit.training_audit.text.scoring import find_saved_folder, score_text_canaries
from epsstar.audit.training_audit.threat_models import (
    CanaryKind,
    ThreatModelName,
    black_box_names,
    threat_model,
)
from epsstar.exceptions import EpsstarError, InputFileError, InvalidInputError
from epsstar.plumbing.records.json_records import JsonRecord
from epsstar.plumbing.records.json_types import JsonObject, JsonValue
from epsstar.statistics._validation import FloatArray

__all__ = [
    "CallableProcedure",
    "Claim",
    "CommandProcedure",
    "FunctionProcedure",
    "Preparing",
    "Procedure",
    "RunRequest",
    "RunScores",
    "imported_function",
]


@dataclass(frozen=True, slots=True)
class Claim(JsonRecord):
    """What a training run says it guarantees, and who says so (``source``): (ε, δ)-DP when
    ``private``, no DP otherwise."""

    private: bool
    epsilon: float | None = None
    delta: float | None = None
    source: str = ""

    @classmethod
    def from_dict(cls, value: Mapping[str, JsonValue]) -> Claim:
        epsilon, delta = value.get("epsilon"), value.get("delta")
        return cls(
            private=bool(value.get("private")),
            epsilon=float(epsilon) if isinstance(epsilon, int | float) else None,
            delta=float(delta) if isinstance(delta, int | float) else None,
            source=str(value.get("source", "")),
        )


@dataclass(frozen=True, slots=True)
class RunRequest:
    """One training run to do (see the module). ``index`` counts runs from 0; ``base_train`` is
    ``--train``, the rows every run holds (what an adversary may know, unlike ``train``, which
    holds the included canaries too), and ``base_records`` their number, the same for every
    run; ``scratch`` is an empty folder, removed after the run."""

    index: int
    seed: int
    train: Path
    base_train: Path
    base_records: int
    canaries: dict[CanaryKind, Path]
    gradient_included: tuple[bool, ...]
    threat_models: tuple[ThreatModelName, ...]
    scratch: Path


@dataclass(frozen=True, slots=True)
class RunScores(JsonRecord):
    """What one run gave: per threat model, one score per canary of its kind, in the canaries'
    order; the run's claim (``None``: it states none); the model (``JsonObject``: file, SHA-256,
    loader) and the run's seconds. Its JSON is the record a resumable audit keeps of a
    finished run."""

    scores: dict[ThreatModelName, FloatArray] = field(repr=False)
    claim: Claim | None
    model: JsonObject
    seconds: float

    @classmethod
    def from_dict(cls, value: Mapping[str, JsonValue], source: Path) -> RunScores:
        """A record written by ``to_dict()``; ``source`` names the file in errors."""
        bad = InputFileError(
            f"{source}: must be a finished run's record written by audit-training. "
            "Found something else."
        )
        scores, claim, model = value.get("scores"), value.get("claim"), value.get("model")
        seconds = value.get("seconds")
        if not (
            isinstance(scores, dict)
            and isinstance(model, dict)
            and isinstance(seconds, int | float)
            and math.isfinite(seconds)
        ):
            raise bad
        try:
            parsed = {
                threat_model(name).name: np.asarray(values, dtype=np.float64)
                for name, values in scores.items()
            }
        except (EpsstarError, TypeError, ValueError):
            raise bad from None
        if not all(array.ndim == 1 and np.isfinite(array).all() for array in parsed.values()):
            raise bad
        return cls(
            scores=parsed,
            claim=Claim.from_dict(claim) if isinstance(claim, dict) else None,
            model=model,
            seconds=float(seconds),
        )


class Procedure(Protocol):
    """A training procedure under audit (see the module)."""

    def describe(self) -> JsonObject:
        """What the procedure is, for the JSON and for recognising a resumed audit."""
        ...

    def serves(self) -> tuple[ThreatModelName, ...]:
        """The threat models its runs can be scored under."""
        ...

    def gradient_capacity(self) -> int:
        """How many gradient canaries a run can take (0: none)."""
        ...

    def claim(self, base_records: int) -> Claim | None:
        """What the runs claim, when known before training: runs on ``--train``'s
        ``base_records`` rows and the canaries each includes."""
        ...

    def run(self, request: RunRequest) -> RunScores:
        """Train once as ``request`` says and score its canaries."""
        ...


@runtime_checkable
class Preparing(Protocol):
    """A procedure that learns from public data once, before any run: epsstar's own trainer
    pretraining the network every run starts from (``--init pretrained``)."""

    def needs_public(self) -> bool:
        """Whether :meth:`prepared` reads the public data (else the procedure is ready)."""
        ...

    def prepared(self, public: Path, seed: int) -> Procedure:
        """The procedure ready for its runs, having read ``public`` (the population without
        the records the canaries come from, in ``--train``'s format) with ``seed``; fixed
        before any inclusion bit is drawn into a run."""
        ...


class _BlackBox:
    """What a procedure seen only through the model it saves answers: the black-box threat
    models, no gradient canaries, and no claim of its own (its model file may state one)."""

    __slots__ = ()

    def serves(self) -> tuple[ThreatModelName, ...]:
        return black_box_names()

    def gradient_capacity(self) -> int:
        return 0

    def claim(self, base_records: int) -> Claim | None:
        return None


@dataclass(frozen=True, slots=True)
class CommandProcedure(_BlackBox):
    """A command template (:mod:`.external.command`) whose saved model
    (:mod:`.external.saved_model`) is scored through the final model's predictions
    (:mod:`.external.scoring`): the black-box threat models."""

    template: CommandTemplate
    label_column: str
    features: tuple[str, ...] | None = None
    loader: str | None = None
    outputs: OutputKind | None = None
    trust: bool = False
    #: The model every run starts from (``--init``), whose copy ``{init}`` names.
    init: InitialModel | None = None
    #: The text canaries of a language model's fine-tuning (``None``: a table's canaries).
    text: TextCanaries | None = None

    def __post_init__(self) -> None:
        if self.template.uses_init and self.init is None:
            raise InvalidInputError(
                f"--command uses {INIT_PLACEHOLDER}, the model each run starts from: give it "
                f"with --init PATH. Found {self.template.text!r} without --init."
            )
        if self.init is not None and not self.template.uses_init:
            raise InvalidInputError(
                f"--init needs {INIT_PLACEHOLDER} in --command, where each run's copy of the "
                f"model goes. Found {self.template.text!r}."
            )

    def describe(self) -> JsonObject:
        described: JsonObject = {
            "kind": "command",
            "command": self.template.text,
            "timeout_seconds": self.template.timeout,
            "loader": self.loader,
            "outputs": self.outputs,
        }
        if self.init is not None:  # named only when given: an audit without it is as before
            described["init"] = self.init.describe()
        return described

    def run(self, request: RunRequest) -> RunScores:
        out = request.scratch / "out"
        out.mkdir()
        init = None if self.init is None else self.init.for_run(request.scratch)
        seconds = run_command(
            self.template, request.train, out, request.seed, run=request.index, init=init
        )
        if self.init is not None:
            self.init.check_unchanged(request.index)
        return _saved_model_scores(self, request, out, seconds)


def _saved_model_scores(
    procedure: CommandProcedure | FunctionProcedure,
    request: RunRequest,
    out: Path,
    seconds: float,
) -> RunScores:
    """The canaries' scores under the one model a run saved in ``out``, and the claim its
    file states (``epsstar.privacy`` metadata), read as ``epsstar audit`` reads a model."""
    if procedure.text is not None:
        scored = score_text_canaries(
            find_saved_folder(out, run=request.index),
            request.canaries["text"],
            procedure.text,
            base=None
            if procedure.init is None or not procedure.init.folder
            else procedure.init.path,
            trust=procedure.trust,
        )
    else:
        path = find_saved_model(out, procedure.loader, run=request.index)
        scored = score_canaries(
            ModelFile(path, procedure.loader, procedure.outputs, procedure.trust),
            request.canaries,
            procedure.label_column,
            procedure.features,
        )
    scores = {name: scored.losses[threat_model(name).canaries] for name in request.threat_models}
    declared = scored.declared
    claim = None
    if declared is not None:
        claim = Claim(
            declared.private,
            declared.epsilon,
            declared.delta,
            "the saved model's epsstar.privacy metadata (training.json of epsstar train)",
        )
    return RunScores(scores, claim, scored.describe(), seconds)


#: ``package.module:name`` (the name may be dotted: a class's method).
_ENTRY = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


@functools.cache
def imported_function(entry: str) -> Callable[..., Any]:
    """The function ``entry`` (``package.module:name``) names, imported once in this
    process: a worker that does many runs imports the trainer's module (and torch,
    scikit-learn, ...) once, not once per run as a command does. The working folder is on
    the import path, as it is for ``python -m``, so ``--function fit:fit`` finds ``fit.py``
    there."""
    if not _ENTRY.match(entry):
        raise InvalidInputError(
            f"--function must name a function as package.module:name. Found {entry!r}."
        )
    module_name, _, name = entry.partition(":")
    here = os.getcwd()
    if here not in sys.path:
        sys.path.insert(0, here)
    try:
        value: Any = importlib.import_module(module_name)
    except Exception as error:  # the user's module: any error it raises on import
        reason = (str(error).strip().splitlines() or [""])[0][:200]
        raise InvalidInputError(
            f"--function's module {module_name!r} must import. Found {type(error).__name__}: "
            f"{reason}"
        ) from None
    for part in name.split("."):
        if not hasattr(value, part):
            raise InvalidInputError(
                f"--function must name a function of {module_name!r}. Found no {name!r} there."
            )
        value = getattr(value, part)
    if not callable(value):
        raise InvalidInputError(
            f"--function must name a callable. Found {entry!r}, a {type(value).__name__}."
        )
    return cast("Callable[..., Any]", value)


def _takes(function: Callable[..., Any], name: str) -> bool:
    """Whether ``function`` can be called with the keyword argument ``name``."""
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):  # a callable whose signature cannot be read
        return False
    return name in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )


@dataclass(frozen=True, slots=True)
class FunctionProcedure(_BlackBox):
    """``--function package.module:fit``: a Python function called as
    ``fit(train_path, out_dir, seed)`` that trains once on the run's table and saves one
    model in ``out_dir``, read and scored as a command's saved model is; with ``init`` (the
    model of ``--init``) it is called with ``init=`` the path of the run's copy, and must take
    that argument (its signature is read once, when the procedure is made). It runs in the
    worker processes of ``--jobs`` (or in this one), each importing it once
    (:func:`imported_function`), so that many runs of a small trainer cost its training and
    not a Python start with its imports each. Unlike a command it has no timeout: a run ends
    when the function returns."""

    entry: str
    label_column: str
    features: tuple[str, ...] | None = None
    loader: str | None = None
    outputs: OutputKind | None = None
    trust: bool = False
    init: InitialModel | None = None
    text: TextCanaries | None = None

    def __post_init__(self) -> None:
        if self.init is not None and not _takes(imported_function(self.entry), "init"):
            raise InvalidInputError(
                f"--init needs a function that takes it: {self.entry}(train_path, out_dir, "
                f"seed, init=path) starts from the model at path. Found {self.entry} without "
                "an init parameter."
            )

    def describe(self) -> JsonObject:
        described: JsonObject = {
            "kind": "function",
            "function": self.entry,
            "loader": self.loader,
            "outputs": self.outputs,
        }
        if self.init is not None:  # named only when given: an audit without it is as before
            described["init"] = self.init.describe()
        return described

    def run(self, request: RunRequest) -> RunScores:
        fit = imported_function(self.entry)
        out = request.scratch / "out"
        out.mkdir()
        init = {} if self.init is None else {"init": str(self.init.for_run(request.scratch))}
        started = time.perf_counter()
        try:
            fit(str(request.train), str(out), request.seed, **init)
        except Exception as error:  # the user's function: any error it raises
            reason = (str(error).strip().splitlines() or [""])[0][:200]
            raise InvalidInputError(
                f"--function {self.entry} must train and save one model for run "
                f"{request.index + 1}. Found {type(error).__name__}: {reason}"
            ) from None
        if self.init is not None:
            self.init.check_unchanged(request.index)
        return _saved_model_scores(self, request, out, time.perf_counter() - started)


@dataclass(frozen=True, slots=True)
class CallableProcedure(_BlackBox):
    """A Python function that trains: ``trainer(train_frame) -> fitted model``, or
    ``trainer(train_frame, seed=...)`` when it takes a ``seed`` (the run's, as ``{seed}`` of a
    command). Each run hands it its training table as the command gets it (``--train``'s rows
    and the canaries it includes, shuffled), read into a pandas DataFrame; the model it returns
    is loaded by the loader that claims it and scored as a command's saved model is: the
    black-box threat models. Runs are done in this process, one after the other."""

    trainer: Callable[..., Any]
    label_column: str
    features: tuple[str, ...] | None = None
    loader: str | None = None
    outputs: OutputKind | None = None

    def describe(self) -> JsonObject:
        name = getattr(self.trainer, "__qualname__", type(self.trainer).__qualname__)
        module = getattr(self.trainer, "__module__", None) or type(self.trainer).__module__
        return {
            "kind": "callable",
            "trainer": f"{module}.{name}",
            "loader": self.loader,
            "outputs": self.outputs,
        }

    def _takes_seed(self) -> bool:
        return _takes(self.trainer, "seed")

    def run(self, request: RunRequest) -> RunScores:
        frame = read_frame(request.train, "the run's training table")
        seed = {"seed": request.seed} if self._takes_seed() else {}
        started = time.perf_counter()
        try:
            model = self.trainer(frame, **seed)
        except Exception as error:
            reason = (str(error).strip().splitlines() or [""])[0][:200]
            raise InvalidInputError(
                f"the trainer must return a fitted model for run {request.index + 1}. Found "
                f"{type(error).__name__}: {reason}"
            ) from error
        seconds = time.perf_counter() - started
        scored = score_canaries(
            ModelObject(model, self.loader, self.outputs),
            request.canaries,
            self.label_column,
            self.features,
        )
        scores = {
            name: scored.losses[threat_model(name).canaries] for name in request.threat_models
        }
        return RunScores(scores, None, scored.describe(), seconds)
