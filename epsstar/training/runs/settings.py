"""The training settings as configuration files declare them (recipes, sweep files).

Each is a :class:`~epsstar.plumbing.files.schema.Spec`, so a recipe and a sweep file
refuse the same values with the same words: the hidden widths, epochs, batch size,
learning rate and momentum of :class:`~epsstar.training.trainer.TrainingConfig`, with
bounds wide enough for any run this machine can hold (the memory a network needs is
checked later, by :mod:`epsstar.training.memory`, once the data's width is known).
"""

from __future__ import annotations

from typing import Final

from epsstar.plumbing.files.schema import Integer, ListOf, Number, Text

__all__ = [
    "BATCH_SIZE",
    "CLIP",
    "EPOCHS",
    "HIDDEN",
    "LR",
    "MAX_LAYERS",
    "MAX_WIDTH",
    "MOMENTUM",
    "NAME",
    "SEED",
]

#: The widest hidden layer and the most hidden layers a configuration may ask for.
MAX_WIDTH: Final[int] = 1_000_000
MAX_LAYERS: Final[int] = 100

HIDDEN: Final = ListOf(Integer(1, MAX_WIDTH), max_items=MAX_LAYERS)
EPOCHS: Final = Integer(1, 1_000_000)
BATCH_SIZE: Final = Integer(1, 10**9)
LR: Final = Number(0.0, 1e6, open_low=True)
MOMENTUM: Final = Number(0.0, 1.0, open_high=True)
CLIP: Final = Number(0.0, 1e12, open_low=True)
SEED: Final = Integer(0, 2**63 - 1)
#: A column or class name.
NAME: Final = Text(max_length=1024)
