"""torch is required in one place, as a range, and the torch CI installs first lies in it.

The README's test command (``.ci/run``) installs the CPU build of one torch release before
the extras: pip keeps an installed torch that every requirement admits, and would otherwise
replace it with PyPI's build, which on Linux carries several GB of CUDA libraries.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
EXTRAS: dict[str, list[str]] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
    "optional-dependencies"
]


def _torch_requirements() -> list[tuple[str, Requirement]]:
    """Every requirement of torch itself, with the extra that states it."""
    found = [(extra, Requirement(line)) for extra, lines in EXTRAS.items() for line in lines]
    return [(extra, requirement) for extra, requirement in found if requirement.name == "torch"]


def test_torch_is_required_once_as_a_range() -> None:
    ((extra, torch),) = _torch_requirements()
    assert extra == "torch"
    bounds = {spec.operator for spec in torch.specifier}
    assert bounds == {">=", "<"}, f"a lower and an upper bound, not a pin: {torch}"


def test_the_torch_ci_installs_first_is_in_the_range() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    pinned = re.findall(r'pip install "torch==([^"]+)" && ', ci)
    assert len(pinned) == 1, "the README's test command installs one torch before the extras"
    ((_, torch),) = _torch_requirements()
    assert torch.specifier.contains(pinned[0]), f"torch {pinned[0]} is outside {torch}"


def test_the_other_extras_take_torch_from_its_extra() -> None:
    for extra in ("text", "dev"):
        assert "epsstar[torch]" in EXTRAS[extra]
