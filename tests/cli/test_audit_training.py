"""``epsstar audit-training`` end to end: a non-private random forest claiming ε = 1 (a command
template saving ONNX) is refuted with exit code 1; ``epsstar train --target-epsilon 1`` is not
(exit 0); bad input — a command that fails, writes nothing, writes two models, hangs, a table
without the label column — is one line on standard error, exit code 2 and no file written.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from epsstar.cli import main
from epsstar.cli.exit_codes import EXIT_GATE_FAILED, EXIT_OK, EXIT_USAGE

FIT = """
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
import numpy as np
import pandas as pd
from sklearn.ensemble import RandomForestClassifier
from skl2onnx import to_onnx

frame = pd.read_csv(sys.argv[1])
x = frame.drop(columns="label").to_numpy(np.float32)
model = RandomForestClassifier(n_estimators=10, bootstrap=False, random_state=0)
model.fit(x, frame["label"])
# opset 17: skl2onnx 1.20 with onnx 1.17 would write 22, which onnxruntime 1.18 refuses
onnx = to_onnx(model, x[:1], options={"zipmap": False}, target_opset=17)
(Path(sys.argv[2]) / "model.onnx").write_bytes(onnx.SerializeToString())
"""


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Random labels: a model that remembers its records fits members only."""
    folder = tmp_path_factory.mktemp("audit-training")
    rng = np.random.default_rng(0)
    for name, n in (("train", 200), ("population", 600)):
        frame = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
        frame["label"] = rng.integers(0, 2, size=n)
        frame.to_csv(folder / f"{name}.csv", index=False)
    (folder / "fit.py").write_text(FIT, encoding="utf-8")
    return folder


def _run(data: Path, out: Path, *options: str, label: str = "label") -> int:
    """``epsstar audit-training`` on the fixture's tables, writing ``out``."""
    tables = ["--train", str(data / "train.csv"), "--population", str(data / "population.csv")]
    written = ["--json", str(out), "--quiet"]
    return main(["audit-training", *tables, "--label-column", label, *written, *options])


def _audit(data: Path, out: Path, command: str, *options: str, label: str = "label") -> int:
    return _run(data, out, "--command", command, *options, label=label)


def _refused_in_one_line(code: int, err: str, out: Path) -> None:
    assert code == EXIT_USAGE
    assert err.count("\n") == 1
    assert not out.exists()


def test_a_non_private_random_forest_claiming_epsilon_1_is_refuted(
    data: Path, tmp_path: Path, validate_json: Callable[[str, Any], None]
) -> None:
    out = tmp_path / "audit.json"
    command = f"{sys.executable} {data / 'fit.py'} {{train}} {{out}}"
    code = _audit(data, out, command, "--claimed-epsilon", "1", "--canaries", "200")
    document = json.loads(out.read_text(encoding="utf-8"))
    assert code == EXIT_GATE_FAILED
    assert document["refuted"] is True
    assert document["epsilon_lower_bound"] > 1.0
    for key in ("claimed_epsilon", "delta", "method", "canaries", "runs", "confidence"):
        assert key in document
    audit = document["threat_models"][0]
    assert len(audit["scores"]) == len(audit["guesses"]) == 200
    validate_json("audit-training", document)


def test_epsstar_train_with_target_epsilon_1_is_not_refuted(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "audit.json"
    # The population is public: the standardisation is fitted on it, inside the guarantee.
    command = (
        f"{sys.executable} -m epsstar train --data {{train}} --label-column label --epochs 1 "
        f"--population {data / 'population.csv'} --target-epsilon 1 --out {{out}} --quiet"
    )
    code = _audit(data, out, command, "--canaries", "200")
    document = json.loads(out.read_text(encoding="utf-8"))
    assert code == EXIT_OK, document["verdict"]
    # The claim is the one training.json states (epsilon <= 1 by the accountant).
    assert document["claimed_from"].startswith("the saved model's epsstar.privacy")
    assert 0.9 < document["claimed_epsilon"] <= 1.0
    assert document["refuted"] is False


PY = sys.executable
BAD_COMMANDS = {
    "fails": (
        f"{PY} -c \"import sys; sys.exit('no such column')\" {{train}} {{out}}",
        "failed with exit code 1: no such column",
    ),
    "writes-nothing": (f'{PY} -c "pass" {{train}} {{out}}', "wrote no model"),
    "writes-two-models": (
        f"{PY} -c \"import sys, pathlib; [(pathlib.Path(sys.argv[2]) / n).write_bytes(b'x') "
        f"for n in ('a.onnx', 'b.onnx')]\" {{train}} {{out}}",
        "wrote 2 models",
    ),
    "hangs": (
        f'{PY} -c "import time; time.sleep(60)" {{train}} {{out}}',
        "did not finish within 1 s",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_COMMANDS))
def test_a_bad_command_is_one_line_and_exit_2(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    command, said = BAD_COMMANDS[case]
    out = tmp_path / "audit.json"
    code = _audit(
        data, out, command, "--claimed-epsilon", "1", "--canaries", "20", "--timeout", "1"
    )
    err = capsys.readouterr().err
    _refused_in_one_line(code, err, out)
    assert said in err
    assert err.startswith("epsstar audit-training: error:")


def test_a_table_without_the_label_column_is_one_line_and_exit_2(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "audit.json"
    code = _audit(data, out, f'{PY} -c "pass" {{train}} {{out}}', label="target")
    err = capsys.readouterr().err
    _refused_in_one_line(code, err, out)
    assert "'target'" in err


def test_a_template_without_its_placeholders_is_refused(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _audit(data, tmp_path / "audit.json", f"{PY} fit.py {{train}}")
    assert code == EXIT_USAGE
    assert "must contain {out}" in capsys.readouterr().err


@pytest.mark.parametrize("stack", ["0", "1001"])
def test_a_stack_out_of_range_is_one_line_and_exit_2(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], stack: str
) -> None:
    out = tmp_path / "audit.json"
    code = _run(data, out, "--epochs", "1", "--stack", stack)
    err = capsys.readouterr().err
    _refused_in_one_line(code, err, out)
    assert err.rstrip().endswith(f"--stack must be from 1 to 1,000. Found {stack}.")
