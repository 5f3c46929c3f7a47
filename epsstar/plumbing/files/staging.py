"""The output files of one run, written as a unit: all of them or none.

A command names every file and folder it will write before it starts working
(:meth:`Outputs.file`, :meth:`Outputs.folder`). Each is checked then: a file's
path must not be a folder, a device or another output of the run, nor one of the
run's inputs (never overwrite the data being audited); its name must fit the
file system; missing parent folders are created. Each output is given a
temporary in its target folder (a hidden ``.NAME.XXXXXXXX.tmp`` file, or a hidden
``.epsstar-XXXXXXXX`` folder for a folder of files), which proves the folder
writable before the work starts.

The command writes every output into its temporary, then :meth:`Outputs.commit`
renames them all into place (the same folder, so each rename is atomic); a
Ctrl-C during those renames is acted on once they are done, and a rename that
fails undoes the others. Until the commit no file with a final name exists; on
any error or interrupt before it, used as a context manager, the temporaries are
removed, and so are the folders created for them. Every problem is an
:class:`~epsstar.exceptions.InputFileError` with a one-line message that names
the option and ends with the path given.

A file written on its own, outside a run's outputs (a work folder's state, a sweep's
record, an exported model), goes through :func:`atomic_write_bytes`: a temporary in its
folder, then :func:`os.replace`, so a reader never sees half a file. JSON is written as
:func:`json_text` gives it, in both.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import signal
import stat
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from epsstar.exceptions import InputFileError

__all__ = [
    "Outputs",
    "StagedFile",
    "StagedFolder",
    "atomic_write_bytes",
    "atomic_write_json",
    "check_output_folder",
    "input_files",
    "interrupts_deferred",
    "json_text",
    "refuse_replacing_inputs",
]

#: Characters of a target's name kept in its temporary's name (the rest is dropped so that
#: the temporary of a long name still fits the file system's limit).
_NAME_IN_TEMPORARY = 32
#: The longest file name when the file system does not say (POSIX's NAME_MAX on Linux).
_DEFAULT_NAME_MAX = 255

PathLike = str | os.PathLike[str]


def _reason(error: OSError) -> str:
    return error.strerror or str(error)


@contextlib.contextmanager
def _reachable(option: str, shown: str) -> Iterator[None]:
    """Any error of the file system while an output location is checked (a folder on the way
    that may not be searched: ``Path.exists`` raises then) as the option's one-line error."""
    try:
        yield
    except OSError as error:
        where = os.fsdecode(error.filename) if error.filename is not None else shown
        raise InputFileError(
            f"{option}: cannot reach {where!r} ({_reason(error)}). Found {shown!r}."
        ) from None


def _name_max(folder: Path) -> int:
    """The longest file name the file system of ``folder`` (or its nearest parent) takes."""
    for candidate in (folder, *folder.parents):
        if candidate.is_dir():
            with contextlib.suppress(OSError, ValueError, AttributeError):
                return int(os.pathconf(candidate, "PC_NAME_MAX"))
            break
    return _DEFAULT_NAME_MAX


