"""Records of the wrong shape or type for the model: one line saying what it wants.

A network that takes images (a TorchScript CNN taking (N, 1, 8, 8)) given a flat table of
64 columns is told to use ``--input-shape``, with the shape its first convolution implies.
Each case is exit code 2, one line on standard error and nothing written.
"""

from __future__ import annotations

from pathlib import Path

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
