"""One HTTP session with a served model's server: timeouts, retries, a rate, one-line errors.

Requests go through :mod:`requests` with :mod:`urllib3`'s :class:`~urllib3.util.Retry`:
a request that fails to connect, or is answered 429, 502, 503 or 504, is sent again up to
``retries`` times, at once the first time and then after ``backoff`` × 2, × 4, ... seconds
(a ``Retry-After`` the server sends is honoured instead); a read that times out is not sent
again (a server that is slow to answer is not helped by more requests). ``rate`` spaces
the requests this session sends (not the retries of one request, which wait their
back-off). The standard environment is honoured as :mod:`requests` reads it
(``HTTP_PROXY``, ``HTTPS_PROXY``, ``NO_PROXY``, ``REQUESTS_CA_BUNDLE``); redirects are not
followed, so nothing is read from anywhere but the URL given. User name and password in the
URL are sent as basic authentication and its query on every request; neither appears in a
message.

Every failure is one :class:`~epsstar.exceptions.InvalidInputError` line naming the URL
(without credentials): the host that could not be reached, the status and the first line
of the body of an HTTP error, the answer that is not JSON. An answer is read up to
:data:`~epsstar.plumbing.files.input_bounds.MAX_BYTES` bytes.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Final
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

from epsstar.audit.inputs.served import Serving, shown_url
from epsstar.audit.model.plugins import import_optional
from epsstar.exceptions import InputFileError, InvalidInputError
from epsstar.plumbing.files.input_bounds import MAX_BYTES, shown
from epsstar.plumbing.files.json_parsing import parse_json
from epsstar.plumbing.records.json_types import JsonValue

__all__ = ["RETRIED_STATUSES", "Session"]

#: The answers after which a request is sent again: too many requests, and a gateway or
#: server that is (for now) unavailable.
RETRIED_STATUSES: Final = frozenset({429, 502, 503, 504})


class _Pace:
    """At most ``rate`` request starts per second (``None``: no limit)."""

    def __init__(self, rate: float | None) -> None:
        self._interval = 0.0 if rate is None else 1.0 / rate
        self._next = 0.0
        self._lock = threading.Lock()

    def wait(self) -> None:
        if not self._interval:
            return
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self._interval
        time.sleep(start - now)


class Session:
    """Requests to the server at ``url`` (its scheme, host and path are the base that
    endpoints are joined to), reached as ``serving`` says."""

    def __init__(self, url: str, serving: Serving) -> None:
        requests = import_optional("requests", loader="served")
        from requests.adapters import HTTPAdapter
        from urllib3.util import Retry

        parts = urlsplit(url)
        self.shown = shown_url(url)
        self.base = urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], "", "", ""))
        self._root = shown_url(self.base)
        self.path = parts.path.rstrip("/")
        self._params = parse_qsl(parts.query, keep_blank_values=True)
        #: What no message may quote: the password and the query's values.
        self._secrets = [s for s in (parts.password, *(v for _, v in self._params)) if s]
        self._serving = serving
        self._pace = _Pace(serving.rate)
        self._session = requests.Session()
        if parts.username is not None:
            self._session.auth = (unquote(parts.username), unquote(parts.password or ""))
        retry = Retry(
            total=None,
            connect=serving.retries,
            read=0,
            status=serving.retries,
            other=0,
            redirect=0,
            backoff_factor=serving.backoff,
            status_forcelist=RETRIED_STATUSES,
            allowed_methods=frozenset({"GET", "POST"}),
            respect_retry_after_header=True,
            raise_on_status=False,
            raise_on_redirect=False,
        )
        adapter = HTTPAdapter(max_retries=retry)
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)

    def close(self) -> None:
        self._session.close()

    def get(self, path: str) -> JsonValue:
        """The JSON answer to ``GET base/path``."""
        return self._json(path, self._send("GET", path, None))

    def get_text(self, path: str) -> str:
        """The text answer to ``GET base/path`` (a health check's, a version's)."""
        return self._send("GET", path, None)

    def post(self, path: str, body: JsonValue) -> JsonValue:
        """The JSON answer to ``POST base/path`` with the JSON ``body``."""
        return self._json(path, self._send("POST", path, body))

    def _json(self, path: str, text: str) -> JsonValue:
        try:
            return parse_json(text, f"{self._root}{path}: the answer")
        except InputFileError as error:
            raise InvalidInputError(str(error)) from None

    def _send(self, method: str, path: str, body: JsonValue | None) -> str:
        import requests

        where = self._root + path
        self._pace.wait()
        try:
            response = self._session.request(
                method,
                self.base + path,
                params=self._params,
                json=body,
                timeout=(self._serving.connect_timeout, self._serving.read_timeout),
                allow_redirects=False,
                stream=True,
            )
        except requests.exceptions.ConnectTimeout:
            raise self._unreachable(where, "no connection within the connect timeout") from None
        except requests.exceptions.ReadTimeout:
            raise self._read_timeout(where) from None
        except requests.exceptions.RequestException as error:
            if _timed_out_reading(error):
                raise self._read_timeout(where) from None
            raise self._unreachable(where, _reason(error)) from None
        with response:
            text = _body(response, where)
            status = int(response.status_code)
        if 300 <= status < 400:
            raise InvalidInputError(
                f"{where}: the server must answer, not redirect (redirects are not followed); "
                f"give the URL it points to. Found HTTP {status} to "
                f"{shown(shown_url(response.headers.get('Location', '')))}."
            )
        if status >= 400:
            first = (text.strip().splitlines() or [""])[0]
            after = " after retries" if status in RETRIED_STATUSES and self._serving.retries else ""
            raise InvalidInputError(
                f"{where}: the server must answer with success. Found HTTP {status} "
                f"{response.reason or ''}{after}: {shown(first, 200)}."
            )
        return text

    def _read_timeout(self, where: str) -> InvalidInputError:
        return InvalidInputError(
            f"{where}: the server must answer within the read timeout of "
            f"{self._serving.read_timeout:g} s (--read-timeout). Found no answer."
        )

    def _unreachable(self, where: str, reason: str) -> InvalidInputError:
        for secret in self._secrets:
            reason = reason.replace(secret, "***")
        attempts = self._serving.retries + 1
        return InvalidInputError(
            f"{where}: the server must be reachable. Found {reason} after "
            f"{attempts} attempt{'s' * (attempts != 1)}."
        )


def _timed_out_reading(error: BaseException) -> bool:
    """Whether a request failed because its answer did not come within the read timeout
    (urllib3 reports it inside a MaxRetryError when no read is retried)."""
    from urllib3.exceptions import ReadTimeoutError

    cause: BaseException | None = error
    for _ in range(8):
        if cause is None or isinstance(cause, ReadTimeoutError):
            break
        inner = getattr(cause, "reason", None)
        cause = (
            inner
            if isinstance(inner, BaseException)
            else (
                cause.args[0] if cause.args and isinstance(cause.args[0], BaseException) else None
            )
        )
    return isinstance(cause, ReadTimeoutError)


def _reason(error: BaseException) -> str:
    """The innermost cause of a connection failure, in one line."""
    cause: BaseException = error
    seen = 0
    while seen < 8:
        inner = getattr(cause, "reason", None) or cause.__cause__ or cause.__context__
        if not isinstance(inner, BaseException):
            break
        cause, seen = inner, seen + 1
    text = (str(cause).strip().splitlines() or [type(cause).__name__])[0]
    return shown(f"{type(cause).__name__}: {text}", 160).strip("'\"")


def _body(response: Any, where: str) -> str:
    """The body of ``response``, at most :data:`MAX_BYTES` bytes."""
    parts: list[bytes] = []
    size = 0
    for chunk in response.iter_content(chunk_size=1 << 16):
        size += len(chunk)
        if size > MAX_BYTES:
            raise InvalidInputError(
                f"{where}: the answer must be at most {MAX_BYTES:,} bytes. Found more."
            )
        parts.append(chunk)
    return b"".join(parts).decode(response.encoding or "utf-8", errors="replace")
