"""A directory per trained model: ``model.onnx``, ``model.pt`` (TorchScript), ``training.json``.

Both model files take raw features (float32, shape (n, d), columns in the order
of ``training.json``'s ``data.feature_names``). The ONNX model has two outputs:
``probabilities``, (n, 1) P(y = classes[1]) for binary tasks and (n, K) class
probabilities otherwise, and ``logits``, the network's output before that sigmoid or
softmax (the log-odds of classes[1], or K class logits). The TorchScript module returns
the logits, and says so in its extra file :data:`OUTPUTS_KEY` (``"logits"``). Losses
computed from float logits are exact, where float32 probabilities round to 0 or 1 and
clip the losses at ±36.04 (:mod:`epsstar.statistics.losses`).

Both record the class labels of their output columns under
:data:`epsstar.audit.model.class_labels.CLASSES_KEY` and the names of their input columns under
:data:`epsstar.audit.model.class_labels.FEATURES_KEY` (ONNX ``metadata_props`` entries,
TorchScript extra files), where the ONNX and TorchScript loaders read them, so that an
audit hands the data's columns to the model by name.

The ONNX graph is written directly from the trained weights (Sub, Div, Gemm,
Relu, Sigmoid/Softmax; opset 17), so it needs only the ``onnx`` package. Every
file is written with :func:`epsstar.plumbing.files.staging.atomic_write_bytes` (a temporary file in
the same directory, moved into place), and ``training.json`` comes last: a
directory with a ``training.json`` is a finished model.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from epsstar.audit.model.class_labels import (
    CLASSES_KEY,
    FEATURES_KEY,
    OUTPUTS_KEY,
    classes_to_text,
    features_to_text,
)
from epsstar.audit.model.declared_privacy import PRIVACY_KEY, DeclaredPrivacy, privacy_to_text
from epsstar.exceptions import InputFileError, InvalidInputError
from epsstar.plumbing.files.staging import atomic_write_bytes, check_output_folder
from epsstar.plumbing.runtime.torchscript_deprecation import torchscript_deprecation_silenced
from epsstar.training.models import ExportedModel
from epsstar.training.results import TrainingResult

__all__ = [
    "MODEL_FILES",
    "ONNX_INPUT",
    "ONNX_LOGITS",
    "ONNX_OUTPUT",
    "ExportedLogits",
    "check_output_dir",
    "export_onnx",
    "export_torchscript",
    "prepare_output_dir",
    "write_model_dir",
]

ONNX_INPUT = "features"
ONNX_OUTPUT = "probabilities"
ONNX_LOGITS = "logits"
ONNX_OPSET = 17
MODEL_FILES = {"onnx": "model.onnx", "torchscript": "model.pt", "record": "training.json"}


def check_output_dir(
    path: str | os.PathLike[str], overwrite: bool, *, option: str = "--out"
) -> Path:
    """Refuse a path that is a file, a folder that cannot be made or written
    (:func:`~epsstar.plumbing.files.staging.check_output_folder`), or a non-empty directory
    unless ``overwrite``; ``option`` is the flag that named it."""
    directory = check_output_folder(option, path)
    if directory.is_dir() and any(directory.iterdir()) and not overwrite:
        raise InvalidInputError(
            f"{option}: the output folder is not empty; pass --overwrite to replace it. "
            f"Found {str(path)!r}."
        )
    return directory


def prepare_output_dir(path: str | os.PathLike[str], overwrite: bool) -> Path:
    """Create ``path``; refuse a non-empty directory unless ``overwrite``.

    With ``overwrite`` an existing ``training.json`` is removed first, so the
    directory does not look finished while new files are being written.
    """
    directory = check_output_dir(path, overwrite)
    (directory / MODEL_FILES["record"]).unlink(missing_ok=True)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InputFileError(
            f"--out: cannot create the folder ({error.strerror or error}). Found {str(path)!r}."
        ) from None
    return directory


def _metadata(
    classes: Sequence[str] | None,
    feature_names: Sequence[str] | None,
    privacy: DeclaredPrivacy | None = None,
) -> dict[str, str]:
    """The class labels, input column names and DP guarantee, as ONNX metadata or
    TorchScript extra files."""
    entries: dict[str, str] = {}
    if privacy is not None:
        entries[PRIVACY_KEY] = privacy_to_text(privacy)
    if classes is not None:
        entries[CLASSES_KEY] = classes_to_text(classes)
    if feature_names is not None:
        entries[FEATURES_KEY] = features_to_text(feature_names)
    return entries


def _onnx_bytes(
    model: ExportedModel,
    classes: Sequence[str] | None,
    feature_names: Sequence[str] | None,
    privacy: DeclaredPrivacy | None = None,
) -> bytes:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    mean, scale = model.standardiser.numpy()
    n_features = int(mean.shape[0])
    nodes: list[Any] = []
    initialisers = [
        numpy_helper.from_array(mean.astype(np.float32), "mean"),
        numpy_helper.from_array(scale.astype(np.float32), "scale"),
    ]
    nodes.append(helper.make_node("Sub", [ONNX_INPUT, "mean"], ["centred"]))
    nodes.append(helper.make_node("Div", ["centred", "scale"], ["h0"]))
    current = "h0"
    layers = model.network.linears
    for index, layer in enumerate(layers):
        weight = layer.weight.detach().float().numpy()
        bias = layer.bias.detach().float().numpy()
        initialisers.append(numpy_helper.from_array(weight, f"W{index}"))
        initialisers.append(numpy_helper.from_array(bias, f"b{index}"))
        output = f"z{index}"
        nodes.append(
            helper.make_node("Gemm", [current, f"W{index}", f"b{index}"], [output], transB=1)
        )
        if index < len(layers) - 1:
            nodes.append(helper.make_node("Relu", [output], [f"h{index + 1}"]))
            current = f"h{index + 1}"
        else:
            current = output
    nodes.append(helper.make_node("Identity", [current], [ONNX_LOGITS]))
    if model.binary:
        nodes.append(helper.make_node("Sigmoid", [current], [ONNX_OUTPUT]))
    else:
        nodes.append(helper.make_node("Softmax", [current], [ONNX_OUTPUT], axis=1))
    n_outputs = int(layers[-1].out_features)
    graph = helper.make_graph(
        nodes,
        "epsstar_mlp",
        [helper.make_tensor_value_info(ONNX_INPUT, TensorProto.FLOAT, ["n", n_features])],
        [
            helper.make_tensor_value_info(name, TensorProto.FLOAT, ["n", n_outputs])
            for name in (ONNX_OUTPUT, ONNX_LOGITS)
        ],
        initialisers,
    )
    proto = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", ONNX_OPSET)],
        producer_name="epsstar",
        ir_version=8,
    )
    metadata = _metadata(classes, feature_names, privacy)
    if metadata:
        helper.set_model_props(proto, metadata)
    onnx.checker.check_model(proto)
    return bytes(proto.SerializeToString())


def export_onnx(
    model: ExportedModel,
    path: str | os.PathLike[str],
    *,
    classes: Sequence[str] | None = None,
    feature_names: Sequence[str] | None = None,
    privacy: DeclaredPrivacy | None = None,
) -> None:
    """Write ``model`` as ONNX (input ``features``; outputs ``probabilities`` and ``logits``).

    ``classes``, the labels of the output columns, ``feature_names``, the input columns
    in order, and ``privacy``, how it was trained, are recorded in the model's metadata.
    """
    atomic_write_bytes(path, _onnx_bytes(model, classes, feature_names, privacy))


class ExportedLogits(torch.nn.Module):
    """The exported model up to its sigmoid or softmax: raw features in, logits out."""

    def __init__(self, model: ExportedModel) -> None:
        super().__init__()
        self.standardiser = model.standardiser
        self.network = model.network

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits: torch.Tensor = self.network(self.standardiser(x))
        return logits


def export_torchscript(
    model: ExportedModel,
    path: str | os.PathLike[str],
    *,
    classes: Sequence[str] | None = None,
    feature_names: Sequence[str] | None = None,
    privacy: DeclaredPrivacy | None = None,
) -> None:
    """Write ``model``'s logits as a TorchScript archive (``torch.jit.load`` reads it).

    ``classes``, the labels of the output columns, ``feature_names``, the input columns
    in order, and ``privacy``, how it was trained, are recorded as extra files, with
    :data:`OUTPUTS_KEY`.
    """
    extra = {**_metadata(classes, feature_names, privacy), OUTPUTS_KEY: ONNX_LOGITS}
    buffer = io.BytesIO()
    with torchscript_deprecation_silenced():
        scripted = torch.jit.script(ExportedLogits(model).eval())
        torch.jit.save(scripted, buffer, _extra_files=extra)
    atomic_write_bytes(path, buffer.getvalue())


def declared_privacy(result: TrainingResult) -> DeclaredPrivacy:
    """What the exported files declare: DP-SGD at the accounted (ε, δ), or no DP."""
    if not result.private or result.privacy is None:
        return DeclaredPrivacy(private=False)
    return DeclaredPrivacy(
        private=True,
        epsilon=result.privacy.epsilon,
        delta=result.privacy.delta,
        accountant=str(result.privacy.accountant.get("name", "")) or None,
    )


def write_model_dir(
    directory: str | os.PathLike[str], model: ExportedModel, result: TrainingResult
) -> TrainingResult:
    """Write the three files into an existing directory; returns the record as written."""
    folder = Path(directory)
    classes, names = result.data.classes, result.data.feature_names
    privacy = declared_privacy(result)
    export_onnx(
        model, folder / MODEL_FILES["onnx"], classes=classes, feature_names=names, privacy=privacy
    )
    export_torchscript(
        model,
        folder / MODEL_FILES["torchscript"],
        classes=classes,
        feature_names=names,
        privacy=privacy,
    )
    final = dataclasses.replace(
        result, files={"onnx": MODEL_FILES["onnx"], "torchscript": MODEL_FILES["torchscript"]}
    )
    text = json.dumps(final.to_dict(), indent=2, ensure_ascii=False) + "\n"
    atomic_write_bytes(folder / MODEL_FILES["record"], text.encode("utf-8"))
    return final
