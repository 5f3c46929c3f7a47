"""Reading an ONNX model by path, with its external data checked and resolved.

``torch.onnx.export`` (torch >= 2.9) and ``onnx.save(..., save_as_external_data=True)``
keep the weights in sidecar files (``model.onnx.data``) that the graph names by a
location relative to the model file. Handing onnxruntime the model as bytes makes it look
for them in the current directory, so an audit of one run's model could silently read
another run's weights. Here every location is resolved against the model's folder,
refused when it is absolute or leads outside that folder (symlinks resolved), the
sidecars are read into the proto, and the files are listed so that the audit hashes them.

Every tensor the model holds counts, wherever the format puts it: the graph's dense and
sparse initializers (a sparse tensor's values and indices are tensors of their own), node
attributes (dense or sparse, single or lists), subgraphs, local functions and training
graphs. They are found by walking the whole protocol-buffer message, not a list of known
fields, so a tensor kind the format adds later is found too; once they are read, no tensor
of the proto that reaches onnxruntime points at a file.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from epsstar.exceptions import InputFileError

from .. import first_line

__all__ = ["SIDECAR_REMEDY", "external_files", "read_model"]

SIDECAR_REMEDY = "export with external_data=False, or keep model.onnx.data beside model.onnx"


def _tensors(message: Any) -> Iterator[Any]:
    """Every ``TensorProto`` inside ``message``, at any depth (see the module)."""
    for field, value in message.ListFields():
        if field.type != field.TYPE_MESSAGE:
            continue
        children = (value,) if hasattr(value, "ListFields") else value  # one message, or a list
        if field.message_type.full_name == "onnx.TensorProto":
            yield from children
            continue
        if field.message_type.GetOptions().map_entry:
            continue  # maps of onnx.proto hold strings only
        for child in children:
            yield from _tensors(child)


def _external(proto: Any) -> list[Any]:
    """The tensors of ``proto`` stored outside the model file, in message order."""
    from onnx import TensorProto

    return [tensor for tensor in _tensors(proto) if tensor.data_location == TensorProto.EXTERNAL]


def _external_locations(proto: Any) -> list[str]:
    """The ``location`` of every tensor stored outside the model file."""
    return [
        {entry.key: entry.value for entry in tensor.external_data}.get("location", "")
        for tensor in _external(proto)
    ]


def external_files(proto: Any, path: Path) -> tuple[Path, ...]:
    """The distinct sidecar files ``proto`` refers to, resolved in ``path``'s folder.

    Refused: a location that is empty, absolute or resolves outside the model's folder,
    and a sidecar that does not exist.
    """
    folder = path.resolve().parent
    found: list[Path] = []
    for location in _external_locations(proto):
        if not location or Path(location).is_absolute():
            raise InputFileError(
                f"{path}: external data must be named relative to the model's folder; "
                f"{SIDECAR_REMEDY}. Found location {location!r}."
            )
        target = (folder / location).resolve()
        if not target.is_relative_to(folder):
            raise InputFileError(
                f"{path}: external data must stay inside the model's folder {folder}; "
                f"{SIDECAR_REMEDY}. Found location {location!r} resolving to {target}."
            )
        if not target.is_file():
            raise InputFileError(
                f"{path}: the external data file {target.name} must exist beside the model; "
                f"{SIDECAR_REMEDY}. Found no file {target}."
            )
        if target not in found:
            found.append(target)
    return tuple(found)


def read_model(path: Path) -> tuple[Any, tuple[Path, ...]]:
    """The model proto of ``path`` with its external data loaded, and every file read.

    The files are the model file first, then the distinct sidecars.
    """
    import onnx

    try:
        proto = onnx.load(str(path), load_external_data=False)
    except OSError as error:
        raise InputFileError(
            f"the model file must be readable. Found {path}: {error.strerror or error}."
        ) from None
    except Exception as error:
        first = first_line(error)
        raise InputFileError(
            f"the model file must be a valid ONNX model. Found {path} "
            f"({type(error).__name__}: {first})."
        ) from None
    sidecars = external_files(proto, path)
    if sidecars:
        _load_external(proto, path)
    return proto, (path, *sidecars)


def _load_external(proto: Any, path: Path) -> None:
    """Read every external tensor of ``proto`` from the model's folder, into the proto."""
    from onnx import TensorProto
    from onnx.external_data_helper import load_external_data_for_tensor

    folder = str(path.resolve().parent)
    try:
        for tensor in _external(proto):
            load_external_data_for_tensor(tensor, folder)
            # onnx 1.17 fills raw_data but leaves the tensor marked external (1.23 clears it)
            tensor.data_location = TensorProto.DEFAULT
            del tensor.external_data[:]
    except Exception as error:
        first = first_line(error)
        raise InputFileError(
            f"{path}: the external data must be readable and hold every tensor the graph "
            f"names; {SIDECAR_REMEDY}. Found {type(error).__name__}: {first}."
        ) from None
    left = _external(proto)
    if left:  # pragma: no cover - every tensor read above is marked as held in the proto
        raise InputFileError(
            f"{path}: every external tensor must be read from the model's folder. Found "
            f"{len(left)} tensor(s) still external, the first {left[0].name!r}."
        )
