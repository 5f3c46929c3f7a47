"""What several hostile tests share: running a command as a user without privileges."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

#: ``setpriv`` dropping every capability (the bounding and inheritable sets) for the child.
WITHOUT_CAPABILITIES = ["--bounding-set=-all", "--inh-caps=-all"]


@pytest.fixture(scope="module")
def as_user() -> list[str]:
    """The words that run a command without privileges (none when not root): root without
    ``CAP_DAC_OVERRIDE`` is bound by the folders' permissions as any user is."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is missing: root writes into any folder")
    probe = subprocess.run(
        [setpriv, *WITHOUT_CAPABILITIES, "grep", "^CapEff:", "/proc/self/status"],
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.stdout.split() != ["CapEff:", "0" * 16]:
        pytest.skip(f"setpriv cannot drop the capabilities here: {probe.stderr.strip()}")
    return [setpriv, *WITHOUT_CAPABILITIES]
