"""Every error and warning line the CLI prints is one line, with values cut to a readable size.

Messages are built all over the package from paths, column names and values that a user
(or a hostile file) chose. Two things in them would break the promise of one line ending
with the value at fault (docs/reliability.md), and both are settled here, where every line
is printed, rather than at each of the hundreds of places that build one:

* a line break, or any other control character, inside a path or value (a file named
  ``tr\\nain.csv``) is written as its Python escape (``\\n``), so the message stays on one
  line and the path can be read back exactly;
* a quoted value longer than :data:`MAX_QUOTED` characters (a 10,007-character column
  name echoed with ``!r``) is cut, with its length said: ``'LLLL...' (10007 chars)``. A
  quoted value holding a ``/`` (a path or URL, which a user needs whole to find the file)
  is cut only beyond :data:`MAX_QUOTED_PATH` characters (Linux's ``PATH_MAX``).

The standard library has no function that does either for a whole message (``repr``
escapes but also quotes, and would quote the message itself).
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["MAX_QUOTED", "MAX_QUOTED_PATH", "one_line"]

#: The longest quoted value a message shows whole (characters, quotes included).
MAX_QUOTED: Final[int] = 60
#: The same for a quoted value holding a ``/`` (a path or a URL).
MAX_QUOTED_PATH: Final[int] = 4096

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
# A repr'd text: single or double quotes with any escaped character inside, not touching a
# letter outside (so the apostrophe of "the file's columns" opens no quote).
_QUOTED = re.compile(r"(?<!\w)(?:'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")(?!\w)")


def _escaped(match: re.Match[str]) -> str:
    return match.group(0).encode("unicode_escape").decode("ascii")


def _cut(match: re.Match[str]) -> str:
    text = match.group(0)
    if len(text) <= (MAX_QUOTED_PATH if "/" in text else MAX_QUOTED):
        return text
    return f"{text[: MAX_QUOTED - 14]}...{text[0]} ({len(text) - 2} chars)"


def one_line(message: str) -> str:
    """``message`` with control characters escaped and long quoted values cut (module doc)."""
    return _QUOTED.sub(_cut, _CONTROL.sub(_escaped, message))
