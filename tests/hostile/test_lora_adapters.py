"""Hostile LoRA adapters: ``rank_pattern``/``alpha_pattern`` keys that backtrack without end
or do not compile, and matrices whose rank disagrees with the configuration. Each is one
line naming the key or the module (and both ranks), within a deadline."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from epsstar.exceptions import InvalidInputError
from epsstar.loaders.huggingface.lora import lora_settings, merge_lora
from epsstar.loaders.huggingface.patterns import MAX_PATTERN_LENGTH, PATTERN_SECONDS
from tests.hostile.bounded import ROOT

torch = pytest.importorskip("torch")

#: A module name as long as real ones, and a key that backtracks on it without end: a
#: repeat of a repeat tries each of the 2^45 ways to cut the 46-character name into runs
#: before it fails on the "!" no name holds (a key whose steps grow more slowly, like the
#: Fibonacci numbers of one- and two-letter parts, ends here within the 10 s limit).
MODULE = "model.layers.0.self_attention.query_key_value"
CATASTROPHIC = r"([\w.]+)+!"


class _Model(torch.nn.Module):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        inner = torch.nn.ModuleDict({"query_key_value": torch.nn.Linear(6, 5)})
        self.model = torch.nn.ModuleDict(
            {"layers": torch.nn.ModuleList([torch.nn.ModuleDict({"self_attention": inner})])}
        )


def _config(**changes: Any) -> dict[str, Any]:
    return {"peft_type": "LORA", "r": 4, "lora_alpha": 8, **changes}


def _weights(rank_a: int = 4, rank_b: int = 4) -> dict[str, Any]:
    prefix = f"base_model.model.{MODULE}"
    return {
        f"{prefix}.lora_A.weight": torch.ones(rank_a, 6),
        f"{prefix}.lora_B.weight": torch.ones(5, rank_b),
    }


def test_a_catastrophic_pattern_is_one_line_within_the_time_limit() -> None:
    # in a child process: a regression backtracks without end, and the deadline fails it
    code = (
        "from tests.hostile.test_lora_adapters import _Model, _config, _weights, CATASTROPHIC\n"
        "from epsstar.loaders.huggingface.lora import lora_settings, merge_lora\n"
        "from epsstar.exceptions import InvalidInputError\n"
        "settings = lora_settings(_config(rank_pattern={CATASTROPHIC: 4}))\n"
        "try:\n"
        "    merge_lora(_Model(), _weights(), settings)\n"
        "except InvalidInputError as error:\n"
        "    print(error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
        cwd=ROOT, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.splitlines()
    assert line == (
        f"adapter_config.json: the rank_pattern keys must match the module names within "
        f"{PATTERN_SECONDS:g} s (a regular expression that backtracks without end does not). "
        f"Found {CATASTROPHIC!r}."
    )


@pytest.mark.parametrize("field", ["rank_pattern", "alpha_pattern"])
@pytest.mark.parametrize("key", ["(", "a{2,1}", "*x", "(?P<q"])
def test_a_pattern_that_does_not_compile_is_one_line(field: str, key: str) -> None:
    with pytest.raises(InvalidInputError) as refused:
        lora_settings(_config(**{field: {key: 2}}))
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(f"adapter_config.json: each {field} key must be a regular exp")
    assert f"Found {key!r} (" in message


def test_a_pattern_too_long_is_refused_before_it_compiles() -> None:
    with pytest.raises(InvalidInputError, match=f"at most {MAX_PATTERN_LENGTH} characters"):
        lora_settings(_config(rank_pattern={"a" * (MAX_PATTERN_LENGTH + 1): 2}))


def test_patterns_match_as_peft_matches_them() -> None:
    settings = lora_settings(_config(rank_pattern={"query_key_value": 2, "q.*": 1},
                                     alpha_pattern={r"layers\.0\..*": 6}))  # fmt: skip
    other = "model.layers.0.other_query_key_value"  # not after a dot
    assert settings.per_module([MODULE, other]) == {MODULE: (2, 3.0), other: (4, 1.5)}


def test_repeats_nested_deep_are_matched_within_the_deadline() -> None:
    # ``regex`` would expand these at compile time for minutes; ``re`` does not
    settings = lora_settings(_config(rank_pattern={"((a{1000}){1000}){1000}": 2}))
    assert settings.per_module([MODULE]) == {MODULE: (4, 2.0)}


@pytest.mark.parametrize(
    ("config", "ranks", "found"),
    [
        (_config(r=8), (4, 4), "rank 4 in its A matrix (4, 6) and 4 in its B matrix (5, 4)"),
        (_config(), (4, 3), "rank 4 in its A matrix (4, 6) and 3 in its B matrix (5, 3)"),
        (_config(rank_pattern={"query_key_value": 2}), (4, 4), "rank 4 in its A matrix"),
    ],
)
def test_ranks_that_disagree_name_the_module_and_both_ranks(
    config: dict[str, Any], ranks: tuple[int, int], found: str
) -> None:
    with pytest.raises(InvalidInputError) as refused:
        merge_lora(_Model(), _weights(*ranks), lora_settings(config))
    message = str(refused.value)
    assert "\n" not in message
    assert f"module {MODULE!r} must have the rank adapter_config.json gives it" in message
    assert found in message


def test_an_adapter_of_the_configured_rank_merges() -> None:
    model = _Model()
    layer = model.model["layers"][0]["self_attention"]["query_key_value"]
    before = layer.weight.detach().clone()
    merge_lora(model, _weights(), lora_settings(_config()))
    assert torch.allclose(layer.weight, before + 2.0 * 4)  # s = 8 / 4, (B A) = 4 everywhere
