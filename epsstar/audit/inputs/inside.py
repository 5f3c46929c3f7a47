"""A path that one file names, kept inside that file's folder.

An MLflow ``MLmodel`` names its model file, a weights index its shards: relative paths,
read against the folder that holds the naming file. An absolute path, a ``..`` step or a
link that resolves outside the folder is refused, so that an audit reads only the files
of the model the user named, wherever it runs.
"""

from __future__ import annotations

import os
from pathlib import Path

from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.files.input_bounds import shown

__all__ = ["inside_folder"]


def inside_folder(folder: Path, value: str, what: str) -> Path:
    """``folder / value``, refused in one line (``{what} must stay inside the model folder``)
    when it leads outside ``folder``, links followed."""
    relative = Path(value)
    root = Path(os.path.realpath(folder))
    target = Path(os.path.realpath(folder / relative))
    if relative.is_absolute() or ".." in relative.parts or not target.is_relative_to(root):
        raise InvalidInputError(f"{what} must stay inside the model folder. Found {shown(value)}.")
    return folder / relative
