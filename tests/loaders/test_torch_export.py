"""``torch.export`` archives (``.pt2``): built with torch itself, audited like the same
network exported to ONNX, and refused without trust where loading could run pickled code
or the graph calls an operator outside tensor computation."""

from __future__ import annotations

import argparse
import io
import operator
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import epsstar.audit.model.contract
from epsstar.audit.model import plugins
from epsstar.exceptions import InvalidInputError
from tests.conftest import audit_files
from tests.numerics import (
    logit_loss_tolerance,
    module_layers,
    module_tolerance,
    network_tolerance,
)

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")

from epsstar.loaders.torch_export import TorchExportLoader  # noqa: E402

NAMES = [f"x{j}" for j in range(8)]
#: the example batch the program is specialised to (not a divisor of the tables' rows)
BATCH = 32


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """An MLP fitted to memorise 150 noisy records, saved by ``torch.export.save`` with
    its example batch (static, the default) and by ``torch.onnx.export``."""
    folder = tmp_path_factory.mktemp("export")
    generator = np.random.default_rng(7)
    features = generator.normal(size=(300, 8))
    labels = (features[:, 0] + generator.normal(scale=2.0, size=300) > 0).astype(np.int64)
    torch.manual_seed(0)
    network = torch.nn.Sequential(torch.nn.Linear(8, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2))
    optimiser = torch.optim.Adam(network.parameters(), lr=0.01)
    x, y = torch.tensor(features[:150], dtype=torch.float32), torch.tensor(labels[:150])
    for _ in range(300):
        optimiser.zero_grad()
        torch.nn.functional.cross_entropy(network(x), y).backward()
        optimiser.step()
    network.eval()
    example = (torch.zeros(BATCH, 8),)
    paths = {"pt2": folder / "mlp.pt2", "onnx": folder / "mlp.onnx"}
    program = torch.export.export(network, example)
    torch.export.save(program, paths["pt2"], extra_files={"epsstar.classes": "[0, 1]"})
    torch.onnx.export(
        network, example, paths["onnx"], dynamo=False, input_names=["x"],
        output_names=["logits"], dynamic_axes={"x": {0: "n"}},
    )  # fmt: skip
    for role, rows in (("train", slice(0, 150)), ("population", slice(150, 300))):
        frame = pd.DataFrame(features[rows], columns=NAMES).assign(label=labels[rows])
        paths[role] = folder / f"{role}.csv"
        frame.to_csv(paths[role], index=False)
    return {"paths": paths, "network": network, "features": features}


@pytest.fixture
def registered() -> Iterator[None]:
    """The loader under its entry-point name (an editable install made before the entry
    point was declared does not list it yet)."""
    added = "torch-export" not in plugins.available_loaders()
    if added:
        plugins.register_loader("torch-export", TorchExportLoader)
    yield
    if added:
        plugins._reset()


@pytest.mark.kernels
def test_the_program_predicts_the_networks_logits_in_any_batch(exported: dict[str, Any]) -> None:
    model = TorchExportLoader().load(exported["paths"]["pt2"])
    assert model.classes == (0, 1)
    features = exported["features"][:77]  # two chunks of 32 and a padded one of 13
    with torch.inference_mode():
        expected = exported["network"](torch.tensor(features, dtype=torch.float32)).numpy()
    # the same float32 graph on the same rows in other batches: two float32 evaluations
    tolerance = network_tolerance(module_layers(exported["network"]), features)
    np.testing.assert_array_less(np.abs(model.predict(features) - expected), tolerance)


@pytest.mark.kernels
def test_the_loader_keeps_the_contract(exported: dict[str, Any]) -> None:
    features = exported["features"][:40]
    # a row alone or in chunks is another float32 evaluation of the same network
    tolerance = float(network_tolerance(module_layers(exported["network"]), features).max())
    epsstar.audit.model.contract.check_loader(
        TorchExportLoader(), exported["paths"]["pt2"], features, rtol=0, atol=tolerance
    )


