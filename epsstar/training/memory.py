"""Whether a network fits in memory, checked before it is built.

A network of widths d → h₁ → … → h_L → K has P = Σ (fan_in + 1)·fan_out parameters. One
training run holds, in float32, the weights, their gradient, SGD's momentum buffer and the
clipped (noised) gradient sum, and its export writes two more copies: about 6·P floats.
A batch of b rows keeps every layer's inputs and output gradients: about 3·b·W floats for
W = d + Σh + K, with b twice the expected batch size (Poisson batches vary; twice is
generous from about 30 rows on). Clipping m microbatches forms each group's gradient: m·P
floats more. :func:`check_fits` refuses settings whose estimate exceeds the memory the
system reports available (``psutil.virtual_memory().available`` when psutil is installed,
else the physical memory from ``os.sysconf``), so that ``hidden = [200000, 200000]`` is one
line instead of an attempt to allocate 160 GB.
"""

from __future__ import annotations

import importlib
import itertools
import os
from collections.abc import Sequence

from epsstar.exceptions import InvalidInputError

__all__ = ["available_memory", "check_fits", "parameter_count", "training_bytes"]

_FLOAT_BYTES = 4


def parameter_count(n_features: int, hidden: Sequence[int], n_outputs: int) -> int:
    """Weights and biases of the MLP d → hidden → K."""
    widths = [n_features, *hidden, n_outputs]
    return sum((fan_in + 1) * fan_out for fan_in, fan_out in itertools.pairwise(widths))


def training_bytes(
    n_features: int,
    hidden: Sequence[int],
    n_outputs: int,
    batch_size: int,
    microbatches: int | None = None,
) -> int:
    """The estimate of the module's description, in bytes."""
    parameters = parameter_count(n_features, hidden, n_outputs)
    activations = 3 * 2 * batch_size * (n_features + sum(hidden) + n_outputs)
    groups = 0 if microbatches is None else microbatches * parameters
    return _FLOAT_BYTES * (6 * parameters + activations + groups)


def available_memory() -> tuple[int, str] | None:
    """Bytes of memory available and where the number comes from; None if unknown."""
    try:
        psutil = importlib.import_module("psutil")  # optional; it ships no type hints
        return int(psutil.virtual_memory().available), "available (psutil)"
    except (ImportError, OSError, AttributeError):
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), "physical (sysconf)"
    except (ValueError, OSError, AttributeError):
        return None


def _gigabytes(count: int) -> str:
    return f"{count / 1e9:,.1f} GB"


def check_fits(
    n_features: int,
    hidden: Sequence[int],
    n_outputs: int,
    batch_size: int,
    microbatches: int | None = None,
) -> None:
    """Refuse a network whose training would need more memory than is available."""
    needed = training_bytes(n_features, hidden, n_outputs, batch_size, microbatches)
    memory = available_memory()
    if memory is None or needed <= memory[0]:
        return
    parameters = parameter_count(n_features, hidden, n_outputs)
    raise InvalidInputError(
        f"the network ({n_features} features, {n_outputs} output(s)) has {parameters:,} "
        f"parameters; training it with batches of {batch_size} needs about "
        f"{_gigabytes(needed)} of memory, more than the {_gigabytes(memory[0])} "
        f"{memory[1]}. Found hidden {list(hidden)}."
    )
