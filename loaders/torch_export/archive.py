"""What ``torch.export.load`` deserialises from a ``.pt2`` archive, checked before it loads.

``torch.export.load`` reads two layouts, and may read both in one call: the current one
(written since torch 2.8: ``load_pt2`` reads the records under the archive's root folder with
torch's own zip reader) and, when that raises ``RuntimeError``, the older one (flat entry
names read with Python's ``zipfile``). By the loader's own rules (``torch/export/__init__.py``,
``torch/export/pt2_archive/_package.py``, ``torch/_export/serde/serialize.py``), these reach
code that can import or call:

* current layout, for every program ``models/<name>.json``: its sample inputs
  ``data/sample_inputs/<name>.pt`` and the single-file weights and constants
  ``data/weights/<name>.pt``, ``data/constants/<name>.pt`` are read by ``torch.load`` with
  ``weights_only=True`` and, when that fails, again with ``weights_only=False`` (torch 2.9
  reads them with ``weights_only=False`` at once); each payload of
  ``data/weights/<name>_weights_config.json`` and ``data/constants/<name>_constants_config.json``
  marked ``use_pickle`` is read with ``weights_only=False``; a constant stored as a custom
  object (``custom_obj_*``, torch's own unpickler) or an opaque one (``opaque_obj_*``,
  ``pickle.loads``) is unpickled; anything under ``data/aotinductor/`` is a compiled
  library that loading maps into the process;
* older layout: ``serialized_state_dict.json`` or ``.pt``, ``serialized_constants.json`` or
  ``.pt`` and ``serialized_example_inputs.pt`` are read by ``torch.load`` as in the
  current layout;
* both: every symbolic expression of the program (an ``expr_str`` of ``models/<name>.json``
  or ``serialized_exported_program.json``) is parsed by ``sympy.sympify``, which evaluates
  it as Python.

Without trust (``--trust-model``), each entry torch would pass to ``torch.load`` must load
here with ``weights_only=True``: then torch's first attempt succeeds and it never falls back,
and an entry torch reads with ``weights_only=False`` (a ``use_pickle`` payload, and with torch
2.9 every entry) that torch's weights-only unpickler accepts imports and calls nothing beyond
what that unpickler allows. Custom and opaque objects and compiled libraries are refused, and
every expression, parsed as Python (:mod:`ast`) without being run, must be
arithmetic: integers of at most 40 digits, shape symbols (``s0``, ``Symbol('s0', ...)``),
operators, comparisons and calls of :data:`EXPRESSION_FUNCTIONS` with constant keywords,
a power only of a symbol by an integer from -99 to 99, and text only as a symbol's name or a
float's digits; so no expression evaluates to a number much longer than itself.

Entries are read with the reader torch reads them with, and for the older layout every zip
entry of a name torch reads is checked, so that duplicate names cannot hide one.
"""

from __future__ import annotations

import ast
import io
import json
import os
import re
import warnings
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.files.input_bounds import shown

from ..torchscript.scan import TRUST_FLAG, read_as_archive

__all__ = [
    "EXPRESSION_FUNCTIONS",
    "check_export_archive",
    "expression_is_arithmetic",
    "refusal",
]

_OLDER_LAYOUT_PICKLES: Final = frozenset(
    {
        "serialized_state_dict.json",
        "serialized_state_dict.pt",
        "serialized_constants.json",
        "serialized_constants.pt",
        "serialized_example_inputs.pt",
    }
)
_OLDER_LAYOUT_PROGRAM: Final = "serialized_exported_program.json"

EXPRESSION_FUNCTIONS: Final = frozenset(
    {
        # sympy's, as torch writes shape expressions (sympy.srepr)
        "Symbol", "Integer", "Rational", "Float", "Add", "Mul", "Pow", "Max", "Min", "Mod",
        "floor", "ceiling", "Abs", "Piecewise", "ExprCondPair", "Eq", "Ne", "Lt", "Le", "Gt",
        "Ge", "Equality", "Unequality", "StrictLessThan", "StrictGreaterThan", "LessThan",
        "GreaterThan", "And", "Or", "Not",
        # torch.utils._sympy's, without those that raise to or shift by a power
        "FloorDiv", "ModularIndexing", "Where", "PythonMod", "CleanDiv", "CeilDiv",
        "IntTrueDiv", "FloatTrueDiv", "CeilToInt", "FloorToInt", "TruncToInt", "TruncToFloat",
        "RoundToInt", "ToFloat", "Identity", "IsNonOverlappingAndDenseIndicator",
    }
)  # fmt: skip
"""The functions a program's symbolic expression may call."""

