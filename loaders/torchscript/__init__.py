"""TorchScript archives (``torch.jit.save``), run on the CPU.

The module is loaded with ``torch.jit.load(path, map_location="cpu")``, put in
``eval()`` mode and called under ``torch.inference_mode()`` in chunks. Without trust
(``--trust-model``) the archive is first checked by :mod:`epsstar.loaders.torchscript.scan`
(no ``__setstate__``, and no operator that touches files or the process in any method of
any submodule); with trust it is loaded as it is.

The module takes one tensor and returns one tensor: ``(n,)`` or ``(n, 1)`` for a binary
model (``P(y = 1)`` or its log-odds), ``(n, K)`` for ``K`` classes. Its input is the
features' one tensor column as it is (an image batch ``(n, 1, 8, 8)``), or the ``(n, d)``
matrix of their scalar columns; either is cast to the dtype of the module's first
floating-point parameter (float32 if it has none).

The archive's extra files, if the exporter wrote them, give the class labels of the
output columns (:data:`~epsstar.audit.model.class_labels.CLASSES_KEY`, read into
:attr:`classes`) and the names of the input columns
(:data:`~epsstar.audit.model.class_labels.FEATURES_KEY`, read into :attr:`feature_names`, and
``n_features`` is their number). Without recorded names the input width is unknown
(``n_features`` is ``None``; a module's layers do not say what it takes), a wrong width
surfaces as the module's own error, reported as
:class:`~epsstar.exceptions.InvalidInputError`, and logits vs probabilities are detected
by the rule of :mod:`epsstar.loaders` on the first batch of real records, unless
``outputs=`` says, or the archive's extra file :data:`OUTPUTS_KEY` (``"logits"`` or
``"probabilities"``, written by epsstar's trainer) says. torch is imported only when a
file is loaded.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.model.class_labels import (
    CLASSES_KEY,
    FEATURES_KEY,
    OUTPUTS_KEY,
    classes_from_text,
    features_from_text,
)
from epsstar.audit.model.declared_privacy import PRIVACY_KEY, DeclaredPrivacy, privacy_from_text
from epsstar.audit.model.features import Features
from epsstar.audit.model.output_reading import OutputReading
from epsstar.audit.model.plugins import ObjectIdentity, OutputKind, import_optional
from epsstar.exceptions import InputFileError, InvalidInputError
from epsstar.plumbing.runtime.threads import torch_threads
from epsstar.plumbing.runtime.torchscript_deprecation import torchscript_deprecation_silenced

from .. import (
    OUTPUT_KINDS,
    BatchedModel,
    check_outputs_argument,
    first_line,
    in_memory,
    instance_of,
    object_source,
)
from .scan import check_archive_code, check_module

__all__ = ["TorchScriptLoader", "TorchScriptModel", "stated_outputs"]

#: The dimensions torch says an input must have ("Expected 3D ... or 4D", "4-dimensional").
_DIMENSIONS = re.compile(r"\b(\d)(?:D|-dimensional)\b")


def stated_outputs(text: str | bytes, path: Path) -> OutputReading | None:
    """The reading the archive states in :data:`OUTPUTS_KEY`, if any."""
    value = (text.decode("utf-8", errors="replace") if isinstance(text, bytes) else text).strip()
    if not value:
        return None
    if value not in OUTPUT_KINDS:
        raise InputFileError(
            f"{path}: the {OUTPUTS_KEY!r} extra file must be 'logits' or 'probabilities'. "
            f"Found {value[:80]!r}."
        )
    kind = OUTPUT_KINDS.check(value)
    return OutputReading(kind, "loader", f"the archive's {OUTPUTS_KEY!r} extra file says {kind}")


class TorchScriptModel(BatchedModel):
    """A TorchScript module ready to predict (see the module docstring)."""

    def __init__(
        self,
        path: Path,
        module: Any,
        torch: Any,
        *,
        classes: tuple[object, ...] | None = None,
        feature_names: tuple[str, ...] | None = None,
        outputs: OutputKind | None,
        stated: OutputReading | None = None,
        declared_privacy: DeclaredPrivacy | None = None,
        device: str = "cpu",
    ):
        self._device = torch.device(device)
        self._module = module if device == "cpu" else module.to(self._device)
        self._torch = torch
        self._feature_names = feature_names
        floating = [p for p in module.parameters() if p.is_floating_point()]
        dtype = floating[0].dtype if floating else torch.float32
        numpy_dtype = torch.empty((), dtype=dtype).numpy().dtype
        super().__init__(
            path,
            n_features=None if feature_names is None else len(feature_names),
            classes=classes,
            outputs=outputs or (None if stated is None else stated.kind),
            input_dtype=numpy_dtype,
            declared_privacy=declared_privacy,
        )
        if outputs is None and stated is not None:
            self._reading = stated

    @property
    def feature_names(self) -> tuple[str, ...] | None:
        """The input column names the exporter recorded, if any."""
        return self._feature_names

    def _prepare(self, features: Features) -> NDArray[Any]:
        """One tensor column as it is, else the ``(rows, d)`` matrix; cast to the input type."""
        if features.is_tensor and features.width == 1:
            tensor = features.columns[0]
            self._check_range(tensor.reshape(tensor.shape[0], -1))
            return np.ascontiguousarray(tensor, dtype=self.input_dtype)
        return self._matrix(features)

    def _run_batch(self, batch: NDArray[Any]) -> NDArray[Any]:
        torch = self._torch
        try:
            with torch.inference_mode():
                result = self._module(torch.from_numpy(batch).to(self._device))
        except Exception as error:
            message = (str(error).strip().splitlines() or [""])[-1][:200]
            hint = self._shape_hint(batch, message)
            raise InvalidInputError(
                f"the model in {self.source} must accept the features "
                f"({' × '.join(map(str, batch.shape))} {batch.dtype}){hint}. Found "
                f"{type(error).__name__}: {message}"
            ) from error
        if isinstance(result, (tuple, list)) and len(result) == 1:
            result = result[0]
        if isinstance(result, (tuple, list)):
            result = self._scores_of_pair(result)
        if not isinstance(result, torch.Tensor):
            raise InvalidInputError(
                f"the model in {self.source} must return one tensor. Found {type(result).__name__}."
            )
        output: NDArray[Any] = result.detach().to("cpu", torch.float64).numpy()
        return output

    def _shape_hint(self, batch: NDArray[Any], message: str) -> str:
        """For a table given to a network that takes records of more dimensions (its error
        asks for 3-D or 4-D input), the option that reshapes them, with the shape its first
        convolution's weights imply when the columns fit it."""
        wanted = [int(found) for found in _DIMENSIONS.findall(message)]
        if batch.ndim != 2 or not wanted or max(wanted) <= 2:
            return ""
        record = max(wanted) - 1  # the dimensions of one record
        shape = "D1,D2,..."
        weights = [p for p in self._module.parameters() if p.dim() == record + 1]
        if weights:
            channels, width = int(weights[0].shape[1]), int(batch.shape[1])
            side = round((width / channels) ** (1 / (record - 1))) if width % channels == 0 else 0
            if side > 0 and channels * side ** (record - 1) == width:
                shape = ",".join(map(str, [channels, *[side] * (record - 1)]))
        return (
            f", but it takes records of {record} dimensions: give their shape with "
            f"--input-shape {shape}"
        )

    def _scores_of_pair(self, result: tuple[Any, ...] | list[Any]) -> Any:
        """Of ``(logits, softmax(logits))`` (either order; sigmoid for one column), the
        logits, found as the tensor whose activation is the other to float32 rounding (1e-5),
        and the reading says so; the probabilities when they were asked for. Other tuples
        are refused, naming what they hold."""
        torch = self._torch
        shapes = [tuple(t.shape) if isinstance(t, torch.Tensor) else None for t in result]
        if len(result) == 2 and None not in shapes and shapes[0] == shapes[1]:
            for place, (scores, other) in zip(
                ("first", "second"), (result, result[::-1]), strict=True
            ):
                two_d = scores.dim() == 2 and scores.shape[1] > 1
                activated = scores.softmax(dim=1) if two_d else scores.sigmoid()
                if not torch.allclose(activated.double(), other.double(), rtol=0, atol=1e-5):
                    continue
                if self._kind == "probabilities":
                    return other
                if self._kind is None:
                    self._kind = "logits"
                    self._reading = OutputReading(
                        "logits",
                        "loader",
                        f"the {place} of the two tensors the module returns, whose "
                        f"activation is the other",
                    )
                return scores
        raise InvalidInputError(
            f"the model in {self.source} must return one tensor, or its logits and their "
            f"activation. Found a {type(result).__name__} of {len(result)}: "
            f"{', '.join(str(shape) for shape in shapes)}."
        )


