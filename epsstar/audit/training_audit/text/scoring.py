"""The text canaries' scores under the language model a run saved.

A run's ``{out}`` holds a Hugging Face model folder: ``{out}`` itself, or exactly one folder
under it (:func:`find_saved_folder`; none or two are refused in one line, as
:func:`~epsstar.audit.training_audit.external.saved_model.find_saved_model` refuses files). It
is loaded through the loader plugins as ``epsstar audit`` loads a model; a LoRA adapter
folder is applied to the base model every run started from (``--init``'s folder). Each
canary's score is the mean loss (negative log-probability) of its secret's tokens given the
prefix (:func:`~.tokens.secret_span`), in batches through
:meth:`~epsstar.audit.model.text_model.TextModel.score_tokens`; with a reference model, the
reference's loss on the same tokens is subtracted (a calibrated score: what the fine-tuning
changed, not how hard the secret is).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Final

import numpy as np

from epsstar.audit.model.declared_privacy import DeclaredPrivacy
from epsstar.audit.model.loading import ModelFile
from epsstar.audit.model.plugins import loader_for_path
from epsstar.audit.model.text_model import TextModel, text_model_of
from epsstar.audit.training_audit.external.scoring import ScoredModel
from epsstar.audit.training_audit.frames import read_frame
from epsstar.audit.training_audit.text.designs import SECRET_FROM, TextCanaries
from epsstar.audit.training_audit.text.tokens import secret_span
from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.files.digests import sha256_of, sha256_of_bytes
from epsstar.statistics._validation import FloatArray

__all__ = [
    "ADAPTER_CONFIG",
    "find_saved_folder",
    "load_text_model",
    "score_text_canaries",
    "secret_losses",
]

#: The file of a PEFT adapter folder, applied to the base model every run starts from.
ADAPTER_CONFIG: Final = "adapter_config.json"
#: Canaries per model call.
_BATCH: Final = 32
#: Folders named in an error, at most.
_SHOWN: Final = 5


def _is_model_folder(folder: Path) -> bool:
    try:
        loader_for_path(folder)
    except InvalidInputError:
        return False
    return True


def find_saved_folder(out: Path, *, run: int = 0) -> Path:
    """The one model folder a run saved: ``out`` itself, or the one folder under it that a
    loader reads (hidden folders left out)."""
    if _is_model_folder(out):
        return out
    folders = sorted(
        path
        for path in out.rglob("*")
        if path.is_dir()
        and not any(part.startswith(".") for part in path.relative_to(out).parts)
        and _is_model_folder(path)
    )
    where = f"--command (run {run + 1})"
    if len(folders) == 1:
        return folders[0]
    if not folders:
        found = sorted(str(p.relative_to(out)) for p in out.iterdir())[:_SHOWN] or ["nothing"]
        raise InvalidInputError(
            f"{where} saved no Hugging Face model folder into {{out}}; it must save one there "
            f"(save_pretrained), {{out}} itself or one folder under it. Found "
            f"{', '.join(repr(name) for name in found)}."
        )
    names = [repr(str(p.relative_to(out))) for p in folders[:_SHOWN]]
    raise InvalidInputError(
        f"{where} saved {len(folders)} model folders into {{out}}; it must save one. Found "
        f"{', '.join(names)}."
    )


def load_text_model(
    folder: Path, base: Path | None, *, trust: bool = False
) -> tuple[TextModel, str, DeclaredPrivacy | None]:
    """The language model of ``folder`` (an adapter folder applied to ``base``), its
    loader's name and the privacy it declares."""
    adapter = (folder / ADAPTER_CONFIG).is_file()
    loaded = ModelFile(folder, trust=trust, base_model=base if adapter else None).load()
    declared = getattr(loaded.model, "declared_privacy", None)
    return (
        text_model_of(loaded.model, loaded.loader.name),
        loaded.loader.name,
        declared if isinstance(declared, DeclaredPrivacy) else None,
    )


def _files_digest(model: TextModel) -> str:
    """The SHA-256 of the files a model was read from: each file's name and digest, in order."""
    lines = [f"{path.name}\t{sha256_of(path)}" for path in model.files]
    return sha256_of_bytes("\n".join(lines).encode("utf-8"))


def score_text_canaries(
    folder: Path,
    canaries: Path,
    settings: TextCanaries,
    *,
    base: Path | None,
    trust: bool = False,
) -> ScoredModel:
    """The canaries of the table ``canaries`` scored under the model folder a run saved
    (see the module), less the reference model's losses with one."""
    frame = read_frame(canaries, "the text canaries", text=True)
    texts = [str(text) for text in frame[settings.text_column]]
    starts = [int(start) for start in frame[SECRET_FROM]]
    model, loader, declared = load_text_model(folder, base, trust=trust)
    losses = secret_losses(model, texts, starts)
    if settings.reference_model is not None:
        reference, _, _ = load_text_model(settings.reference_model, base, trust=trust)
        losses = losses - secret_losses(reference, texts, starts)
    return ScoredModel(
        losses={"text": losses},
        model=folder.name,
        sha256=_files_digest(model),
        loader=loader,
        declared=declared,
    )


def secret_losses(model: TextModel, texts: Sequence[str], secret_from: Sequence[int]) -> FloatArray:
    """Each canary's mean loss on its secret's tokens given its prefix (see the module)."""
    records = model.tokenize(list(texts))
    prefixes = model.tokenize([t[:s] for t, s in zip(texts, secret_from, strict=True)])
    spans = [secret_span(r.tolist(), p.tolist()) for r, p in zip(records, prefixes, strict=True)]
    context = model.info.context
    longest = max(ids.size for ids in records)
    if longest > context:
        raise InvalidInputError(
            f"the trained model reads at most {context} tokens, fewer than the longest canary's "
            f"{longest}: its secret cannot be scored. Found a context of {context}."
        )
    losses = np.empty(len(records), dtype=np.float64)
    order = np.argsort([ids.size for ids in records], kind="stable")
    for start in range(0, order.size, _BATCH):
        rows = order[start : start + _BATCH]
        lengths = np.array([records[i].size for i in rows], dtype=np.int64)
        matrix = np.zeros((rows.size, int(lengths.max())), dtype=np.int64)
        for row, index in enumerate(rows):
            matrix[row, : lengths[row]] = records[index]
        scored = model.score_tokens(matrix, lengths, moments=False)
        for row, index in enumerate(rows):
            first, end = spans[index]
            losses[index] = -float(np.mean(scored.log_probs[row, first - 1 : end - 1]))
    return losses
