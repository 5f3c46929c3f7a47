"""TorchScript's deprecation warnings, silenced where epsstar reads or writes TorchScript.

PyTorch deprecates TorchScript in favour of ``torch.export``: its ``torch.jit`` functions warn
on each call (a ``DeprecationWarning``, and from torch 2.14 a ``FutureWarning`` naming the
function: deprecated, or on Python 3.14 not supported and may break; a failure to load is
reported as an error anyway). A TorchScript file is the format a user audits, or one the
trainer writes beside its ONNX file; the warning is not the user's to act on, and the command
line would relay it as a line of its own before every result or error.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["TORCHSCRIPT_DEPRECATION", "torchscript_deprecation_silenced"]

#: The start of torch's ``FutureWarning`` on a ``torch.jit`` function (torch 2.14 and later).
TORCHSCRIPT_DEPRECATION = r"`torch\.jit\.\w+` is "


@contextmanager
def torchscript_deprecation_silenced() -> Iterator[None]:
    """Within: torch's deprecation warnings of TorchScript are not shown."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        warnings.filterwarnings("ignore", TORCHSCRIPT_DEPRECATION, FutureWarning)
        yield
