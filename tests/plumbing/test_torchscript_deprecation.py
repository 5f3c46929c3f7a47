"""torch's deprecation warnings of TorchScript are silenced where epsstar calls torch.jit,
and nothing else is."""

from __future__ import annotations

import warnings

import pytest

from epsstar.plumbing.runtime.torchscript_deprecation import torchscript_deprecation_silenced

#: the warnings torch 2.14 gives on ``torch.jit.load``, word for word (Python 3.11 to 3.13,
#: Python 3.14 and later)
TORCH_2_14 = (
    "`torch.jit.load` is deprecated. Please switch to `torch.export`.",
    "`torch.jit.load` is not supported in Python 3.14+ and may break. Please switch to "
    "`torch.export`.",
)


def test_torchs_deprecation_of_torch_jit_is_not_shown() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torchscript_deprecation_silenced():
            for message in TORCH_2_14:
                warnings.warn(message, FutureWarning, stacklevel=1)
            warnings.warn("torch.jit.script is deprecated", DeprecationWarning, stacklevel=1)
    assert caught == []


@pytest.mark.parametrize(
    ("message", "category"),
    [("`torch.load` is deprecated", FutureWarning), ("a column is constant", UserWarning)],
)
def test_other_warnings_are_shown(message: str, category: type[Warning]) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torchscript_deprecation_silenced():
            warnings.warn(message, category, stacklevel=1)
    assert [str(warning.message) for warning in caught] == [message]
