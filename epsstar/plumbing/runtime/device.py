"""The torch device a model runs on or a model is trained on (``--device``).

``cpu`` (the default), ``cuda``, ``cuda:N`` or ``mps``, where this machine's torch has
them. The name is checked before any work starts: a device torch does not know, or one
this machine does not have, is one line naming it (``--device cuda: torch has no CUDA on
this machine. Found 'cuda'.``). torch is imported only when a device other than the CPU is
asked for, so a CPU audit of an ONNX model never imports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from epsstar.exceptions import InvalidInputError

if TYPE_CHECKING:  # pragma: no cover
    import torch

__all__ = ["CPU", "DEVICE_CHOICES", "checked_device", "torch_device"]

#: The default device.
CPU = "cpu"

#: The device names ``--device`` accepts, as its help shows them.
DEVICE_CHOICES = "cpu, cuda, cuda:N or mps"


def _refused(option: str, text: str, why: str) -> InvalidInputError:
    return InvalidInputError(f"{option} {text}: {why}. Found {text!r}.")


def checked_device(text: str | None, *, option: str = "--device") -> str:
    """The canonical name of device ``text`` (``None`` or ``"cpu"``: ``"cpu"``; ``"cuda"``:
    ``"cuda:0"``), after checking that torch knows it and this machine has it."""
    if text is None:
        return CPU
    name = text.strip().lower()
    if name == CPU:
        return CPU
    try:
        import torch
    except ImportError:
        raise _refused(option, text, "needs torch, which is not installed") from None
    try:
        device = torch.device(name)
    except (RuntimeError, ValueError):
        raise _refused(option, text, f"not a device name ({DEVICE_CHOICES})") from None
    if device.type == "cpu":
        return CPU
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise _refused(option, text, "torch has no CUDA on this machine")
        count = torch.cuda.device_count()
        index = 0 if device.index is None else device.index
        if index >= count:
            raise _refused(option, text, f"this machine has {count} CUDA device(s), from cuda:0")
        return f"cuda:{index}"
    if device.type == "mps":
        if not torch.backends.mps.is_available():
            raise _refused(option, text, "torch has no MPS on this machine")
        return "mps"
    raise _refused(option, text, f"not supported; use {DEVICE_CHOICES}")


def torch_device(text: str | None) -> torch.device:
    """``text`` checked (:func:`checked_device`) as a :class:`torch.device`."""
    import torch

    return torch.device(checked_device(text))
