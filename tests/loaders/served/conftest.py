"""What the tests of served models share: the ``served`` loader known to the registry,
requests to loopback kept off any proxy of the environment, a tiny data set and model, and
real servers started once per module (:mod:`servers`)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(autouse=True)
def served_loader() -> None:
    """The ``served`` loader, known to the plugin registry (an install from an older
    checkout lacks its entry point; another test may have reset the registry)."""
    from epsstar.audit.model.plugins import available_loaders, register_loader
    from epsstar.loaders.served import ServedLoader

    if "served" not in available_loaders():
        register_loader("served", ServedLoader)


@pytest.fixture(autouse=True)
def no_proxy_for_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loopback servers are reached directly, whatever proxy the environment names."""
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
