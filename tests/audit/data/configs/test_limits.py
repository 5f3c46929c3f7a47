"""Limits from a reviewed file: which entry applies to a check, and what is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from epsstar.audit.data.configs.limits import Limit, Limits, find_limits, read_limits
from epsstar.exceptions import InputFileError

_FILE = """
max-epsilon = 1.0
warn-only = true

[[limits]]
model = "models/*.onnx"
max-epsilon = 2.0

[[limits]]
model = "models/*.onnx"
attack = "lira"
max-epsilon = 3.0

[[limits]]
slice = "*"
max-epsilon = 4.0

[[limits]]
slice = "b"
max-epsilon = 5.0
"""


def test_the_most_specific_entry_decides(tmp_path: Path) -> None:
    path = tmp_path / "epsstar.toml"
    path.write_text(_FILE)
    limits = read_limits(path)
    assert limits is not None
    assert (limits.default, limits.warn_only, limits.source) == (1.0, True, str(path))
    assert limits.limit("other.onnx", "loss") == 1.0  # the default
    assert limits.limit("models/m.onnx", "loss") == 2.0  # model
    assert limits.limit("/abs/models/m.onnx", "loss") == 1.0  # the glob is over the path given
    assert limits.limit("models/m.onnx", "lira") == 3.0  # model and attack beat model
    assert limits.limit("x.onnx", "loss", "a") == 4.0  # any slice
    assert limits.limit("x.onnx", "loss", "b") == 5.0  # this slice (the later of equals)
    # the headline runs with the strictest limit of the attacks asked for
    assert limits.for_model("models/m.onnx", ["loss", "lira"]) == 2.0
    assert limits.for_model("models/m.onnx", ["lira"]) == 3.0


def test_slices_are_checked_only_where_an_entry_names_them() -> None:
    limits = Limits(1.0, (Limit(2.0, model="m"),))
    assert not limits.slices_checked
    assert limits.limit("m", "loss", "a") is None
    assert Limits(None).for_model("m", ["loss"]) is None
    assert Limits(None).with_default(0.5).limit("m", "loss") == 0.5


def test_a_file_name_matches_the_model_by_its_name() -> None:
    assert Limit(1.0, model="m*.onnx").matches("/deep/folder/m1.onnx", "loss", None)
    assert not Limit(1.0, model="m*.onnx").matches("/deep/folder/n1.onnx", "loss", None)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("max-epsilon = 1\nmax-epsilonn = 2\n", r"has no key 'max-epsilonn' \(allowed: limits, "),
        ("[[limits]]\nmodel = 'a'\n", r"missing max-epsilon in limits\[0\]"),
        ("max-epsilon = -1\n", r"max-epsilon"),
        ("warn-only = 'yes'\n", r"warn-only"),
        ("max-epsilon = \n", r"epsstar\.toml"),
    ],
)
def test_a_bad_file_is_refused_in_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "epsstar.toml"
    path.write_text(text)
    with pytest.raises(InputFileError, match=message) as caught:
        read_limits(path)
    assert "\n" not in str(caught.value)


def test_pyproject_holds_limits_under_tool_epsstar(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[project]\nname = 'x'\n")
    assert read_limits(pyproject) is None
    assert find_limits(tmp_path) is None
    pyproject.write_text("[project]\nname = 'x'\n[tool.epsstar]\nmax-epsilon = 2.5\n")
    found = find_limits(tmp_path)
    assert found is not None
    assert found.default == 2.5
    pyproject.write_text("[tool.epsstar]\nbogus = 1\n")
    with pytest.raises(InputFileError, match=r"tool\.epsstar has no key 'bogus'"):
        read_limits(pyproject)
    # epsstar.toml comes first
    (tmp_path / "epsstar.toml").write_text("max-epsilon = 0.5\n")
    found = find_limits(tmp_path)
    assert found is not None
    assert found.default == 0.5
