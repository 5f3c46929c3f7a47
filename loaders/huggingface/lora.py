"""Merging a LoRA adapter into its base model's weights, by hand.

A LoRA adapter (Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language Models", eq. 3)
stores, for each module it adapts, two matrices ``A`` (``r × in``) and ``B`` (``out × r``); the
fine-tuned weight is ``W + s · B A`` with ``s = α / r`` (``α / √r`` for rank-stabilised LoRA),
``r`` and ``α`` from ``adapter_config.json`` or its per-module ``rank_pattern`` and
``alpha_pattern``, whose keys are regular expressions matched as PEFT matches them, within a
deadline (:mod:`.patterns`); each module's ``A`` and ``B`` must have the rank the
configuration gives it. An
embedding's adapter stores ``lora_embedding_A`` (``r × vocabulary``) and ``lora_embedding_B``
(``dim × r``) and adds ``s · (B A)ᵀ``; GPT-2's ``Conv1D`` keeps its weight as ``in × out``
and adds ``s · (B A)ᵀ`` too. Modules the adapter saved whole
(``modules_to_save``) replace the base model's.

Why by hand rather than with PEFT: the merge is the one formula above, while ``peft`` brings
``accelerate`` and its own import-time cost (several seconds) into every text audit, and
follows transformers' releases closely; the tests merge the same adapters with PEFT's
``merge_and_unload`` and compare the models' outputs. Adapters this merge does not cover are
refused rather than read wrong: any PEFT method other than LoRA, DoRA (``use_dora``), trained
biases (``bias`` other than ``"none"``) and modules other than linear, ``Conv1D`` and
embedding layers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.files.input_bounds import shown
from epsstar.plumbing.records.json_types import JsonObject

from .patterns import check_keys, first_keys

__all__ = ["LoraSettings", "lora_settings", "merge_lora"]

#: A torch tensor (torch is imported only when an adapter is merged).
Tensor = Any
#: An adapter's tensors by their names in the adapter file.
Weights = Mapping[str, Tensor]

_PREFIX = "base_model.model."
_PARTS = re.compile(
    r"^(?P<module>.+)\.(?P<part>lora_A|lora_B|lora_embedding_A|lora_embedding_B)(\.weight)?$"
)


@dataclass(frozen=True, slots=True)
class LoraSettings:
    """The parts of ``adapter_config.json`` the merge reads."""

    rank: int
    alpha: float
    rslora: bool
    rank_pattern: Mapping[str, int]
    alpha_pattern: Mapping[str, float]

    def per_module(self, modules: Sequence[str]) -> dict[str, tuple[int, float]]:
        """``(r, s)`` for each of ``modules``: ``r`` and ``α`` from the first pattern key that
        names the module (:mod:`.patterns`), else the adapter's; ``s = α / r`` (``α / √r``
        with rank-stabilised LoRA)."""
        ranks = first_keys(list(self.rank_pattern), modules, "rank_pattern")
        alphas = first_keys(list(self.alpha_pattern), modules, "alpha_pattern")
        values = {}
        for module in modules:
            rank = self.rank_pattern[ranks[module]] if module in ranks else self.rank
            alpha = self.alpha_pattern[alphas[module]] if module in alphas else self.alpha
            values[module] = (rank, float(alpha) / (math.sqrt(rank) if self.rslora else rank))
        return values


def _checked_patterns(config: JsonObject, field: str) -> dict[str, float]:
    """``rank_pattern`` or ``alpha_pattern``: an object whose keys :func:`check_keys` takes."""
    patterns = config.get(field) or {}
    if not isinstance(patterns, dict):
        raise InvalidInputError(
            f"adapter_config.json: {field} must be an object. Found {shown(patterns)}."
        )
    check_keys(list(patterns), field)
    return {str(key): _number(patterns, str(key)) for key in patterns}


def _number(config: JsonObject, key: str, default: float | None = None) -> float:
    value = config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise InvalidInputError(
            f"adapter_config.json: {key} must be a positive number. Found {shown(value)}."
        )
    return float(value)


def lora_settings(config: JsonObject) -> LoraSettings:
    """The checked LoRA settings of an adapter's configuration (see the module docstring)."""
    kind = config.get("peft_type")
    if kind != "LORA":
        raise InvalidInputError(
            f"adapter_config.json: epsstar applies LoRA adapters only (peft_type 'LORA'). "
            f"Found peft_type {kind!r}."
        )
    if config.get("use_dora"):
        raise InvalidInputError(
            "adapter_config.json: DoRA adapters (use_dora) are not merged by epsstar; merge it "
            "with PEFT's merge_and_unload() and save the merged model. Found use_dora true."
        )
    bias = config.get("bias", "none")
    if bias not in ("none", None):
        raise InvalidInputError(
            f"adapter_config.json: adapters that train biases are not merged by epsstar; "
            f"merge it with PEFT's merge_and_unload(). Found bias {bias!r}."
        )
    ranks = _checked_patterns(config, "rank_pattern")
    return LoraSettings(
        rank=int(_number(config, "r")),
        alpha=_number(config, "lora_alpha", 8),
        rslora=bool(config.get("use_rslora", False)),
        rank_pattern={key: int(value) for key, value in ranks.items()},
        alpha_pattern=_checked_patterns(config, "alpha_pattern"),
    )


