"""``epsstar train --text-column``: fine-tune the model of a folder and write the new folder.

Everything that can fail on bad input is checked before training: the output folder (not
empty without ``--overwrite``, not the ``--init`` folder), the ``--init`` folder (read first
by the audit's own loader, so that a folder the audit would refuse is refused here, and it
must be a whole model, not an adapter), the records and their column, ``--max-length``
against the model's context, the batch size and an unreachable target ε. The folder written
is one the audit reads as it is: the model saved by ``save_pretrained`` (safetensors) or, with
``--lora-rank``, a PEFT adapter whose ``base_model_name_or_path`` is the ``--init`` folder;
the tokenizer of ``--init``; ``epsstar.privacy``, the DP guarantee the run declares (the text
:func:`~epsstar.audit.model.declared_privacy.privacy_to_text` gives, which the Hugging Face
loader reads); and ``training.json``, written last. The files are written into a hidden
folder inside the output folder and renamed into place with Ctrl-C deferred, so an error
while training or writing leaves the output folder as it was.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from epsstar.audit.model.declared_privacy import PRIVACY_KEY, DeclaredPrivacy, privacy_to_text
from epsstar.audit.model.loading import ModelFile
from epsstar.audit.model.text_model import TextModelInfo, text_model_of
from epsstar.exceptions import EpsstarError, InvalidInputError
from epsstar.plumbing.files.json_parsing import read_json_file
from epsstar.plumbing.files.staging import interrupts_deferred, refuse_replacing_inputs
from epsstar.training.progress import EpochProgress, announce
from epsstar.training.runs.export import check_output_dir
from epsstar.training.runs.pipeline import first_missing
from epsstar.training.text.lora import lora_layout
from epsstar.training.text.per_example import physical_batch
from epsstar.training.text.records import TokenisedRecords, read_records, tokenised
from epsstar.training.text.results import (
    LoraSummary,
    TextDataSummary,
    TextHyperparameters,
    TextModelSummary,
    TextTrainingResult,
    TextVersions,
)
from epsstar.training.text.settings import TextTrainingConfig
from epsstar.training.text.trainer import FineTuned, fine_tune
from epsstar.training.trainer import PrivacyPlan, plan_privacy, privacy_summary, schedule

__all__ = ["PRIVACY_FILE", "RECORD_FILE", "fine_tune_to_folder"]

#: The run's declared guarantee, beside the model (the key the model files of tables use).
PRIVACY_FILE = PRIVACY_KEY
RECORD_FILE = "training.json"


@dataclass(frozen=True, slots=True)
class _Start:
    """The ``--init`` folder read: the model, its tokenizer and what the audit saw of it."""

    folder: Path
    model: Any
    tokenizer: Any
    info: TextModelInfo


@contextlib.contextmanager
def _without_bars() -> Iterator[None]:
    """transformers' progress bars ("Loading weights", "Writing model shards") off: they
    would break the epochs' lines."""
    from transformers.utils import logging as transformers_logging

    logging: Any = transformers_logging
    bars = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        if bars:
            logging.enable_progress_bar()


def _start(init: str, device: str) -> _Start:
    folder = Path(init)
    if not folder.is_dir():
        raise InvalidInputError(
            f"--init: the model to fine-tune must be a Hugging Face model folder. Found {init!r}."
        )
    loaded = ModelFile(folder).load()
    info = text_model_of(loaded.model, loaded.loader.name).info
    if info.adapter is not None:
        raise InvalidInputError(
            f"--init: the model to fine-tune must be a whole model folder, not an adapter "
            f"(merge it first). Found the adapter folder {init!r}."
        )
    import torch
    import transformers

    with _without_bars():
        model: Any = transformers.AutoModelForCausalLM.from_pretrained(
            str(folder),
            local_files_only=True,
            trust_remote_code=False,
            use_safetensors=True,
            dtype=torch.float32,
            attn_implementation="eager",
        )
        tokenizer = transformers.AutoTokenizer.from_pretrained(
            str(folder), local_files_only=True, trust_remote_code=False
        )
    return _Start(folder, model.to(device), tokenizer, info)


def _records(config: TextTrainingConfig, data: str, start: _Start) -> TokenisedRecords:
    context = start.info.context
    length = context if config.max_length is None else config.max_length
    if length > context:
        raise InvalidInputError(
            f"--max-length must be at most the model's context of {context:,} tokens. "
            f"Found {length:,}."
        )
    texts = read_records(Path(data), config.text_column)
    return tokenised(texts, start.tokenizer, length)


def _declared(result: TextTrainingResult) -> DeclaredPrivacy:
    if result.privacy is None:
        return DeclaredPrivacy(private=False)
    return DeclaredPrivacy(
        private=True,
        epsilon=result.privacy.epsilon,
        delta=result.privacy.delta,
        accountant=str(result.privacy.accountant.get("name", "")) or None,
    )


def _save(staging: Path, start: _Start, tuned: FineTuned) -> None:
    """The model or the adapter, and the tokenizer, into ``staging``."""
    if tuned.adapter is None or tuned.adapter_params is None:
        with _without_bars():
            tuned.model.save_pretrained(staging, safe_serialization=True)
    else:
        from safetensors.torch import save_file

        save_file(
            tuned.adapter.tensors(tuned.adapter_params), staging / "adapter_model.safetensors"
        )
        config = tuned.adapter.config(os.path.abspath(start.folder))
        (staging / "adapter_config.json").write_text(json.dumps(config, indent=2) + "\n")
    start.tokenizer.save_pretrained(staging)


