"""Which ``rank_pattern`` or ``alpha_pattern`` key names each module of a LoRA adapter,
decided as PEFT decides it, within a deadline.

PEFT reads each key as a regular expression and gives a module the value of the first key
for which ``re.match(rf"(.*\\.)?({key})$", module)`` holds (``get_pattern_key`` in
``peft.utils.other``): the module's whole name, or its ending after a dot. A key is the
adapter author's text, so it may backtrack without end (``(\\w|\\w\\w|\\.)*0`` on a 45-letter
module name tries Fibonacci-many splits), and Python's ``re`` has no time limit. The keys
are therefore checked here (each at most :data:`MAX_PATTERN_LENGTH` characters, compiled by
``re`` as PEFT compiles it: ``re`` compiles without expanding repeats) and matched against
every module in a child Python process that is killed after :data:`PATTERN_SECONDS`; the
key it was matching then is named in the one-line refusal. The ``regex`` package's own
time limit was not used: its compiler expands nested counted repeats
(``((a{1000}){1000}){1000}``) beyond any time limit before matching starts.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Sequence
from typing import Final

from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.files.input_bounds import shown

__all__ = ["MAX_PATTERN_LENGTH", "PATTERN_SECONDS", "check_keys", "first_keys"]

#: Longest time the keys of one field may take to match every module, in seconds.
PATTERN_SECONDS: Final = 10.0
#: Longest key, in characters.
MAX_PATTERN_LENGTH: Final = 1000

#: The child: reads the expressions and module names (JSON on standard input) and, per
#: expression, prints its index before matching, then the indices of the modules it names.
_MATCHER: Final = """
import json, re, sys
job = json.load(sys.stdin)
for index, expression in enumerate(job["expressions"]):
    print(index, flush=True)
    compiled = re.compile(expression)
    print(json.dumps([i for i, name in enumerate(job["modules"]) if compiled.match(name)]),
          flush=True)
"""


def _expression(key: str) -> str:
    """PEFT's expression for a key (the module docstring)."""
    return rf"(.*\.)?({key})$"


def check_keys(keys: Sequence[str], field: str) -> None:
    """Each key short enough and compiling as PEFT compiles it, or a one-line refusal."""
    for key in keys:
        if len(key) > MAX_PATTERN_LENGTH:
            raise InvalidInputError(
                f"adapter_config.json: each {field} key must be at most {MAX_PATTERN_LENGTH} "
                f"characters. Found {shown(key)} ({len(key):,})."
            )
        try:
            re.compile(_expression(key))
        except (re.error, RecursionError, OverflowError) as error:
            raise InvalidInputError(
                f"adapter_config.json: each {field} key must be a regular expression (PEFT "
                f"matches module names with it). Found {shown(key)} ({error})."
            ) from None


def first_keys(keys: Sequence[str], modules: Sequence[str], field: str) -> dict[str, str]:
    """For each module that a key names, the first such key (PEFT's rule)."""
    if not keys or not modules:
        return {}
    job = json.dumps({"expressions": [_expression(key) for key in keys], "modules": modules})
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-c", _MATCHER],
            input=job.encode(),
            capture_output=True,
            timeout=PATTERN_SECONDS,
            check=True,
        )
    except subprocess.TimeoutExpired as expired:
        lines = (expired.stdout or b"").decode().split()
        started = [int(line) for line in lines if line.isdigit()]
        key = keys[started[-1]] if started else keys[0]
        raise InvalidInputError(
            f"adapter_config.json: the {field} keys must match the module names within "
            f"{PATTERN_SECONDS:g} s (a regular expression that backtracks without end does "
            f"not). Found {shown(key)}."
        ) from None
    except (subprocess.CalledProcessError, OSError) as error:
        raise InvalidInputError(
            f"adapter_config.json: the {field} keys could not be matched against the module "
            f"names ({type(error).__name__}). Found {shown(list(keys))}."
        ) from None
    lines = done.stdout.decode().splitlines()
    named: dict[str, str] = {}
    for index in range(len(keys)):
        for module in json.loads(lines[2 * index + 1]):
            named.setdefault(modules[module], keys[index])
    return named