def _pairs(weights: Weights) -> tuple[dict[str, dict[str, Tensor]], dict[str, Tensor]]:
    """The adapter's ``A``/``B`` matrices by module, and the whole modules it saved."""
    pairs: dict[str, dict[str, Tensor]] = {}
    saved: dict[str, Tensor] = {}
    for key, tensor in weights.items():
        name = key.removeprefix(_PREFIX)
        if ".modules_to_save." in name:
            module, _, rest = name.partition(".modules_to_save.")
            saved[f"{module}.{rest.split('.', 1)[-1]}"] = tensor
            continue
        found = _PARTS.match(name)
        if found is None:
            raise InvalidInputError(
                f"adapter_model: every tensor must be a LoRA matrix (lora_A, lora_B) or a "
                f"saved module. Found {key!r}."
            )
        pairs.setdefault(found["module"], {})[found["part"]] = tensor
    return pairs, saved


def _check_rank(parts: Weights, name: str, rank: int) -> None:
    """``A`` (``r × in``) and ``B`` (``out × r``) must have the rank the configuration gives."""
    a = parts.get("lora_A", parts.get("lora_embedding_A"))
    b = parts.get("lora_B", parts.get("lora_embedding_B"))
    if a is None or b is None or a.dim() != 2 or b.dim() != 2:
        return  # _delta names the part missing
    if a.shape[0] != rank or b.shape[1] != rank:
        raise InvalidInputError(
            f"adapter_model: module {name!r} must have the rank adapter_config.json gives it, "
            f"{rank}. Found rank {a.shape[0]} in its A matrix {tuple(a.shape)} and "
            f"{b.shape[1]} in its B matrix {tuple(b.shape)}."
        )


def _delta(module: Any, parts: Weights, name: str, scale: float) -> Tensor:
    """``s · B A`` shaped like the module's weight."""
    if "lora_A" in parts and "lora_B" in parts:
        delta = scale * (parts["lora_B"].float() @ parts["lora_A"].float())
        kind = type(module).__name__
        if kind == "Conv1D":
            return delta.T
        if kind == "Linear":
            return delta
    elif "lora_embedding_A" in parts and "lora_embedding_B" in parts:
        delta = scale * (parts["lora_embedding_B"].float() @ parts["lora_embedding_A"].float())
        if type(module).__name__ == "Embedding":
            return delta.T
    else:
        raise InvalidInputError(
            f"adapter_model: module {name!r} must have both LoRA matrices. Found {sorted(parts)}."
        )
    raise InvalidInputError(
        f"adapter_model: epsstar merges LoRA into linear, Conv1D and embedding layers only. "
        f"Found module {name!r} of type {type(module).__name__}."
    )


def merge_lora(model: Any, weights: Weights, settings: LoraSettings) -> tuple[str, ...]:
    """Add each adapted module's ``s · B A`` to ``model``'s weights in place, replace the
    modules the adapter saved whole, and return the names of the modules changed."""
    import torch

    pairs, saved = _pairs(weights)
    modules = dict(model.named_modules())
    parameters = dict(model.named_parameters())
    with torch.no_grad():
        values = settings.per_module(sorted(pairs))
        for name, parts in sorted(pairs.items()):
            module = modules.get(name)
            if module is None:
                raise InvalidInputError(
                    f"adapter_model: the adapter changes module {name!r}, which the base "
                    f"model does not have; is --base-model the model it was trained on?"
                )
            rank, scale = values[name]
            _check_rank(parts, name, rank)
            delta = _delta(module, parts, name, scale)
            if tuple(delta.shape) != tuple(module.weight.shape):
                raise InvalidInputError(
                    f"adapter_model: module {name!r} of the base model must have the shape the "
                    f"adapter was trained on, {tuple(delta.shape)}. Found "
                    f"{tuple(module.weight.shape)}."
                )
            module.weight += delta.to(module.weight.dtype)
        for name, tensor in saved.items():
            target = parameters.get(name)
            if target is None or tuple(target.shape) != tuple(tensor.shape):
                raise InvalidInputError(
                    f"adapter_model: the saved module weight {name!r} must match the base "
                    f"model's. Found {'no such weight' if target is None else tuple(target.shape)}."
                )
            target.copy_(tensor.to(target.dtype))
    return tuple(sorted({*pairs, *(name.rsplit(".", 1)[0] for name in saved)}))
