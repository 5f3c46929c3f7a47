"""What a TorchScript archive may run without trust: tensor math only.

A TorchScript archive is code. ``torch.jit.load`` itself runs the ``__setstate__`` method
of any scripted class that defines one, and a module's methods may call operators that
read or write files (``aten::from_file`` maps a file into memory and creates it,
``aten::save`` writes one). Without trust (``--trust-model``) the loader therefore checks
the archive in two steps, before anything of it runs:

1. Before loading, the zip is read entry by entry, as torch's reader would find them:
   two entries whose names differ at most in ASCII case are refused (torch's zip reader
   matches names without regard to case and takes the first of two equal names, Python's
   ``zipfile`` the last, so a scan by name could read other code than torch runs); then
   no entry whose name ends in ``.py`` (any case: the serialised code, ``code/**/*.py``)
   may mention ``__setstate__``, which would run during ``torch.jit.load``, before step 2.
2. After loading, before any call: every method of every submodule is inlined
   (``torch._C._jit_pass_inline``, which resolves ``prim::CallFunction`` and
   ``prim::CallMethod`` on known types into their bodies) and every node, including those
   of nested blocks and forked subgraphs (inlined in turn), must pass the allowlist below.
   Operators whose results are never used are not in the graph (TorchScript removes them
   when it compiles), so they cannot run either.

The rule (an allowlist, so that an operator unknown today is refused, not allowed):

* the namespaces of pure tensor computation are allowed: ``aten``, ``prim`` (constants,
  control flow, attribute access, lists, tuples, ``prim::Print``), ``quantized``,
  ``_quantized`` and ``prepacked``; any other namespace (custom operators, which may do
  anything) is refused;
* within them, operators that touch files or the process are refused: every operator
  whose schema takes a ``filename`` (``aten::from_file``, ``aten::save``), those that
  reseed the process's random generators (``aten::manual_seed``, ``aten::seed``) or change
  process-wide settings (``aten::_cufft_set_plan_cache_max_size``), and ``prim::PythonOp``;
* a call that inlining could not resolve (``prim::CallFunction``, ``prim::CallMethod`` on
  a class that is not a module) is refused, as its body cannot be read; calls on
  submodules are allowed, since every method of every submodule is checked.
"""

from __future__ import annotations

import contextlib
import re
import zipfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any, Final

from epsstar.exceptions import InputFileError, InvalidInputError

__all__ = [
    "ALLOWED_NAMESPACES",
    "check_archive_code",
    "check_module",
    "read_as_archive",
    "refused_operators",
]

ALLOWED_NAMESPACES: Final = frozenset({"aten", "prim", "quantized", "_quantized", "prepacked"})
"""Operator namespaces of pure tensor computation."""

_PROCESS_OPERATORS: Final = frozenset(
    {
        "aten::manual_seed",
        "aten::seed",
        "aten::_cufft_set_plan_cache_max_size",
        "prim::PythonOp",
    }
)
_UNRESOLVED_CALLS: Final = frozenset({"prim::CallFunction"})
_SETSTATE = re.compile(rb"__setstate__")
TRUST_FLAG: Final = "--trust-model"


@cache
def refused_operators(torch: Any) -> frozenset[str]:
    """The allowed-namespace operators that touch files or the process (see the module)."""
    with_filename = {
        schema.name
        for schema in torch._C._jit_get_all_schemas()
        if any(argument.name == "filename" for argument in schema.arguments)
    }
    return frozenset(with_filename | _PROCESS_OPERATORS)


@contextlib.contextmanager
def read_as_archive(path: Path, what: str) -> Iterator[None]:
    """Errors of reading ``path`` as a zip archive (torch's archives are zip files) turned
    into the one-line refusal "the model file must be ``what``"; a refusal raised while
    checking the archive passes through as it is."""
    try:
        yield
    except InvalidInputError:
        raise
    except (zipfile.BadZipFile, OSError, NotImplementedError, RuntimeError, ValueError) as error:
        raise InputFileError(
            f"the model file must be {what}. Found {path} ({type(error).__name__}: {error})."
        ) from None


def _refusal(path: Path, what: str, found: str) -> InvalidInputError:
    return InvalidInputError(
        f"the TorchScript model {path} must not touch files or the process to be loaded "
        f"without {TRUST_FLAG}; it {what}. Load it with {TRUST_FLAG} only if you trust its "
        f"source. Found {found}."
    )


def _duplicate(names: list[str]) -> str | None:
    """The first name that equals an earlier one up to ASCII case, if any."""
    seen: set[str] = set()
    for name in names:
        folded = name.lower()
        if folded in seen:
            return name
        seen.add(folded)
    return None


def check_archive_code(path: Path) -> None:
    """Step 1: refuse duplicate entries, and code that mentions ``__setstate__``."""
    what = "a TorchScript archive (torch.jit.save, a zip file that Python's zipfile reads)"
    with read_as_archive(path, what), zipfile.ZipFile(path) as archive:
        entries = archive.infolist()
        repeated = _duplicate([entry.filename for entry in entries])
        if repeated is not None:
            raise _refusal(
                path,
                "holds two zip entries of the same name (up to case), of which torch and "
                "a scan could read different ones",
                f"{repeated!r} twice",
            )
        for entry in entries:
            if not entry.filename.lower().endswith(".py"):
                continue
            if _SETSTATE.search(archive.read(entry)):
                raise _refusal(
                    path,
                    "defines __setstate__, which torch.jit.load runs before the model "
                    "can be checked",
                    f"__setstate__ in {entry.filename}",
                )


def _inlined(graph: Any, torch: Any) -> Any:
    """A copy of ``graph`` with the functions and methods it calls inlined."""
    copy = graph.copy()
    torch._C._jit_pass_inline(copy)
    return copy


def _nodes(block: Any, torch: Any) -> Iterator[Any]:
    """Every node of a graph or block, with those of nested blocks and of subgraphs
    (``prim::fork``'s, inlined in turn)."""
    for node in block.nodes():
        yield node
        for inner in node.blocks():
            yield from _nodes(inner, torch)
        for attribute in node.attributeNames():
            if node.kindOf(attribute) == "g":
                yield from _nodes(_inlined(node.g(attribute), torch), torch)


def _refused(node: Any, refused: frozenset[str]) -> bool:
    kind = str(node.kind())
    if kind.split("::", 1)[0] not in ALLOWED_NAMESPACES or kind in refused:
        return True
    if kind in _UNRESOLVED_CALLS:
        return True
    if kind == "prim::CallMethod":
        receiver = next(iter(node.inputs())).type()
        return not (hasattr(receiver, "is_module") and receiver.is_module())
    return False


def check_module(path: Path, module: Any, torch: Any) -> None:
    """Step 2: refuse a loaded module any of whose methods runs a refused operator."""
    refused = refused_operators(torch)
    for name, submodule in module.named_modules():
        scripted = submodule._c
        for method_name in scripted._method_names():
            graph = _inlined(scripted._get_method(method_name).graph, torch)
            for node in _nodes(graph, torch):
                if _refused(node, refused):
                    kind = str(node.kind())
                    where = f"{name}.{method_name}" if name else method_name
                    raise _refusal(path, f"calls {kind} (in {where})", kind)
