"""Records of the wrong shape or type for the model: one line saying what it wants.

A network that takes images (a TorchScript CNN taking (N, 1, 8, 8)) given a flat table of
64 columns is told to use ``--input-shape``, with the shape its first convolution implies;
integer codes given to a pipeline whose encoder was fitted on strings name the column.
Each case is exit code 2, one line on standard error and nothing written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from epsstar.cli.exit_codes import EXIT_USAGE
from tests.conftest import invoke

torch = pytest.importorskip("torch")


class _Images(torch.nn.Module):  # type: ignore[misc]
    """A small CNN taking (N, 1, 8, 8) records."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, 3)
        self.fc = torch.nn.Linear(4 * 6 * 6, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.relu(self.conv(x)).flatten(1))


def test_a_flat_table_for_an_image_network_names_input_shape(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    torch.manual_seed(0)
    torch.jit.script(_Images().eval()).save(str(tmp_path / "cnn.pt"))
    rng = np.random.default_rng(0)
    for name in ("train", "population"):
        features = rng.normal(size=(600, 64)).astype(np.float32)
        np.savez(tmp_path / f"{name}.npz", X=features, y=rng.integers(0, 2, 600))
    before = sorted(tmp_path.iterdir())
    code, out, err = invoke(
        [
            *("audit", str(tmp_path / "cnn.pt"), "--train", str(tmp_path / "train.npz")),
            *("--population", str(tmp_path / "population.npz"), "--label-column", "y"),
            *("--quiet", "--json", str(tmp_path / "out" / "a.json")),
        ],
        capsys,
    )
    assert "Traceback" not in err
    assert (code, out) == (EXIT_USAGE, "")
    (line,) = err.splitlines()
    assert line.startswith(
        f"epsstar audit: error: the model in {tmp_path / 'cnn.pt'} must accept the features "
        "(600 × 64 float32), but it takes records of 3 dimensions: give their shape with "
        "--input-shape 1,8,8. Found RuntimeError: "
    ), line
    assert sorted(tmp_path.iterdir()) == before


def test_integer_codes_for_an_encoder_fitted_on_strings_name_the_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pd = pytest.importorskip("pandas")
    skops_io = pytest.importorskip("skops.io")
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(0)
    names = np.array(["blue", "green", "red"])

    def table(n: int) -> tuple[Any, Any]:
        codes = rng.integers(0, 3, n)
        frame = pd.DataFrame({"colour": codes, "x": rng.normal(size=n)})
        return frame, rng.integers(0, 2, n)

    fitted, labels = table(300)
    fitted["colour"] = names[fitted["colour"]]
    encoder = make_column_transformer(
        (OneHotEncoder(handle_unknown="ignore"), ["colour"]), remainder="passthrough"
    )
    skops_io.dump(
        make_pipeline(encoder, LogisticRegression()).fit(fitted, labels), tmp_path / "m.skops"
    )
    for name in ("train", "population"):
        frame, labels = table(300)
        frame.assign(label=labels).to_csv(tmp_path / f"{name}.csv", index=False)
    first = int(pd.read_csv(tmp_path / "train.csv")["colour"].iloc[0])
    before = sorted(tmp_path.iterdir())
    code, out, err = invoke(
        [
            *("audit", str(tmp_path / "m.skops"), "--train", str(tmp_path / "train.csv")),
            *("--population", str(tmp_path / "population.csv"), "--label-column", "label"),
            *("--quiet", "--json", str(tmp_path / "out" / "a.json")),
        ],
        capsys,
    )
    assert "Traceback" not in err
    assert (code, out) == (EXIT_USAGE, "")
    (line,) = err.splitlines()
    assert line == (
        f"epsstar audit: error: the model in {tmp_path / 'm.skops'} must receive text in "
        "column 'colour': its encoder was fitted on strings such as 'blue', and the data hold "
        "numbers there (write the categories as the model saw them). "
        f"Found {first} in 'colour'."
    )
    assert sorted(tmp_path.iterdir()) == before