def _state_bytes(module: Any, torch: Any) -> bytes:
    """The module's state, deterministically: each entry's name, type, shape and bytes."""
    parts: list[bytes] = []
    for name, tensor in module.state_dict().items():
        raw = tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy()
        parts.append(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}|".encode() + raw.tobytes())
    return b"\n".join(parts)


class TorchScriptLoader:
    """Loads TorchScript archives (``.pt``, ``.pth``, ``.torchscript``)."""

    name = "torchscript"
    suffixes: tuple[str, ...] = (".pt", ".pth", ".torchscript")
    takes_device = True

    def load(
        self,
        path: Path,
        *,
        outputs: OutputKind | None = None,
        trust: bool = False,
        device: str = "cpu",
    ) -> TorchScriptModel:
        """Open ``path``; without ``trust`` the archive is checked first (see the module).
        The module runs on ``device`` (checked by the caller: ``--device``); its inputs are
        moved there and its outputs brought back to the CPU."""
        outputs = check_outputs_argument(outputs)
        path = Path(path)
        torch = import_optional("torch", loader=self.name)
        torch_threads(torch)
        if not path.is_file():
            raise InputFileError(f"the model file must exist. Found no file at {path}.")
        if not trust:
            check_archive_code(path)
        extra = {CLASSES_KEY: "", FEATURES_KEY: "", OUTPUTS_KEY: "", PRIVACY_KEY: ""}
        try:
            with torchscript_deprecation_silenced():
                module = torch.jit.load(str(path), map_location="cpu", _extra_files=extra)
        except Exception as error:
            first = first_line(error)
            raise InputFileError(
                f"the model file must be a TorchScript archive (torch.jit.save). Found {path} "
                f"({type(error).__name__}: {first})."
            ) from None
        if not trust:
            check_module(path, module, torch)
        module.eval()
        classes = classes_from_text(extra[CLASSES_KEY], path)
        names = features_from_text(extra[FEATURES_KEY], path)
        stated = stated_outputs(extra[OUTPUTS_KEY], path)
        return TorchScriptModel(
            path,
            module,
            torch,
            classes=classes,
            feature_names=names,
            outputs=outputs,
            stated=stated,
            declared_privacy=privacy_from_text(extra[PRIVACY_KEY], path),
            device=device,
        )

    def claims_object(self, obj: object) -> bool:
        """A ``torch.nn.Module`` (a scripted one too), but not a Keras model running on torch,
        which the keras loader takes."""
        return instance_of(obj, "torch.nn", "Module") and not instance_of(obj, "keras", "Model")

    def load_object(self, obj: Any, *, outputs: OutputKind | None = None) -> TorchScriptModel:
        """A copy of the module ``obj`` in eval mode (the caller's is left as it is), run
        batch by batch without gradients like an archive; hashed by its state."""
        outputs = check_outputs_argument(outputs)
        torch = import_optional("torch", loader=self.name)
        torch_threads(torch)
        identity = ObjectIdentity.of(
            obj, "its state_dict (names, types, shapes, bytes)", lambda: _state_bytes(obj, torch)
        )
        module = copy.deepcopy(obj).eval()
        model = TorchScriptModel(object_source(obj), module, torch, outputs=outputs)
        return in_memory(model, identity)
