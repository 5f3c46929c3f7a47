"""LoRA adapters trained by DP-SGD: only the adapter's matrices are trained (and clipped).

LoRA (Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language Models") adds to each
adapted weight ``W`` the low-rank update ``s · B A`` (``A`` of ``r × in``, ``B`` of
``out × r``, ``s = α / r``). The adapted modules are the attention's input projections, found
by name (:data:`TARGET_MODULES`: GPT-2's ``c_attn``, the ``q_proj`` and ``v_proj`` of Llama,
Mistral and OPT, ``query_key_value`` of GPT-NeoX and Falcon), linear or GPT-2's ``Conv1D``
(whose weight is ``in × out``: it adds ``(s · B A)ᵀ``). ``A`` starts uniform in
``±1/√in`` and ``B`` at zero, as PEFT starts them, so the first model is the base model.

The adapter is written in PEFT's format, ``adapter_config.json`` and
``adapter_model.safetensors`` (tensors ``base_model.model.<module>.lora_A.weight`` and
``...lora_B.weight``), which the audit's Hugging Face loader merges into the base model
(:mod:`epsstar.loaders.huggingface.lora`) and PEFT reads as its own.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import torch

from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.records.json_types import JsonObject

__all__ = ["TARGET_MODULES", "LoraLayout", "lora_layout"]

#: The last part of the names of the modules an adapter adapts.
TARGET_MODULES: Final = ("c_attn", "q_proj", "v_proj", "query_key_value")
_KINDS: Final = ("Linear", "Conv1D")
_PREFIX: Final = "base_model.model."


@dataclass(frozen=True, slots=True)
class _Adapted:
    name: str
    kind: str
    fan_in: int
    fan_out: int


@dataclass(frozen=True, slots=True)
class LoraLayout:
    """The modules an adapter of ``rank`` and ``alpha`` adapts in one model."""

    modules: tuple[_Adapted, ...]
    rank: int
    alpha: float

    @property
    def parameters(self) -> int:
        """The numbers an adapter trains: r·(in + out) per adapted module."""
        return sum(self.rank * (m.fan_in + m.fan_out) for m in self.modules)

    @property
    def targets(self) -> tuple[str, ...]:
        """The last parts of the adapted modules' names (PEFT's ``target_modules``)."""
        return tuple(sorted({m.name.rsplit(".", 1)[-1] for m in self.modules}))

    @property
    def scale(self) -> float:
        return self.alpha / self.rank

    def initial(self, generator: torch.Generator) -> dict[str, torch.Tensor]:
        """The trained matrices at the start: ``A`` uniform in ±1/√in, ``B`` zero."""
        params = {}
        for module in self.modules:
            bound = 1.0 / math.sqrt(module.fan_in)
            uniform = torch.rand((self.rank, module.fan_in), generator=generator)
            params[f"{module.name}.lora_A"] = (2.0 * uniform - 1.0) * bound
            params[f"{module.name}.lora_B"] = torch.zeros((module.fan_out, self.rank))
        return params

    def merged(
        self, base: Mapping[str, torch.Tensor], params: Mapping[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """Each adapted module's weight ``W + s · B A`` (transposed for ``Conv1D``)."""
        weights = {}
        for module in self.modules:
            delta = self.scale * (params[f"{module.name}.lora_B"] @ params[f"{module.name}.lora_A"])
            name = f"{module.name}.weight"
            weights[name] = base[name] + (delta.T if module.kind == "Conv1D" else delta)
        return weights

    def tensors(self, params: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The adapter file's tensors, named as PEFT names them."""
        return {
            f"{_PREFIX}{name}.weight": value.detach().cpu().contiguous()
            for name, value in params.items()
        }

    def config(self, base_model: str) -> JsonObject:
        """``adapter_config.json`` for the base model folder ``base_model``."""
        return {
            "peft_type": "LORA",
            "task_type": "CAUSAL_LM",
            "base_model_name_or_path": base_model,
            "r": self.rank,
            "lora_alpha": self.alpha,
            "lora_dropout": 0.0,
            "bias": "none",
            "target_modules": list(self.targets),
            "fan_in_fan_out": any(m.kind == "Conv1D" for m in self.modules),
            "use_rslora": False,
            "use_dora": False,
            "inference_mode": True,
        }


def lora_layout(model: Any, rank: int, alpha: float) -> LoraLayout:
    """The modules of ``model`` named in :data:`TARGET_MODULES`, or a one-line refusal."""
    found = []
    for name, module in model.named_modules():
        kind = type(module).__name__
        if name.rsplit(".", 1)[-1] not in TARGET_MODULES or kind not in _KINDS:
            continue
        rows, columns = module.weight.shape
        fan_in, fan_out = (rows, columns) if kind == "Conv1D" else (columns, rows)
        found.append(_Adapted(name, kind, int(fan_in), int(fan_out)))
    if not found:
        raise InvalidInputError(
            f"--lora-rank: the adapter adapts the attention's input projections "
            f"({', '.join(TARGET_MODULES)}), linear or Conv1D. Found none in the "
            f"{type(model).__name__} of --init."
        )
    return LoraLayout(tuple(found), rank, alpha)
