"""Servers for the tests: a scripted stub in a thread, and real model servers in their own
process group, each on a free loopback port."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.error import URLError
from urllib.request import ProxyHandler, build_opener

#: What the stub answers a request: status, body (bytes, or JSON-ready), headers, delay (s).
Answer = tuple[int, Any, dict[str, str], float]
Script = Callable[[str, str, Any], Answer]


@dataclass
class Request:
    method: str
    path: str
    body: Any
    headers: dict[str, str]
    at: float


@dataclass
class Stub:
    """A loopback HTTP server answering every request as ``script(method, path, body)``
    says; ``requests`` records what it received, in order."""

    script: Script
    requests: list[Request] = field(default_factory=list)
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _handler(stub: Stub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else None
            stub.requests.append(
                Request(self.command, self.path, body, dict(self.headers), time.monotonic())
            )
            status, content, headers, delay = stub.script(self.command, self.path, body)
            if delay:
                time.sleep(delay)
            data = content if isinstance(content, bytes) else json.dumps(content).encode()
            try:
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a read timeout)

        do_GET = do_POST = _answer  # noqa: N815 - the names http.server calls

    return Handler


@contextmanager
def stub_server(script: Script) -> Iterator[Stub]:
    """``script``'s stub, served from a thread while the block runs."""
    stub = Stub(script)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(stub))
    server.daemon_threads = True
    stub.port = int(server.server_address[1])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def server_process(
    command: list[str], ready: str, log: Path, cwd: Path, timeout: float = 90.0
) -> Iterator[None]:
    """``command`` running in its own process group until the block ends (the group is
    terminated, then killed), once ``GET ready`` answers 200 (within ``timeout`` s)."""
    env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    with log.open("wb") as output:
        process = subprocess.Popen(
            command,
            cwd=cwd,
            stdout=output,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    try:
        _wait_ready(process, ready, log, timeout)
        yield
    finally:
        _stop(process)


def _wait_ready(process: subprocess.Popen[bytes], ready: str, log: Path, timeout: float) -> None:
    opener = build_opener(ProxyHandler({}))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"the server exited ({process.returncode}): {log.read_text()[-2000:]}"
            )
        try:
            with opener.open(ready, timeout=2) as answer:
                if answer.status == 200:
                    return
        except (URLError, OSError):
            pass
        time.sleep(0.3)
    raise RuntimeError(f"the server was not ready within {timeout} s: {log.read_text()[-2000:]}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=15)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=15)