@pytest.mark.kernels
def test_epsilon_star_agrees_with_the_onnx_export(
    exported: dict[str, Any], registered: None
) -> None:
    """The issue's bar: within 0.02 of the same network exported to ONNX."""
    paths = exported["paths"]
    results = [
        audit_files(
            paths[kind], paths["train"], paths["population"], "label", seed=3, features=NAMES
        )
        for kind in ("pt2", "onnx")
    ]
    # the same float32 network through torch's and onnxruntime's kernels: two float32
    # evaluations, the losses within their derived tolerance (tests/numerics.py)
    logits = network_tolerance(module_layers(exported["network"]), exported["features"][:150])
    found = np.abs(results[0].train_losses - results[1].train_losses)
    np.testing.assert_array_less(found, logit_loss_tolerance(logits))
    assert results[0].epsilon.epsilon > 0.5  # the network memorised its records
    assert abs(results[0].epsilon.epsilon - results[1].epsilon.epsilon) < 0.02
    assert results[0].provenance.loader.name == "torch-export"


def _rewritten(source: Path, target: Path, change: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for entry in old.infolist():
            suffix = next((key for key in change if entry.filename.endswith(key)), None)
            new.writestr(entry, old.read(entry) if suffix is None else change[suffix])
    return target


def test_pickled_payloads_are_refused_without_trust(
    exported: dict[str, Any], tmp_path: Path
) -> None:
    source = exported["paths"]["pt2"]
    with zipfile.ZipFile(source) as archive:
        (config,) = [n for n in archive.namelist() if n.endswith("weights_config.json")]
        text = archive.read(config)
    pickled = _rewritten(
        source, tmp_path / "pickled.pt2",
        {"weights_config.json": text.replace(b'"use_pickle": false', b'"use_pickle": true', 1)},
    )  # fmt: skip
    with pytest.raises(InvalidInputError, match="weights_only loading refuses.*weight_0"):
        TorchExportLoader().load(pickled)
    # sample inputs that weights_only loading refuses: torch would unpickle them in full
    buffer = io.BytesIO()
    torch.save({"x": argparse.Namespace(a=1)}, buffer)  # a class weights_only refuses
    sneaky = _rewritten(source, tmp_path / "sneaky.pt2", {".pt": buffer.getvalue()})
    with pytest.raises(InvalidInputError, match=r"weights_only loading refuses.*--trust-model"):
        TorchExportLoader().load(sneaky)


def test_a_custom_operator_is_refused_without_trust(tmp_path: Path) -> None:
    @torch.library.custom_op("epsstar_test::twice", mutates_args=())
    def twice(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @twice.register_fake
    def _(x: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(x)

    class Custom(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.ops.epsstar_test.twice(x)

    path = tmp_path / "custom.pt2"
    torch.export.save(torch.export.export(Custom(), (torch.zeros(4, 3),)), path)
    with pytest.raises(InvalidInputError, match=r"calls epsstar_test::twice") as caught:
        TorchExportLoader().load(path)
    assert str(caught.value).endswith("Found epsstar_test::twice.")
    assert TorchExportLoader().load(path, trust=True).predict(np.ones((4, 3))).shape == (4, 3)


@pytest.mark.kernels
def test_arithmetic_on_a_dynamic_batch_loads_without_trust(tmp_path: Path) -> None:
    """A dynamic batch dimension brings Python arithmetic on symbolic sizes (``n * 2``)
    into the graph; it is loaded without trust and runs at every batch size."""

    class Reshaping(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(4, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            n = x.shape[0]
            return self.linear(x.reshape(n * 2, 2).reshape(n, 4))

    torch.manual_seed(0)
    network = Reshaping().eval()
    batch = torch.export.Dim("batch")
    program = torch.export.export(network, (torch.zeros(3, 4),), dynamic_shapes={"x": {0: batch}})
    assert any(node.target is operator.mul for node in program.graph.nodes)
    path = tmp_path / "reshaping.pt2"
    torch.export.save(program, path)
    model = TorchExportLoader().load(path)
    for rows in (1, 5, 300):
        features = np.random.default_rng(rows).normal(size=(rows, 4))
        with torch.no_grad():
            expected = network(torch.tensor(features, dtype=torch.float32)).numpy()
        # the same float32 network, perhaps through other kernels or thread splits
        tolerance = module_tolerance(network, features)
        assert (np.abs(model.predict(features) - expected) <= tolerance).all()