_CONSTANTS: Final = frozenset({"true", "false", "True", "False", "oo", "zoo", "nan", "int_oo"})
_SYMBOL: Final = re.compile(r"[a-z]+[0-9]+")
_SYMBOL_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")
_DECIMAL: Final = re.compile(r"[-+]?[0-9]{1,40}(?:\.[0-9]{0,40})?(?:[eE][-+]?[0-9]{1,3})?")
_MAX_DIGITS: Final = 40
_MAX_EXPONENT: Final = 99
_MAX_LENGTH: Final = 10_000
_ARITHMETIC: Final = (
    ast.Expression, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.keyword,
    ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.USub, ast.UAdd, ast.Not,
    ast.And, ast.Or, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Load,
)  # fmt: skip


def refusal(path: Path, what: str, found: str) -> InvalidInputError:
    """The one-line refusal of an archive that needs trust to be loaded."""
    return InvalidInputError(
        f"the torch.export program {path} must hold tensors and tensor operators only to be "
        f"loaded without {TRUST_FLAG}; it {what}. Load it with {TRUST_FLAG} only if you "
        f"trust its source. Found {found}."
    )


def _is_symbol(node: ast.AST) -> bool:
    """A shape symbol: ``s0``, or ``Symbol('s0', ...)`` as ``sympy.srepr`` writes it."""
    if isinstance(node, ast.Name):
        return bool(_SYMBOL.fullmatch(node.id))
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Symbol"
    )


