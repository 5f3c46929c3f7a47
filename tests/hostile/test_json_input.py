"""JSON from outside that breaks ``json.loads``: nested 100,000 deep, an integer of 5,000
digits, a lone surrogate. Every reader of a user's JSON goes through one parser
(:mod:`epsstar.plumbing.files.json_parsing`), so each is one line naming the file or is
ignored where the reader ignores a malformed file; none is a traceback. A last test keeps the class
closed: no other module of the library calls ``json.load``/``json.loads``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from epsstar.audit.model.class_labels import classes_from_text, features_from_text
from epsstar.audit.model.declared_privacy import privacy_from_text
from epsstar.audit.premise.tracked_bound import tracked_bound
from epsstar.exceptions import InputFileError
from epsstar.plumbing.files.json_parsing import parse_json
from epsstar.plumbing.files.schema import load_document, read_json

ROOT = Path(__file__).resolve().parents[2]

#: The three documents, as JSON text, and what the parser's line says of each.
HOSTILE = {
    "nested 100,000 deep": (
        "[" * 100_000 + "]" * 100_000,
        "the top level must be nested at most 64 levels deep. Found more than 64 levels.",
    ),
    "a 5,000-digit integer": ('{"n": ' + "9" * 5_000 + "}", "integers must have at most"),
    "a lone surrogate": ('{"name": "x\\ud800"}', "strings must be Unicode text"),
}


@pytest.mark.parametrize(("text", "said"), HOSTILE.values(), ids=HOSTILE)
def test_the_parser_says_one_line_naming_the_file_and_line(text: str, said: str) -> None:
    with pytest.raises(InputFileError) as caught:
        parse_json(text, "records.jsonl", line=7)
    message = str(caught.value)
    assert message.startswith(f"records.jsonl, line 7: {said}")
    assert "\n" not in message
    assert len(message) < 300


@pytest.mark.parametrize(("text", "said"), HOSTILE.values(), ids=HOSTILE)
@pytest.mark.parametrize(
    "reader",
    [
        lambda path: read_json(path, "--recipe"),
        lambda path: load_document(path, "the manifest"),
    ],
    ids=["configuration", "document"],
)
def test_configuration_files(
    tmp_path: Path, reader: Callable[[Path], object], text: str, said: str
) -> None:
    path = tmp_path / "config.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputFileError, match=re.escape(f"{path}: {said}")):
        reader(path)


def test_a_toml_integer_beyond_the_limit_is_the_same_line(tmp_path: Path) -> None:
    path = tmp_path / "manifest.toml"
    path.write_text("repeats = " + "9" * 5_000 + "\n", encoding="utf-8")
    with pytest.raises(InputFileError, match=re.escape(f"{path}: integers must have at most")):
        load_document(path, "the manifest")


@pytest.mark.parametrize(("text", "said"), HOSTILE.values(), ids=HOSTILE)
@pytest.mark.parametrize(
    ("reader", "refusal"),
    [
        (classes_from_text, "metadata must be a non-empty JSON array of class labels"),
        (features_from_text, "metadata must be a non-empty JSON array of distinct column"),
        (privacy_from_text, "metadata of model.onnx must be a JSON object"),
    ],
    ids=["class labels", "feature names", "declared privacy"],
)
def test_model_metadata(
    reader: Callable[[str, object], object], refusal: str, text: str, said: str
) -> None:
    with pytest.raises(InputFileError, match=re.escape(refusal)) as caught:
        reader(text, "model.onnx")
    assert "\n" not in str(caught.value)
    assert len(str(caught.value)) < 400


@pytest.mark.parametrize(("text", "said"), HOSTILE.values(), ids=HOSTILE)
def test_a_hugging_face_folder_file(tmp_path: Path, text: str, said: str) -> None:
    pytest.importorskip("transformers")
    from epsstar.loaders.huggingface.folder import read_json as read_folder_json

    path = tmp_path / "config.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputFileError, match=re.escape(f"{path}: {said}")):
        read_folder_json(path)


@pytest.mark.parametrize(("text", "said"), HOSTILE.values(), ids=HOSTILE)
def test_an_xgboost_json_model(tmp_path: Path, text: str, said: str) -> None:
    pytest.importorskip("xgboost")
    from epsstar.loaders.xgboost import XGBoostLoader

    path = tmp_path / "model.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputFileError, match="must be an XGBoost model saved with save_model"):
        XGBoostLoader().load(path)


@pytest.mark.parametrize(("text", "said"), HOSTILE.values(), ids=HOSTILE)
def test_a_training_record_beside_the_model_is_ignored_as_any_malformed_one(
    tmp_path: Path, text: str, said: str
) -> None:
    (tmp_path / "training.json").write_text(text, encoding="utf-8")
    (tmp_path / "model.onnx").write_bytes(b"")
    assert tracked_bound(tmp_path / "model.onnx", "age") is None


#: Modules that parse JSON themselves, and why: the torch.export archive check must read the
#: archive's JSON exactly as ``torch.export.load`` will (a bound of ours that skipped a
#: document torch still reads would skip the check), and the LoRA pattern matcher reads
#: only what its own child process wrote.
OWN_PARSERS = {
    Path("epsstar", "plumbing", "files", "json_parsing.py"),
    Path("loaders", "torch_export", "archive.py"),
    Path("loaders", "huggingface", "patterns.py"),
}


def test_no_other_module_calls_json_load() -> None:
    """The class stays closed: a new reader of JSON goes through the one parser."""
    call = re.compile(r"\bjson\.loads?\(|pd\.read_json\(|pyarrow\.json")
    found = []
    for folder in ("epsstar", "loaders", "reports"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT)
            if relative in OWN_PARSERS or relative.parts[:2] in {
                ("epsstar", "loaders"),
                ("epsstar", "reports"),
            }:
                continue  # the parsers above, and the links to loaders/ and reports/
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if call.search(line):
                    found.append(f"{relative}:{number}")
    assert found == []
