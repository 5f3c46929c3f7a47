"""Structured input files within their bound (epsstar.plumbing.files.input_bounds, and the paths one
names kept inside its folder by epsstar.audit.inputs.inside): an ``MLmodel`` made of
YAML aliases that expand without end (the "billion laughs"), files beyond the size or the
nesting bound, and a model folder's weights index that names files outside the folder. Each
ends, within a deadline, in one line naming the file and the bound, with exit code 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from epsstar.exceptions import InputFileError, InvalidInputError
from epsstar.plumbing.files.input_bounds import MAX_BYTES, MAX_DEPTH, shown
from epsstar.plumbing.files.json_parsing import read_json_file
from tests.hostile.bounded import run_cli

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "models"
TABLES = [
    "--train", str(FIXTURES / "binary_train.csv"),
    "--population", str(FIXTURES / "binary_population.csv"),
    "--label-column", "label",
]  # fmt: skip

LAUGHS = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(9)
)


def _mlmodel(folder: Path, text: str) -> Path:
    folder.mkdir()
    (folder / "MLmodel").write_text(text, encoding="utf-8")
    return folder


def _audit(model: Path, tmp_path: Path) -> tuple[str, int]:
    report = tmp_path / "audit.json"
    finished = run_cli(["audit", str(model), *TABLES, "--json", str(report)], seconds=90)
    assert not report.exists()
    return finished.one_line(), finished.code


def test_an_mlmodel_of_aliases_is_refused_before_it_expands(tmp_path: Path) -> None:
    text = LAUGHS + "flavors:\n  onnx:\n    data: *j\n"  # 9^10 strings once expanded
    line, code = _audit(_mlmodel(tmp_path / "laughs", text), tmp_path)
    assert code == 2
    assert "must be YAML without anchors or aliases" in line
    assert "MLmodel" in line


def test_an_mlmodel_nested_too_deep_is_refused(tmp_path: Path) -> None:
    text = "flavors: " + "[" * 5000 + "]" * 5000 + "\n"
    line, code = _audit(_mlmodel(tmp_path / "deep", text), tmp_path)
    assert code == 2
    assert line.endswith(f"must be nested at most {MAX_DEPTH} levels deep. Found more than "
                         f"{MAX_DEPTH} levels.")  # fmt: skip


def test_an_mlmodel_beyond_the_size_bound_is_refused_unread(tmp_path: Path) -> None:
    folder = _mlmodel(tmp_path / "large", "flavors:\n")
    with (folder / "MLmodel").open("r+b") as file:
        file.truncate(MAX_BYTES + 1)  # sparse: nothing is written, the size is what counts
    line, code = _audit(folder, tmp_path)
    assert code == 2
    assert f"must be at most {MAX_BYTES:,} bytes. Found {MAX_BYTES + 1:,} in" in line
    assert str(folder / "MLmodel") in line


def test_a_flavour_path_that_is_a_huge_value_is_quoted_short(tmp_path: Path) -> None:
    text = "flavors:\n  onnx:\n    data: [" + ", ".join(["x" * 50] * 20_000) + "]\n"
    line, code = _audit(_mlmodel(tmp_path / "list", text), tmp_path)
    assert code == 2
    assert line.endswith("Found a list of 20000 items.")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("x" * 10_000, "chars)"),
        ({"k" * 1000: 1}, "a table with keys"),
        (list(range(100_000)), "a list of 100000 items"),
    ],
)
def test_a_value_in_a_message_is_cut(value: object, expected: str) -> None:
    text = shown(value)
    assert expected in text
    assert len(text) <= 80


def test_a_json_config_nested_deep_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(
        InputFileError, match=f"config.json: the top level must be nested at most {MAX_DEPTH}"
    ):
        read_json_file(path, "the configuration")


# --- Hugging Face model folders ------------------------------------------------------------


@pytest.fixture
def huggingface() -> object:
    pytest.importorskip("transformers")
    pytest.importorskip("safetensors")
    from epsstar.loaders.huggingface import HuggingFaceLoader

    return HuggingFaceLoader()


@pytest.mark.parametrize("shard", ["../outside.safetensors", "/etc/hostname", "link.safetensors"])
def test_a_weights_index_pointing_outside_the_folder_is_refused(
    huggingface: object, shard: str, tmp_path: Path
) -> None:
    import json

    (tmp_path / "outside.safetensors").write_bytes(b"{}")
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "link.safetensors").symlink_to(tmp_path / "outside.safetensors")
    (folder / "config.json").write_text('{"architectures": ["GPT2LMHeadModel"]}', "utf-8")
    index = {"weight_map": {"lm_head.weight": shard}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index), "utf-8")
    with pytest.raises(InvalidInputError) as refused:
        huggingface.load(folder)  # type: ignore[attr-defined]
    message = str(refused.value)
    assert "\n" not in message
    assert "model.safetensors.index.json: each weight file's path must stay inside the " in message
    assert message.endswith(f"Found {shard!r}.")


def test_a_model_config_beyond_the_size_bound_is_refused_unread(
    huggingface: object, tmp_path: Path
) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    with (folder / "config.json").open("wb") as file:
        file.truncate(MAX_BYTES + 1)
    with pytest.raises(InputFileError, match=f"must be at most {MAX_BYTES:,} bytes"):
        huggingface.load(folder)  # type: ignore[attr-defined]


def test_a_manifest_beyond_the_size_bound_is_refused_unread(tmp_path: Path) -> None:
    manifest = tmp_path / "models.csv"
    with manifest.open("wb") as file:
        file.write(b"model,train,population\n")
        file.truncate(MAX_BYTES + 1)
    finished = run_cli(["audit-many", str(manifest)], seconds=60)
    assert finished.code == 2
    assert f"a manifest must be at most {MAX_BYTES:,} bytes" in finished.one_line()


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("reader", ["classes", "features", "privacy"])
def test_metadata_nested_deep_in_a_model_file_is_one_line(reader: str) -> None:
    from epsstar.audit.model.class_labels import classes_from_text, features_from_text
    from epsstar.audit.model.declared_privacy import privacy_from_text

    read = {"classes": classes_from_text, "features": features_from_text,
            "privacy": privacy_from_text}[reader]  # fmt: skip
    with pytest.raises(InputFileError) as refused:
        read(DEEP, Path("model.onnx"))
    assert "\n" not in str(refused.value)
    assert len(str(refused.value)) < 400


def test_a_training_record_nested_deep_beside_a_model_is_no_record(tmp_path: Path) -> None:
    from epsstar.audit.premise.tracked_bound import RECORD_NAME, tracked_bound

    (tmp_path / RECORD_NAME).write_text(DEEP, encoding="utf-8")
    assert tracked_bound(tmp_path / "model.onnx", "age") is None


@pytest.mark.parametrize(
    "name", ["tokenizer_config.json", "special_tokens_map.json", "generation_config.json"]
)
def test_a_settings_file_transformers_reads_is_bounded_first(
    huggingface: object, name: str, tmp_path: Path
) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text('{"architectures": ["GPT2LMHeadModel"]}', "utf-8")
    (folder / "model.safetensors").write_bytes(b"not read")
    (folder / name).write_text(DEEP, encoding="utf-8")
    with pytest.raises(InputFileError) as refused:
        huggingface.load(folder)  # type: ignore[attr-defined]
    assert str(refused.value) == (
        f"{folder / name}: the top level must be nested at most {MAX_DEPTH} levels deep. "
        f"Found more than {MAX_DEPTH} levels."
    )
