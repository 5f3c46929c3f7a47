"""Text from the inputs made safe for the files a pipeline parses: the one place every text
bound for JUnit XML, the HTML reports, GitHub's job summary and its annotations passes.

A model's file name, a slice's value or a manifest's strategy can hold any character. XML
1.0 forbids the C0 control characters other than tab, line feed and carriage return, lone
surrogates (which a file name that is not UTF-8 decodes to) and U+FFFE/U+FFFF: one of them
makes a JUnit file that no parser reads, and a lone surrogate cannot even be encoded as
UTF-8. :func:`xml_text` replaces each with its visible escape (``\\x07``, ``\\udc80``), so
that the text stays readable and says what it held. Escaping ``<``, ``&`` and quotes is left
to the writer of each format (ElementTree, Jinja2's autoescaping).
"""

from __future__ import annotations

import re
from typing import Final, TypeVar

__all__ = ["FORBIDDEN", "xml_text"]

#: Every character XML 1.0 does not allow in a document (its production ``Char``).
FORBIDDEN: Final = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")

S = TypeVar("S", bound=str)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def xml_text(text: S) -> S:
    """``text`` with every character XML 1.0 forbids replaced by its escape (module
    docstring); a ``str`` subclass (Jinja2's ``Markup``) keeps its type."""
    if FORBIDDEN.search(text) is None:
        return text
    return type(text)(FORBIDDEN.sub(_escaped, text))
