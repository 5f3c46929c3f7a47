"""Logistic regression and MLPs, and the exported model around them.

:class:`MLP` is a stack of ``Linear`` layers with ReLU between them; no hidden
layers is (multinomial) logistic regression. It outputs logits: one column for
binary tasks (the logit of P(y=1)), K columns for K ≥ 3 classes.

:class:`ExportedModel` is what gets saved: it standardises raw features with a mean and
standard deviation (fitted on the table :mod:`epsstar.training.standardisation` chooses),
runs the MLP and returns
probabilities — an (n, 1) column P(y=1) for binary tasks and an (n, K) matrix of
class probabilities otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from numpy.typing import NDArray
from torch import nn

from epsstar.exceptions import InvalidInputError
from epsstar.statistics._validation import check_positive_int

__all__ = ["MLP", "ExportedModel", "Standardiser", "output_width", "parse_hidden"]


def parse_hidden(text: str | Sequence[int]) -> tuple[int, ...]:
    """Hidden widths from ``"100,100,100"`` (or a sequence); empty means logistic regression."""
    if isinstance(text, str):
        parts = [part.strip() for part in text.split(",") if part.strip()]
        widths: list[int] = []
        for part in parts:
            try:
                widths.append(int(part))
            except ValueError:
                raise InvalidInputError(
                    f"hidden must be comma-separated positive integers. Found {text!r}."
                ) from None
    else:
        widths = list(text)
    return tuple(check_positive_int("hidden", width) for width in widths)


def output_width(n_classes: int) -> int:
    """Logit columns for ``n_classes`` classes: 1 for binary tasks, K otherwise."""
    if n_classes < 2:
        raise InvalidInputError(f"the labels must take at least 2 values. Found {n_classes}.")
    return 1 if n_classes == 2 else n_classes


class MLP(nn.Module):
    """Linear → ReLU → … → Linear, returning logits.

    Parameters are initialised from ``generator`` with PyTorch's default
    ``Linear`` scheme (uniform in ±1/sqrt(fan_in)), so a seed fixes the model.
    """

    __jit_unused_properties__ = ["linears"]  # noqa: RUF012 - TorchScript reads this name

    def __init__(
        self,
        n_features: int,
        n_outputs: int,
        hidden: Sequence[int] = (),
        *,
        generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        widths = [n_features, *hidden, n_outputs]
        self.layers = nn.ModuleList(
            nn.Linear(widths[i], widths[i + 1], dtype=dtype) for i in range(len(widths) - 1)
        )
        with torch.no_grad():
            for layer in self.layers:
                assert isinstance(layer, nn.Linear)
                bound = 1.0 / math.sqrt(layer.in_features)
                layer.weight.uniform_(-bound, bound, generator=generator)
                layer.bias.uniform_(-bound, bound, generator=generator)

    @property
    def linears(self) -> list[nn.Linear]:
        return [layer for layer in self.layers if isinstance(layer, nn.Linear)]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        last = len(self.layers) - 1
        for index, layer in enumerate(self.layers):
            x = layer(x)
            if index < last:
                x = torch.relu(x)
        return x


class Standardiser(nn.Module):
    """(x − mean) / scale with constants fitted on a table's features.

    Constant columns get scale 1, so they map to 0 instead of dividing by 0.
    The constants are frozen parameters (never trained).
    """

    def __init__(self, mean: torch.Tensor, scale: torch.Tensor) -> None:
        super().__init__()
        self.mean = nn.Parameter(mean.clone(), requires_grad=False)
        self.scale = nn.Parameter(scale.clone(), requires_grad=False)

    @classmethod
    def fit(cls, features: NDArray[np.float64], dtype: torch.dtype) -> Standardiser:
        mean = features.mean(axis=0)
        scale = features.std(axis=0)
        scale = np.where(scale > 0.0, scale, 1.0)
        return cls(torch.as_tensor(mean, dtype=dtype), torch.as_tensor(scale, dtype=dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / self.scale

    def numpy(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        mean = self.mean.detach().double().numpy()
        scale = self.scale.detach().double().numpy()
        return mean, scale


class ExportedModel(nn.Module):
    """Raw features in, probabilities out: standardise → MLP → sigmoid or softmax."""

    def __init__(self, standardiser: Standardiser, network: MLP, binary: bool) -> None:
        super().__init__()
        self.standardiser = standardiser
        self.network = network
        self.binary = binary

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.network(self.standardiser(x))
        if self.binary:
            return torch.sigmoid(logits)
        return torch.softmax(logits, dim=1)