def _is_small_exponent(node: ast.AST) -> bool:
    """A literal integer from -99 to 99 (``2``, ``-1``, ``Integer(-1)``)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Integer":
        node = node.args[0] if len(node.args) == 1 else node
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return (
        isinstance(node, ast.Constant)
        and type(node.value) is int
        and 0 <= node.value <= _MAX_EXPONENT
    )


def _allowed(node: ast.AST, parent: ast.AST | None) -> bool:
    """One node of a parsed expression (see the module docstring)."""
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, str):
            call = (
                parent.func.id
                if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name)
                else ""
            )
            pattern = {"Symbol": _SYMBOL_NAME, "Float": _DECIMAL}.get(call)
            return pattern is not None and bool(pattern.fullmatch(value))
        if isinstance(value, int) and not isinstance(value, bool):
            return len(str(abs(value))) <= _MAX_DIGITS
        return isinstance(value, (bool, float))
    if isinstance(node, ast.Name):
        return node.id in _CONSTANTS or node.id in EXPRESSION_FUNCTIONS or _is_symbol(node)
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in EXPRESSION_FUNCTIONS:
            return False
        if node.func.id == "Pow":
            return (
                len(node.args) == 2
                and _is_symbol(node.args[0])
                and _is_small_exponent(node.args[1])
            )
        return all(
            isinstance(keyword.value, ast.Constant) and keyword.arg is not None
            for keyword in node.keywords
        )
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        return _is_symbol(node.left) and _is_small_exponent(node.right)
    return isinstance(node, _ARITHMETIC)


def expression_is_arithmetic(text: str) -> bool:
    """Whether sympy can parse ``text`` without running anything but arithmetic on numbers
    of at most a few dozen digits and shape symbols raised to small powers."""
    if len(text) > _MAX_LENGTH:
        return False
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    stack: list[tuple[ast.AST, ast.AST | None]] = [(tree, None)]
    while stack:
        node, parent = stack.pop()
        if not _allowed(node, parent):
            return False
        stack.extend((child, node) for child in ast.iter_child_nodes(node))
    return True


def _expressions(document: Any) -> Iterator[str]:
    """Every ``expr_str`` string of a parsed program, walked without recursion."""
    stack = [document]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                if key == "expr_str" and isinstance(item, str):
                    yield item
                else:
                    stack.append(item)
        elif isinstance(value, list):
            stack.extend(value)


def _check_program_json(path: Path, name: str, data: bytes) -> None:
    try:
        document = json.loads(data)
    except (ValueError, RecursionError):
        return  # torch fails on it as well, before any expression is parsed
    for expression in _expressions(document):
        if not expression_is_arithmetic(expression):
            raise refusal(
                path,
                f"holds a symbolic expression that sympy would evaluate as Python ({name})",
                shown(expression, 80),
            )


def _check_unpickled(path: Path, name: str, data: bytes, torch: Any) -> None:
    """``data`` must load with ``weights_only=True`` (torch reads an empty entry as ``{}``)."""
    if not data:
        return
    try:
        with warnings.catch_warnings():  # torch's notes on the pickle's protocol
            warnings.simplefilter("ignore")
            torch.load(io.BytesIO(data), weights_only=True)
    except Exception:
        raise refusal(
            path, "holds a pickle that weights_only loading refuses", repr(name)
        ) from None


class _Records:
    """The current layout's records, read with torch's own zip reader."""

    def __init__(self, path: Path, torch: Any) -> None:
        self._reader = torch._C.PyTorchFileReader(str(path))
        self.names = list(self._reader.get_all_records())

    def read(self, name: str) -> bytes | None:
        """The record torch reads under ``name``; ``None`` when torch would find none."""
        try:
            return bytes(self._reader.get_record(name))
        except RuntimeError:
            return None


def _payloads(
    path: Path, records: _Records, config_name: str, folder: str
) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """The entries of a weights or constants config: its payload's record as torch names
    it, its stored name and its meta."""
    text = records.read(config_name)
    if text is None:
        return
    try:
        config = json.loads(text).get("config", {})
        entries = list(config.items())
    except (ValueError, RecursionError, AttributeError):
        raise refusal(path, "holds a payload config that is not JSON", repr(config_name)) from None
    for key, meta in entries:
        if not isinstance(meta, dict) or not isinstance(meta.get("path_name", ""), str):
            raise refusal(path, "holds a payload config torch does not write", repr(key))
        stored = meta.get("path_name", "")
        yield os.path.join(folder, stored), stored, meta


def _check_current_layout(path: Path, torch: Any) -> None:
    from torch.export.pt2_archive import constants as layout

    try:
        records = _Records(path, torch)
    except RuntimeError:
        return  # torch's reader cannot open it: torch goes on to the older layout
    aoti = [name for name in records.names if name.startswith(layout.AOTINDUCTOR_DIR)]
    if aoti:
        raise refusal(path, "holds a compiled library that loading would run", repr(aoti[0]))
    prefix, suffix = layout.MODELS_FILENAME_FORMAT.split("{}")
    for program in [name for name in records.names if name.startswith(layout.MODELS_DIR)]:
        model = program[len(prefix) : -len(suffix)]
        _check_program_json(path, program, records.read(program) or b"")
        for single in (
            layout.SAMPLE_INPUTS_FILENAME_FORMAT.format(model),
            f"{layout.WEIGHTS_DIR}{model}.pt",
            f"{layout.CONSTANTS_DIR}{model}.pt",
        ):
            data = records.read(single)
            if data is not None:
                _check_unpickled(path, single, data, torch)
        weights = layout.WEIGHTS_CONFIG_FILENAME_FORMAT.format(model)
        for payload, _, meta in _payloads(path, records, weights, layout.WEIGHTS_DIR):
            if meta.get("use_pickle"):
                _check_unpickled(path, payload, records.read(payload) or b"", torch)
        constants = layout.CONSTANTS_CONFIG_FILENAME_FORMAT.format(model)
        for payload, stored, meta in _payloads(path, records, constants, layout.CONSTANTS_DIR):
            if stored.startswith(layout.TENSOR_CONSTANT_FILENAME_PREFIX):
                if meta.get("use_pickle"):
                    _check_unpickled(path, payload, records.read(payload) or b"", torch)
            else:
                raise refusal(path, "stores a constant that is not a tensor", repr(payload))


def _check_older_layout(path: Path, torch: Any) -> None:
    with zipfile.ZipFile(path) as archive:
        for entry in archive.infolist():
            if entry.filename in _OLDER_LAYOUT_PICKLES:
                _check_unpickled(path, entry.filename, archive.read(entry), torch)
            elif entry.filename == _OLDER_LAYOUT_PROGRAM:
                _check_program_json(path, entry.filename, archive.read(entry))


def check_export_archive(path: Path, torch: Any) -> None:
    """Refuse an archive whose loading could run code (see the module docstring)."""
    with read_as_archive(path, "a torch.export archive (torch.export.save, a zip file)"):
        _check_current_layout(path, torch)
        _check_older_layout(path, torch)
