"""TorchScript archives (``torch.jit.save``), run on the CPU.

The module is loaded with ``torch.jit.load(path, map_location="cpu")``, put in
``eval()`` mode and called under ``torch.inference_mode()`` in chunks. It must take one
``(n, d)`` tensor and return one tensor: ``(n,)`` or ``(n, 1)`` for a binary model
(``P(y = 1)`` or its log-odds), ``(n, K)`` for ``K`` classes. Logits vs probabilities
are detected by the rule of :mod:`epsstar.loaders` unless ``outputs=`` says. The class
labels of the output columns (:attr:`classes`) come from the archive's extra file
:data:`epsstar.audit.class_labels.CLASSES_KEY` (a JSON array), if the exporter wrote one.

:attr:`n_features` is the ``in_features`` of the first ``Linear`` submodule, if there
is one; otherwise ``None`` and a wrong width surfaces as the module's own error,
reported as :class:`~epsstar.exceptions.InvalidInputError`. Features are cast to the
dtype of the module's first floating-point parameter (float32 if it has none).
torch is imported only when a file is loaded.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from numpy.typing import NDArray

from epsstar.audit.class_labels import CLASSES_KEY, classes_from_text
from epsstar.audit.plugins import OutputKind, import_optional
from epsstar.exceptions import InputFileError, InvalidInputError

from . import BatchedModel, check_outputs_argument

__all__ = ["TorchScriptLoader", "TorchScriptModel"]


def _first_linear_width(module: Any) -> int | None:
    for _, child in module.named_modules():
        if getattr(child, "original_name", type(child).__name__) == "Linear":
            weight = getattr(child, "weight", None)
            if weight is not None and getattr(weight, "ndim", 0) == 2:
                return int(weight.shape[1])
    return None


class TorchScriptModel(BatchedModel):
    """A TorchScript module ready to predict (see the module docstring)."""

    def __init__(
        self,
        path: Path,
        module: Any,
        torch: Any,
        *,
        classes: tuple[object, ...] | None = None,
        outputs: OutputKind | None,
    ):
        self._module = module
        self._torch = torch
        floating = [p for p in module.parameters() if p.is_floating_point()]
        dtype = floating[0].dtype if floating else torch.float32
        numpy_dtype = torch.empty((), dtype=dtype).numpy().dtype
        super().__init__(
            path,
            n_features=_first_linear_width(module),
            classes=classes,
            outputs=outputs,
            input_dtype=numpy_dtype,
        )

    def _run_batch(self, batch: NDArray[Any]) -> NDArray[Any]:
        torch = self._torch
        try:
            with torch.inference_mode():
                result = self._module(torch.from_numpy(batch))
        except Exception as error:
            message = (str(error).strip().splitlines() or [""])[-1][:200]
            raise InvalidInputError(
                f"the model in {self.source} must accept the features ({batch.shape[0]} × "
                f"{batch.shape[1]} {batch.dtype}). Found {type(error).__name__}: {message}"
            ) from error
        if isinstance(result, (tuple, list)) and len(result) == 1:
            result = result[0]
        if not isinstance(result, torch.Tensor):
            raise InvalidInputError(
                f"the model in {self.source} must return one tensor. Found {type(result).__name__}."
            )
        output: NDArray[Any] = result.detach().to("cpu", torch.float64).numpy()
        return output


class TorchScriptLoader:
    """Loads TorchScript archives (``.pt``, ``.pth``, ``.torchscript``)."""

    name = "torchscript"
    suffixes: tuple[str, ...] = (".pt", ".pth", ".torchscript")

    def load(
        self, path: Path, *, outputs: OutputKind | None = None, trust: bool = False
    ) -> TorchScriptModel:
        """Open ``path``; ``trust`` is not needed (TorchScript does not unpickle code)."""
        outputs = check_outputs_argument(outputs)
        path = Path(path)
        torch = import_optional("torch", loader=self.name)
        if not path.is_file():
            raise InputFileError(f"the model file must exist. Found no file at {path}.")
        extra = {CLASSES_KEY: ""}
        try:
            with warnings.catch_warnings():
                # TorchScript is the format being read; its deprecation is not the user's to fix
                warnings.filterwarnings("ignore", category=DeprecationWarning)
                module = torch.jit.load(str(path), map_location="cpu", _extra_files=extra)
        except Exception as error:
            first = (str(error).strip().splitlines() or [""])[0][:200]
            raise InputFileError(
                f"the model file must be a TorchScript archive (torch.jit.save). Found {path} "
                f"({type(error).__name__}: {first})."
            ) from None
        module.eval()
        classes = classes_from_text(extra[CLASSES_KEY], path)
        return TorchScriptModel(path, module, torch, classes=classes, outputs=outputs)
