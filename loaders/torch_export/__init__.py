"""``torch.export`` programs (``torch.export.save``, ``.pt2`` files), run on the CPU.

PyTorch's documentation marks TorchScript as deprecated in favour of ``torch.export``: a
``.pt2`` archive holds one ``ExportedProgram``, a graph of ATen operators serialised as
JSON with its weights as raw tensor bytes. ``torch.export.load`` rebuilds it and
``ExportedProgram.module()`` runs it; no Python code of the exporter's is stored or run.

Before the archive is loaded without trust (``--trust-model``), every entry that loading
would unpickle, map into the process or evaluate is checked by the loader's own rules
(:mod:`epsstar.loaders.torch_export.archive`, both layouts torch reads).

After loading, every operator of the graph must be one of tensor computation: the
allowlist of :mod:`epsstar.loaders.torchscript.scan` (namespaces ``aten``, ``prim``,
``quantized``…, without the operators that touch files or the process), plus
``operator.getitem`` (which picks one result of a multi-output operator) and the arithmetic
and comparisons on symbolic sizes that a dynamic batch dimension brings
(:data:`SIZE_ARITHMETIC`); higher-order operators (``cond``, ``map``…) and custom
operators are refused without trust.

The program takes one tensor: the features' one tensor column as it is, or the ``(n, d)``
matrix of their scalar columns, as for TorchScript (:mod:`epsstar.loaders.torchscript`);
class labels, column names and what it returns come from the archive's extra files
(``torch.export.save(..., extra_files=...)``) under the same keys. A program exported
without a dynamic batch dimension (``torch.export.export`` without ``dynamic_shapes``)
takes only its example's batch size: records are then fed in chunks of exactly that size,
the last one padded with copies of its last record whose outputs are dropped.
"""

from __future__ import annotations

import math
import operator
from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.model.class_labels import (
    CLASSES_KEY,
    FEATURES_KEY,
    OUTPUTS_KEY,
    classes_from_text,
    features_from_text,
)
from epsstar.audit.model.declared_privacy import PRIVACY_KEY, privacy_from_text
from epsstar.audit.model.plugins import OutputKind, import_optional
from epsstar.exceptions import InputFileError, InvalidInputError
from epsstar.plumbing.runtime.threads import torch_threads

from .. import check_outputs_argument, first_line
from ..torchscript import TorchScriptModel, stated_outputs
from ..torchscript.scan import ALLOWED_NAMESPACES, refused_operators
from .archive import check_export_archive, refusal

__all__ = [
    "SIZE_ARITHMETIC",
    "TORCH_SIZE_FUNCTIONS",
    "ExportedModel",
    "TorchExportLoader",
    "check_export_archive",
    "check_program",
]

#: The Python functions a program may call on symbolic sizes (``n * 2`` for a reshape of a
#: dynamic batch): those torch.export's serializer writes for them, less ``operator.pow``
#: and ``operator.lshift``, whose constant operand could ask for an integer larger than
#: memory; with the ``torch.sym_*`` functions of :data:`TORCH_SIZE_FUNCTIONS`.
SIZE_ARITHMETIC: Final = frozenset(
    (
        operator.eq, operator.ne, operator.le, operator.ge, operator.lt, operator.gt,
        operator.neg, operator.pos, operator.mul, operator.add, operator.sub,
        operator.floordiv, operator.mod, operator.truediv, operator.and_, operator.or_,
        operator.rshift, math.trunc,
    )
)  # fmt: skip
#: The ``torch`` functions on symbolic sizes that torch.export's serializer writes.
TORCH_SIZE_FUNCTIONS: Final = (
    "sym_not", "sym_int", "sym_float", "sym_ite", "sym_max", "sym_min", "sym_sqrt",
)  # fmt: skip