def _same_file(a: Path, b: Path) -> bool:
    """``a`` and ``b`` are one file: the same path, or one file under two names (hard links)."""
    if a == b:
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _file_mode(target: Path) -> int:
    """The permissions of the file ``target`` replaces, or those the umask gives a new file."""
    with contextlib.suppress(OSError):
        return stat.S_IMODE(target.stat().st_mode)
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` all at once: a temporary file, then :func:`os.replace`."""
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    try:
        handle, temporary = tempfile.mkstemp(
            prefix=f".{target.name}.", suffix=".tmp", dir=directory
        )
    except OSError as error:
        raise InputFileError(f"cannot write {str(target)!r}: {error.strerror or error}.") from None
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, target)
    except BaseException as error:
        # Whatever stopped the write (a full disk, Ctrl-C), leave no temporary behind.
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(error, OSError):
            message = error.strerror or str(error)
            raise InputFileError(f"cannot write {str(target)!r}: {message}.") from None
        raise


def json_text(payload: Any) -> str:
    """``payload`` as the commands write JSON: indented, strict (no NaN), a final newline."""
    return json.dumps(payload, indent=2, allow_nan=False) + "\n"


def atomic_write_json(path: str | os.PathLike[str], payload: Any) -> None:
    """Write ``payload`` as :func:`json_text` atomically."""
    atomic_write_bytes(path, json_text(payload).encode("utf-8"))


@contextlib.contextmanager
def _interrupts_deferred() -> Iterator[None]:
    """A Ctrl-C while the block runs is raised once it has finished (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda number, _frame: received.append(number))
    try:
        yield
    finally:
        signal.signal(
            signal.SIGINT, previous if previous is not None else signal.default_int_handler
        )
    if received:
        raise KeyboardInterrupt


#: A Ctrl-C while the block runs is raised once it has finished (main thread only).
interrupts_deferred = _interrupts_deferred


def refuse_replacing_inputs(
    outputs: Iterable[tuple[str, PathLike]], inputs: Iterable[tuple[str, PathLike]]
) -> None:
    """Refuse an output (``(option, path)``) that is one of the files the ``inputs`` stand
    for (:func:`input_files`): the same path after links, or the same file (hard links).
    Linear in outputs and inputs, for runs that write many files (a sweep)."""
    files = [pair for name, path in inputs for pair in input_files(name, path)]
    by_path = {file: name for name, file in files}
    by_inode: dict[tuple[int, int], str] = {}
    for option, file in files:
        with contextlib.suppress(OSError):
            found = os.stat(file)
            by_inode.setdefault((found.st_dev, found.st_ino), option)
    for option, path in outputs:
        real = Path(os.path.realpath(path))
        name: str | None = by_path.get(real)
        if name is None and by_inode:
            with contextlib.suppress(OSError):
                found = os.stat(real)
                name = by_inode.get((found.st_dev, found.st_ino))
        if name is not None:
            raise InputFileError(
                f"{option} would overwrite {name}, an input of this run. Found {os.fspath(path)!r}."
            )


def check_output_folder(option: str, path: PathLike) -> Path:
    """Check the output folder ``path`` of ``option`` that a command makes or fills itself
    (a model folder, a sweep), before its work: it is a folder or does not exist yet, every
    folder on the way can be searched, it can be listed if it exists, and the nearest
    folder that exists takes a new entry (tried with a hidden folder, removed at once).
    Nothing is left behind; ``Path(path)`` is returned."""
    shown = os.fspath(path)
    target = _resolve(option, shown, "folder")
    with _reachable(option, shown):
        existing = target
        for existing in (target, *target.parents):
            if existing.is_dir():
                break
            if existing.exists() or existing.is_symlink():
                if existing == target:
                    raise InputFileError(
                        f"{option} must name a folder, not a file. Found {shown!r}."
                    )
                raise InputFileError(
                    f"{option}: {str(existing)!r} is a file, not a folder. Found {shown!r}."
                )
        if existing == target:
            with os.scandir(target):  # a folder it may not list
                pass
        try:
            os.rmdir(tempfile.mkdtemp(prefix=".epsstar-", dir=existing))
        except OSError as error:
            raise _unwritable(option, shown, existing, error) from None
    return Path(shown)


def _backup(target: Path) -> Path | None:
    """A second name (hard link) for the file ``target``, so that replacing it can be undone."""
    if not target.is_file():
        return None
    for _ in range(8):
        backup = target.with_name(f".{target.name[:_NAME_IN_TEMPORARY]}.{os.urandom(4).hex()}.bak")
        try:
            os.link(target, backup)
        except FileExistsError:
            continue
        except OSError:  # no hard links on this file system: the replacement cannot be undone
            return None
        return backup
    return None


@dataclass(frozen=True, slots=True)
class StagedFile:
    """One output file: written to ``temporary`` first, renamed to ``target`` by the commit."""

    option: str
    #: The path as it was given (messages and summaries show it).
    shown: str
    #: Where the file ends up: absolute, with symbolic links followed.
    target: Path
    temporary: Path

    def _error(self, reason: str) -> InputFileError:
        return InputFileError(f"{self.option}: cannot write ({reason}). Found {self.shown!r}.")

    def write_bytes(self, data: bytes) -> None:
        """Write ``data`` to the temporary (flushed to disk)."""
        try:
            with open(self.temporary, "wb") as stream:
                stream.write(data)
                stream.flush()
                os.fsync(stream.fileno())
        except OSError as error:
            raise self._error(_reason(error)) from None

    def write_json(self, payload: Any) -> None:
        """Write ``payload`` as indented, strict JSON (no NaN)."""
        self.write_bytes(json_text(payload).encode("utf-8"))

    def write_with(self, writer: Callable[[Path], object]) -> None:
        """Let ``writer(path)`` (a renderer) write the temporary; its messages name this output."""
        try:
            writer(self.temporary)
        except OSError as error:
            raise self._error(_reason(error)) from None
        except InputFileError as error:
            message = str(error).replace(str(self.temporary), self.shown)
            raise InputFileError(f"{self.option}: {message}") from None


@dataclass(frozen=True, slots=True)
class StagedFolder:
    """A folder of output files named ``names``: written in ``staging``, moved by the commit."""

    option: str
    shown: str
    target: Path
    #: A hidden folder inside ``target`` where the files are written first.
    staging: Path
    names: tuple[str, ...]

    def path(self, name: str) -> Path:
        """Where the file ``name`` ends up, spelled from the path given."""
        return Path(self.shown) / name


_GLOB_CHARACTERS = frozenset("*?[")


def input_files(option: str, path: PathLike) -> list[tuple[str, Path]]:
    """The local files an input given as ``path`` stands for, as ``(option, file)``: the file
    itself, every file under a folder (a partitioned data set, a model folder), every match
    of a glob. A remote URL stands for no local file."""
    text = os.fspath(path)
    if "://" in text and not text.startswith("file://"):
        return []
    text = text.removeprefix("file://")
    try:
        if os.path.isdir(text):
            found = _files_under(text)
        elif not os.path.lexists(text) and _GLOB_CHARACTERS & set(text):
            found = [Path(match) for match in glob.glob(text, recursive=True)]
            found = [
                file
                for match in found
                for _, file in (input_files(option, match) if match.is_dir() else [(option, match)])
            ]
        else:
            found = [Path(text)]
        return [(option, Path(os.path.realpath(file))) for file in found]
    except (ValueError, OSError):  # a path no file can have
        return []


def _files_under(folder: str) -> list[Path]:
    """Every file under ``folder``, through linked folders, each folder visited once."""
    seen: set[str] = set()
    found: list[Path] = []
    for where, folders, names in os.walk(folder, followlinks=True):
        real = os.path.realpath(where)
        if real in seen:
            folders.clear()
            continue
        seen.add(real)
        found += [Path(where) / name for name in names]
    return found


class Outputs:
    """The outputs of one run; ``inputs`` are ``(option, path)`` pairs no output may replace
    (each path standing for the files of :func:`input_files`). Inputs known only once the
    work is done, such as a model's sidecar files, are added by :meth:`add_inputs`.

    Use it as a context manager: leaving the block without :meth:`commit` (an error, an
    interrupt) removes every temporary and every folder made for the outputs.
    """

    def __init__(self, inputs: Iterable[tuple[str, PathLike]] = ()) -> None:
        self._inputs: list[tuple[str, Path]] = []
        for name, path in inputs:
            self._inputs += input_files(name, path)
        self._files: list[StagedFile] = []
        self._folders: list[StagedFolder] = []
        #: Every output path -> (option, "file" or "folder").
        self._claimed: dict[Path, tuple[str, str]] = {}
        self._created: list[Path] = []
        self._finished = False

    def __enter__(self) -> Outputs:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if not self._finished:
            self.discard()

    # --- naming the outputs ----------------------------------------------------------------------

    def file(self, option: str, path: PathLike) -> StagedFile:
        """Check the output file ``path`` of ``option``, make its folders and its temporary."""
        shown = os.fspath(path)
        target = _resolve(option, shown, "file")
        self._claim(option, shown, target, "file")
        with _reachable(option, shown):
            self._check_file(option, shown, target)
            self._make_folder(option, shown, target.parent)
        try:
            handle, temporary = tempfile.mkstemp(
                prefix=f".{target.name[:_NAME_IN_TEMPORARY]}.", suffix=".tmp", dir=target.parent
            )
            os.close(handle)
        except OSError as error:
            raise _unwritable(option, shown, target.parent, error) from None
        staged = StagedFile(option, shown, target, Path(temporary))
        self._files.append(staged)
        return staged

    def folder(self, option: str, path: PathLike, names: Sequence[str]) -> StagedFolder:
        """Check the output folder ``path`` and its files ``names``; make it and its staging."""
        shown = os.fspath(path)
        target = _resolve(option, shown, "folder")
        self._claim(option, shown, target, "folder")
        with _reachable(option, shown):
            if target.exists() and not target.is_dir():
                raise InputFileError(f"{option} must name a folder, not a file. Found {shown!r}.")
            for name in names:
                self._claim(option, str(Path(shown) / name), target / name, "file")
                self._check_file(option, str(Path(shown) / name), target / name)
            self._make_folder(option, shown, target)
        try:
            staging = Path(tempfile.mkdtemp(prefix=".epsstar-", dir=target))
        except OSError as error:
            raise _unwritable(option, shown, target, error) from None
        staged = StagedFolder(option, shown, target, staging, tuple(names))
        self._folders.append(staged)
        return staged

    def _check_file(self, option: str, shown: str, target: Path) -> None:
        limit = _name_max(target.parent)
        if len(os.fsencode(target.name)) > limit:
            raise InputFileError(
                f"{option}: the file name is longer than the {limit} bytes a name may have. "
                f"Found {shown!r}."
            )
        if target.is_dir():
            raise InputFileError(f"{option} must name a file, not a folder. Found {shown!r}.")
        if target.exists() and not target.is_file():
            raise InputFileError(
                f"{option} must name a regular file, not a device, pipe or socket. Found {shown!r}."
            )
        self._refuse_inputs(option, shown, target, self._inputs)

    @staticmethod
    def _refuse_inputs(
        option: str, shown: str, target: Path, inputs: Sequence[tuple[str, Path]]
    ) -> None:
        for name, source in inputs:
            if _same_file(target, source):
                raise InputFileError(
                    f"{option} would overwrite {name}, an input of this run. Found {shown!r}."
                )

    def add_inputs(self, inputs: Iterable[tuple[str, PathLike]]) -> None:
        """More inputs of the run (files it read, known once it has read them): refused if an
        output named so far would replace one of them."""
        added = [pair for name, path in inputs for pair in input_files(name, path)]
        self._inputs += added
        for staged in self._files:
            self._refuse_inputs(staged.option, staged.shown, staged.target, added)
        for folder in self._folders:
            for name in folder.names:
                self._refuse_inputs(
                    folder.option, str(folder.path(name)), folder.target / name, added
                )

    def _claim(self, option: str, shown: str, target: Path, kind: str) -> None:
        """Reserve ``target`` for ``option``: no other output at that path, inside nor around."""
        for path, (other, other_kind) in self._claimed.items():
            if path == target:
                if other == option:
                    message = f"{option} would write two files at the same path"
                else:
                    same = kind if kind == other_kind else "path"
                    message = f"{option} and {other} name the same {same}; each needs its own"
            elif (other_kind == "file" and path in target.parents) or (
                kind == "file" and target in path.parents
            ):
                message = f"{option} and {other} would need one path as a file and as a folder"
            else:
                continue
            raise InputFileError(f"{message}. Found {shown!r}.")
        self._claimed[target] = (option, kind)

    def _make_folder(self, option: str, shown: str, folder: Path) -> None:
        """Make ``folder`` and its missing parents, remembering them (removed by a discard)."""
        missing = []
        for candidate in (folder, *folder.parents):
            if candidate.is_dir():
                break
            if candidate.exists() or candidate.is_symlink():
                raise InputFileError(
                    f"{option}: {str(candidate)!r} is a file, not a folder. Found {shown!r}."
                )
            missing.append(candidate)
        for candidate in reversed(missing):
            try:
                candidate.mkdir()
            except OSError as error:
                raise InputFileError(
                    f"{option}: cannot create the folder {str(candidate)!r} ({_reason(error)}). "
                    f"Found {shown!r}."
                ) from None
            self._created.append(candidate)

    # --- the end ---------------------------------------------------------------------------------

    def commit(self) -> None:
        """Rename every written output into place: all of them, or (an error) none."""
        moves = [(f.option, f.shown, f.temporary, f.target) for f in self._files]
        for folder in self._folders:
            moves += [
                (folder.option, str(folder.path(name)), folder.staging / name, folder.target / name)
                for name in folder.names
                if (folder.staging / name).is_file()
            ]
        with _interrupts_deferred():
            try:
                _move(moves)
            except BaseException:
                self.discard()
                raise
            self._finished = True
            self._remove_temporaries()

    def discard(self) -> None:
        """Remove every temporary and the folders made for the outputs (if left empty)."""
        self._finished = True
        self._remove_temporaries()
        for folder in reversed(self._created):
            with contextlib.suppress(OSError):
                folder.rmdir()
        self._created.clear()

    def _remove_temporaries(self) -> None:
        for staged in self._files:
            with contextlib.suppress(OSError):
                staged.temporary.unlink()
        for folder in self._folders:
            shutil.rmtree(folder.staging, ignore_errors=True)


def _resolve(option: str, shown: str, kind: str) -> Path:
    """The absolute path ``shown`` names (symbolic links followed); '-' and '' are refused."""
    if shown in ("", "-"):
        note = " ('-', standard output, is not available for it)" if shown == "-" else ""
        raise InputFileError(f"{option} must name a {kind}{note}. Found {shown!r}.")
    try:
        return Path(os.path.realpath(shown))
    except (ValueError, OSError) as error:  # a NUL byte, a loop of links
        raise InputFileError(f"{option} is not a usable path ({error}). Found {shown!r}.") from None


def _unwritable(option: str, shown: str, folder: Path, error: OSError) -> InputFileError:
    return InputFileError(
        f"{option}: cannot write in {str(folder)!r} ({_reason(error)}). Found {shown!r}."
    )


def _move(moves: Sequence[tuple[str, str, Path, Path]]) -> None:
    """``os.replace`` each temporary onto its target; on a failure, undo the ones done."""
    done: list[tuple[Path, Path | None]] = []
    for option, shown, temporary, target in moves:
        backup = None
        try:
            os.chmod(temporary, _file_mode(target))
            backup = _backup(target)
            os.replace(temporary, target)
        except OSError as error:
            _undo([*done, (None, backup)])
            raise InputFileError(
                f"{option}: cannot write ({_reason(error)}). Found {shown!r}."
            ) from None
        done.append((target, backup))
    for _, backup in done:
        if backup is not None:
            with contextlib.suppress(OSError):
                backup.unlink()


def _undo(done: Sequence[tuple[Path | None, Path | None]]) -> None:
    """Put back what the moves ``done`` replaced; remove the files they added."""
    for target, backup in reversed(done):
        with contextlib.suppress(OSError):
            if target is None:  # the move that failed: only its backup is left
                if backup is not None:
                    backup.unlink()
            elif backup is None:
                target.unlink()
            else:
                os.replace(backup, target)
