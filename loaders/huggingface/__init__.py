"""The loader of Hugging Face causal language models: a model folder, or a LoRA adapter
folder on a base model folder (``pip install "epsstar[text]"``).

:class:`HuggingFaceLoader` reads a folder saved by ``save_pretrained``: ``config.json``, the
weights (safetensors only unless the folder is trusted, :mod:`.folder`) and the tokenizer.
Nothing is downloaded (``local_files_only``) and the model's own code never runs
(``trust_remote_code`` is never set). The configuration must describe a causal language
model (its architecture a ``...ForCausalLM`` or ``...LMHeadModel``), every weight the model
declares must be in the files (a weight left at its random initial value would audit another
model) and the tokenizer must fit the model's vocabulary. An adapter folder
(``adapter_config.json``) is applied to its base model, given with ``--base-model`` or, when
it is a local folder, as the adapter's ``base_model_name_or_path`` (a relative one read from
the adapter's folder, not the working folder; :mod:`.lora`). The model
is scored in float32 on the CPU (:mod:`.model`). The DP guarantee the folder given (the
adapter's for an adapter) declares in ``epsstar.privacy`` is the model's
``declared_privacy``, shown beside Epsilon* (:func:`.folder.declared_privacy`).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from epsstar.audit.model.plugins import import_optional
from epsstar.audit.model.text_model import Adapter, TextModelInfo
from epsstar.exceptions import InputFileError, InvalidInputError
from epsstar.loaders import first_line
from epsstar.plumbing.files.input_bounds import shown
from epsstar.plumbing.runtime.threads import torch_threads
from epsstar.statistics.names import OutputKind

from .folder import (
    ADAPTER_CONFIG,
    CONFIG,
    TOKENIZER_FILES,
    AdapterFiles,
    ModelFiles,
    adapter_files,
    declared_privacy,
    model_files,
)
from .lora import lora_settings, merge_lora
from .model import CausalLanguageModel

__all__ = ["CausalLanguageModel", "HuggingFaceLoader"]

_CAUSAL_ENDINGS = ("ForCausalLM", "LMHeadModel")
_CONTEXT_KEYS = ("n_positions", "max_position_embeddings", "n_ctx", "seq_length")
_VOCABULARY_FILES = ("tokenizer.json", "vocab.json", "tokenizer.model")  # a tokenizer's own


@contextlib.contextmanager
def _quiet(transformers: Any) -> Iterator[None]:
    """transformers' own log lines and warnings silenced while a folder is read."""
    logging = transformers.utils.logging
    level = logging.get_verbosity()
    bars = logging.is_progress_bar_enabled()
    logging.set_verbosity_error()
    logging.disable_progress_bar()  # "Loading weights" would break the audit's progress line
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.set_verbosity(level)
        if bars:
            logging.enable_progress_bar()


