"""A model served over HTTP: its URL, how it is shown, how it is reached, what it reported.

A model argument that starts with ``scheme://`` (two or more letters before the colon, so
that a Windows drive is never read as one) is a URL, not a path (:func:`is_url`). The URL
is used as given, credentials included, to reach the server; wherever it is shown or
recorded (messages, the provenance, the report) :func:`shown_url` drops the user name,
the password, the query (where tokens travel) and the fragment.

:class:`Serving` holds how the server is reached (timeouts, retries and their back-off,
a request-rate limit, the output asked for); :class:`ServedSource` is what the audit
records of it in place of a file digest: no file was read, so none exists.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit, urlunsplit

from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.records.json_records import JsonRecord, json_property

__all__ = [
    "DEFAULT_SERVING",
    "ServedSource",
    "Serving",
    "is_url",
    "shown_url",
    "without_credentials",
]

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")


def is_url(text: object) -> bool:
    """Whether ``text`` is a URL (``scheme://...``) rather than a path."""
    return isinstance(text, str) and _SCHEME.match(text) is not None


def shown_url(url: str) -> str:
    """``url`` without user name, password, query and fragment: what may be printed."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 address keeps its brackets
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host if port is None else f"{host}:{port}"
    return urlunsplit((parts.scheme.lower(), netloc, parts.path, "", ""))


def without_credentials(text: str) -> str:
    """``text`` as it may be shown or recorded: a URL without user name, password, query
    and fragment (:func:`shown_url`); anything else (a path) unchanged."""
    return shown_url(text) if is_url(text) and text != shown_url(text) else text


#: Most times one request is sent again (with the default back-off the ten retries of one
#: request wait 0, 1, 2, 4, ... 64 s, then twice urllib3's cap of 120 s: about six minutes).
MAX_RETRIES: Final = 10


def _positive(name: str, value: float, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInputError(f"{name} must be {what}. Found {value!r}.")
    if not (math.isfinite(value) and value > 0):
        raise InvalidInputError(f"{name} must be a finite number above 0. Found {value!r}.")


@dataclass(frozen=True, slots=True)
class Serving:
    """How a served model is reached.

    ``connect_timeout`` and ``read_timeout`` are seconds to open a connection and to wait
    for each answer; a request that fails to connect, or is answered 429, 502, 503 or 504,
    is sent again up to ``retries`` times: at once, then after ``backoff`` × 2, × 4, ...
    seconds (a server's ``Retry-After`` instead, when it sends one); ``rate`` caps the
    requests per second (``None``: no cap); ``output`` names the output tensor of an Open
    Inference Protocol server to read (``None``: the one its metadata lists, else the
    server's default).
    """

    connect_timeout: float = 10.0
    read_timeout: float = 300.0
    retries: int = 5
    backoff: float = 0.5
    rate: float | None = None
    output: str | None = None

    def __post_init__(self) -> None:
        for name in ("connect_timeout", "read_timeout"):
            _positive(name, getattr(self, name), "a number of seconds")
        if self.rate is not None:
            _positive("rate", self.rate, "a number of requests per second")
        if not math.isfinite(self.backoff) or self.backoff < 0:
            raise InvalidInputError(
                f"backoff must be a finite number of seconds, 0 or more. Found {self.backoff!r}."
            )
        if isinstance(self.retries, bool) or not isinstance(self.retries, int):
            raise InvalidInputError(f"retries must be a whole number. Found {self.retries!r}.")
        if not 0 <= self.retries <= MAX_RETRIES:
            raise InvalidInputError(
                f"retries must be between 0 and {MAX_RETRIES}. Found {self.retries}."
            )
        if self.output is not None and not self.output:
            raise InvalidInputError("output must be a non-empty name. Found ''.")


DEFAULT_SERVING: Final = Serving()


@dataclass(frozen=True, slots=True)
class ServedSource(JsonRecord):
    """What an audit records of a served model: the URL as shown (:func:`shown_url`), the
    protocol it was read with, and the model name, version and server the server
    reported (``None`` where it reported none)."""

    url: str
    protocol: str
    model_name: str | None
    model_version: str | None
    server: str | None

    @json_property()
    def file_digest(self) -> None:
        """A served model has no file, so its record says that no digest exists."""