def _files_of_earlier_run(out: Path) -> tuple[str, ...]:
    """The files an earlier fine-tuning wrote into ``out``, as its ``training.json`` lists them
    (plain names only); none when there is no such record or it cannot be read.

    With ``--overwrite`` they are removed where this run does not write them again: a full
    model's ``config.json`` beside a new adapter, or worse, an earlier adapter's
    ``adapter_config.json`` beside a new full model, which the loader would read instead."""
    if not (out / RECORD_FILE).is_file():
        return ()
    try:
        record = read_json_file(out / RECORD_FILE, "--out")
    except EpsstarError:
        return ()
    listed = record.get("files") if isinstance(record, dict) else None
    if not isinstance(listed, list):
        return ()
    return tuple(
        name
        for name in listed
        if isinstance(name, str) and name == Path(name).name and name not in ("", ".", "..")
    )


def _write(
    out: Path, start: _Start, tuned: FineTuned, result: TextTrainingResult
) -> TextTrainingResult:
    """Every file into a hidden folder in ``out``, then renamed into place, the record last,
    and an earlier run's files this one does not write removed; the record as written."""
    created = first_missing(out)
    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".epsstar-", dir=out))
    try:
        _save(staging, start, tuned)
        (staging / PRIVACY_FILE).write_text(privacy_to_text(_declared(result)) + "\n")
        names = sorted(path.name for path in staging.iterdir() if path.is_file())
        final = dataclasses.replace(result, files=(*names, RECORD_FILE))
        text = json.dumps(final.to_dict(), indent=2, ensure_ascii=False) + "\n"
        (staging / RECORD_FILE).write_text(text, encoding="utf-8")
        earlier = _files_of_earlier_run(out)
        with interrupts_deferred():
            (out / RECORD_FILE).unlink(missing_ok=True)
            for name in [*names, RECORD_FILE]:
                os.replace(staging / name, out / name)
            for name in sorted(set(earlier) - {*names, RECORD_FILE}):
                with contextlib.suppress(IsADirectoryError, PermissionError):
                    (out / name).unlink(missing_ok=True)
        return final
    except BaseException:
        if created is not None:
            shutil.rmtree(created, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _result(
    config: TextTrainingConfig,
    plan: PrivacyPlan | None,
    start: _Start,
    records: TokenisedRecords,
    tuned: FineTuned,
    data: str,
) -> TextTrainingResult:
    import torch
    import transformers

    from epsstar import __version__

    settings = config.schedule_config()
    rate, per_epoch = schedule(settings, records.count)
    layout = tuned.adapter
    trained = (
        sum(p.numel() for p in tuned.model.parameters()) if layout is None else layout.parameters
    )
    return TextTrainingResult(
        private=plan is not None,
        data=TextDataSummary(
            str(data),
            config.text_column,
            records.count,
            records.tokens,
            records.max_length,
            records.truncated,
        ),
        model=TextModelSummary(
            init=str(start.folder),
            architecture=start.info.architecture,
            n_parameters=start.info.parameters,
            trained_parameters=int(trained),
            lora=None
            if layout is None
            else LoraSummary(layout.rank, layout.alpha, tuple(m.name for m in layout.modules)),
        ),
        hyperparameters=TextHyperparameters(
            epochs=config.epochs,
            batch_size=config.batch_size,
            sampling="poisson",
            sampling_rate=rate,
            steps_per_epoch=per_epoch,
            steps=per_epoch * config.epochs,
            optimizer="adamw",
            lr=config.lr,
            clip=None if plan is None else config.clip,
            update_normaliser=rate * records.count,
            physical_batch=tuned.physical_batch,
            seed=config.seed,
            dtype="float32",
        ),
        privacy=None
        if plan is None
        else privacy_summary(settings, plan, plan.epsilon_after(plan.steps)),
        history=tuned.history,
        wall_time_seconds=tuned.seconds,
        device=config.device,
        versions=TextVersions(__version__, torch.__version__, transformers.__version__),
        files=(),
    )


def fine_tune_to_folder(
    config: TextTrainingConfig,
    data: str,
    init: str,
    out: str,
    *,
    overwrite: bool = False,
    progress: bool | None = None,
) -> TextTrainingResult:
    """Check, fine-tune and write ``out`` (see the module); the record as written."""
    folder = check_output_dir(out, overwrite)
    refuse_replacing_inputs(
        [("--out", folder / name) for name in ("config.json", RECORD_FILE)],
        [("--init", init), ("--data", data)],
    )
    start = _start(init, config.device)
    records = _records(config, data, start)
    if config.target_epsilon is not None:
        announce(
            f"train: choosing the noise multiplier for ε = {config.target_epsilon:g} ...", progress
        )
    plan = plan_privacy(config.schedule_config(), records.count)
    layout = (
        None
        if config.lora_rank is None
        else lora_layout(start.model, config.lora_rank, config.lora_alpha)
    )
    size = sum(p.numel() for p in start.model.parameters()) if layout is None else layout.parameters
    physical = physical_batch(size, config.physical_batch)
    with EpochProgress("train", config.epochs, enabled=progress) as bar:
        tuned = fine_tune(
            start.model,
            records,
            config,
            plan,
            physical=physical,
            layout=layout,
            on_epoch=bar.update,
        )
    result = _result(config, plan, start, records, tuned, data)
    return _write(folder, start, tuned, result)