def _causal(config: Any, path: Path) -> None:
    """Refuse a configuration that does not describe a causal language model."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    architectures = list(getattr(config, "architectures", None) or [])
    kind = getattr(config, "model_type", "?")
    if architectures:
        causal = any(name.endswith(_CAUSAL_ENDINGS) for name in architectures)
    else:
        causal = kind in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and not getattr(
            config, "is_encoder_decoder", False
        )
    if not causal:
        described = ", ".join(architectures) or f"model_type {kind!r}"
        raise InvalidInputError(
            f"{path / CONFIG}: the model must be a causal language model (an architecture "
            f"such as GPT2LMHeadModel or LlamaForCausalLM). Found {described}."
        )


def _context(config: Any, tokenizer: Any, path: Path) -> int:
    found = [getattr(config, key, None) for key in _CONTEXT_KEYS]
    sizes = [int(n) for n in found if isinstance(n, int) and n > 1]
    limit = getattr(tokenizer, "model_max_length", None)
    if not sizes and isinstance(limit, int) and 1 < limit < 1_000_000:
        sizes = [limit]
    if not sizes:
        raise InvalidInputError(
            f"{path / CONFIG}: the configuration must state the model's context length "
            f"({', '.join(_CONTEXT_KEYS)}). Found none."
        )
    return min(sizes)


def _base_folder(adapter: AdapterFiles, base_model: Path | None) -> Path:
    if base_model is not None:
        return Path(base_model)
    named = adapter.config.get("base_model_name_or_path")
    # a relative path is the adapter folder's, so that the audit reads the same files
    # wherever it runs
    candidate = None if not isinstance(named, str) or not named else adapter.folder / named
    if candidate is not None and candidate.is_dir():
        return candidate
    raise InvalidInputError(
        f"{adapter.folder}: an adapter is applied to its base model, given as a local folder "
        f"with --base-model (epsstar downloads nothing). Found base_model_name_or_path "
        f"{shown(named)}, which is not a folder (a relative path is read from the adapter's "
        f"folder)."
    )


def _tokenizer(transformers: Any, folders: list[Path]) -> tuple[Any, tuple[Path, ...]]:
    for folder in folders:
        files = tuple(folder / n for n in TOKENIZER_FILES if (folder / n).is_file())
        if not any(path.name in _VOCABULARY_FILES for path in files):
            continue  # special_tokens_map.json or tokenizer_config.json alone hold no tokenizer
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(
                str(folder), local_files_only=True, trust_remote_code=False, use_fast=True
            )
        except Exception as error:
            raise InputFileError(
                f"{folder}: the tokenizer's files must be readable by transformers' "
                f"AutoTokenizer. Found {type(error).__name__}: {first_line(error)}."
            ) from None
        return tokenizer, files
    raise InputFileError(
        f"{folders[0]}: the model folder must hold its tokenizer (tokenizer.json, or vocab.json "
        f"and merges.txt, or tokenizer.model; saved by tokenizer.save_pretrained). Found none."
    )


def _read_model(transformers: Any, torch: Any, files: ModelFiles) -> Any:
    folder = files.folder
    try:
        config = transformers.AutoConfig.from_pretrained(
            str(folder), local_files_only=True, trust_remote_code=False
        )
    except Exception as error:
        raise InputFileError(
            f"{folder / CONFIG}: must be a transformers configuration. Found "
            f"{type(error).__name__}: {first_line(error)}."
        ) from None
    _causal(config, folder)
    try:
        model, loading = transformers.AutoModelForCausalLM.from_pretrained(
            str(folder),
            config=config,
            local_files_only=True,
            trust_remote_code=False,
            use_safetensors=files.kind == "safetensors",
            dtype=torch.float32,
            output_loading_info=True,
        )
    except Exception as error:
        raise InputFileError(
            f"{folder}: the weights must load into the model its config.json describes. "
            f"Found {type(error).__name__}: {first_line(error)}."
        ) from None
    missing = [*loading.get("missing_keys", ()), *loading.get("mismatched_keys", ())]
    if missing:
        raise InputFileError(
            f"{folder}: the weight files must hold every weight of the model (a missing one "
            f"would be left random). Found {len(missing)} missing, such as {str(missing[0])!r}."
        )
    return model.eval()


def _adapted(model: Any, adapter: AdapterFiles, base: Path) -> Adapter:
    settings = lora_settings(adapter.config)
    if adapter.kind == "safetensors":
        from safetensors.torch import load_file

        weights = load_file(str(adapter.weights), device="cpu")
    else:
        import torch

        weights = torch.load(str(adapter.weights), map_location="cpu", weights_only=True)
    modules = merge_lora(model, weights, settings)
    return Adapter(str(adapter.folder), str(base), settings.rank, settings.alpha, modules)


class HuggingFaceLoader:
    """Loads Hugging Face causal-LM folders and LoRA adapter folders (see the module)."""

    name = "huggingface"
    suffixes: tuple[str, ...] = ()
    takes_base_model = True
    takes_device = True

    def reads_folder(self, path: Path) -> bool:
        """Whether ``path`` is a model folder (``config.json``) or an adapter folder."""
        folder = Path(path)
        return (folder / CONFIG).is_file() or (folder / ADAPTER_CONFIG).is_file()

    def load(
        self,
        path: Path,
        *,
        outputs: OutputKind | None = None,
        trust: bool = False,
        base_model: Path | None = None,
        device: str = "cpu",
    ) -> CausalLanguageModel:
        """Read the folder ``path`` (and the base folder of an adapter); the model (with its
        adapter merged on the CPU) runs on ``device``."""
        folder = Path(path)
        if not folder.is_dir():
            raise InputFileError(f"a Hugging Face model must be a folder. Found {str(folder)!r}.")
        transformers = import_optional("transformers", loader=self.name)
        torch = import_optional("torch", loader=self.name)
        torch_threads(torch)
        import_optional("safetensors", loader=self.name)
        adapter = None
        if (folder / ADAPTER_CONFIG).is_file():
            adapter = adapter_files(folder, trust=trust)
            base = _base_folder(adapter, base_model)
        elif base_model is not None:
            raise InvalidInputError(
                f"--base-model applies to adapter folders (adapter_config.json). Found the full "
                f"model folder {str(folder)!r}."
            )
        else:
            base = folder
        if not base.is_dir():
            raise InputFileError(f"the base model must be a folder. Found {str(base)!r}.")
        files = model_files(base, trust=trust)
        with _quiet(transformers):
            model = _read_model(transformers, torch, files)
            tokenizer, tokenizer_files = _tokenizer(transformers, [folder, base])
        wrapped = self._wrap(model, tokenizer, files, tokenizer_files, adapter, folder)
        return wrapped if device == "cpu" else wrapped.to(device)

    def _wrap(
        self,
        model: Any,
        tokenizer: Any,
        files: ModelFiles,
        tokenizer_files: tuple[Path, ...],
        adapter: AdapterFiles | None,
        folder: Path,
    ) -> CausalLanguageModel:
        config = model.config
        vocabulary = int(model.get_input_embeddings().num_embeddings)
        if len(tokenizer) > vocabulary:
            raise InvalidInputError(
                f"{folder}: the tokenizer must fit the model's vocabulary of {vocabulary:,} "
                f"tokens. Found a tokenizer of {len(tokenizer):,} tokens."
            )
        applied = None if adapter is None else _adapted(model, adapter, files.folder)
        info = TextModelInfo(
            architecture=(list(config.architectures or []) or [type(model).__name__])[0],
            model_type=str(config.model_type),
            parameters=int(sum(p.numel() for p in model.parameters())),
            dtype="float32",
            context=_context(config, tokenizer, files.folder),
            vocabulary=vocabulary,
            tokenizer=type(tokenizer).__name__,
            adapter=applied,
        )
        declared, privacy_file = declared_privacy(folder)
        read = (
            *(() if adapter is None else adapter.all),
            *files.all,
            *tokenizer_files,
            *privacy_file,
        )
        wrapped = CausalLanguageModel(model, tokenizer, info, tuple(dict.fromkeys(read)), folder)
        wrapped.declared_privacy = declared
        return wrapped