def check_program(path: Path, program: Any, torch: Any) -> None:
    """Refuse a loaded program with an operator outside the allowlist (module docstring)."""
    refused = refused_operators(torch)
    sizes = SIZE_ARITHMETIC | {getattr(torch, name) for name in TORCH_SIZE_FUNCTIONS}
    for node in program.graph.nodes:
        if node.op != "call_function" or node.target is operator.getitem:
            continue
        if node.target in sizes:
            continue  # arithmetic on symbolic sizes
        target = node.target
        schema = getattr(target, "_schema", None)
        namespace = getattr(target, "namespace", None)
        name = str(schema.name) if schema is not None else repr(target)
        if namespace not in ALLOWED_NAMESPACES or name in refused:
            raise refusal(path, f"calls {name} (node {node.name})", name)


class ExportedModel(TorchScriptModel):
    """An ``ExportedProgram``'s module ready to predict; fed in chunks of its static batch
    size when it has one (module docstring)."""

    def __init__(self, path: Path, program: Any, torch: Any, **keywords: Any) -> None:
        super().__init__(path, program.module(), torch, **keywords)
        self._static_batch = _static_batch(program, path)

    def _run_batch(self, batch: NDArray[Any]) -> NDArray[Any]:
        size = self._static_batch
        if size is None or batch.shape[0] == size:
            return super()._run_batch(batch)
        parts = []
        for start in range(0, batch.shape[0], size):
            chunk = batch[start : start + size]
            padding = size - chunk.shape[0]
            if padding:
                chunk = np.concatenate([chunk, np.repeat(chunk[-1:], padding, axis=0)])
            parts.append(super()._run_batch(chunk)[: size - padding])
        return np.concatenate(parts)


def _static_batch(program: Any, path: Path) -> int | None:
    """The batch size the program is specialised to (``None``: a dynamic batch)."""
    inputs = program.graph_signature.user_inputs
    if len(inputs) != 1:
        raise InvalidInputError(
            f"the torch.export program {path} must take one tensor. Found {len(inputs)} "
            f"inputs: {', '.join(map(str, inputs))}."
        )
    (node,) = [n for n in program.graph.nodes if n.op == "placeholder" and n.name == inputs[0]]
    value = node.meta.get("val")
    shape = getattr(value, "shape", None)
    if shape is None or len(shape) == 0:
        return None
    first = shape[0]
    return first if isinstance(first, int) else None


class TorchExportLoader:
    """Loads ``torch.export`` archives (``.pt2``)."""

    name = "torch-export"
    suffixes: tuple[str, ...] = (".pt2",)
    takes_device = True

    def load(
        self,
        path: Path,
        *,
        outputs: OutputKind | None = None,
        trust: bool = False,
        device: str = "cpu",
    ) -> ExportedModel:
        """Open ``path``; without ``trust`` the archive and its graph are checked. The
        program runs on ``device`` (moved by ``torch.export.passes.move_to_device_pass``,
        which also moves the devices its graph names)."""
        outputs = check_outputs_argument(outputs)
        path = Path(path)
        torch = import_optional("torch", loader=self.name)
        torch_threads(torch)
        if not path.is_file():
            raise InputFileError(f"the model file must exist. Found no file at {path}.")
        if not trust:
            check_export_archive(path, torch)
        extra = {CLASSES_KEY: "", FEATURES_KEY: "", OUTPUTS_KEY: "", PRIVACY_KEY: ""}
        try:
            program = torch.export.load(str(path), extra_files=extra)
        except Exception as error:
            raise InputFileError(
                f"the model file must be a torch.export archive (torch.export.save). Found "
                f"{path} ({type(error).__name__}: {first_line(error)})."
            ) from None
        if not trust:
            check_program(path, program, torch)
        if device != "cpu":
            from torch.export.passes import move_to_device_pass

            program = move_to_device_pass(program, device)
        return ExportedModel(
            path,
            program,
            torch,
            classes=classes_from_text(extra[CLASSES_KEY], path),
            feature_names=features_from_text(extra[FEATURES_KEY], path),
            outputs=outputs,
            stated=stated_outputs(extra[OUTPUTS_KEY], path),
            declared_privacy=privacy_from_text(extra[PRIVACY_KEY], path),
            device=device,
        )
