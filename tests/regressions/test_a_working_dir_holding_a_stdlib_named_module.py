"""Seen: pytest run from a project whose top level holds a module named like one of the standard
library's (``types.py``, a project's own type definitions; ``struct.py``) errored every filecell
kernel start: "filecell launch through LocalShellBackend('sh') failed: the launch command's exit
status was not reported ('')", and a ``hermes_host_sigkill`` test's host harness died at once:
"the harness host (pid N) is gone; its kernel had no host". Both start a Python of their own on
the host with ``-c`` / ``-m``, which put the working dir first on ``sys.path``: the project's
``types.py`` shadowed the standard one, and the helper died importing it (``cannot import name
'GenericAlias' from 'types'``). Now the working dir goes after the standard library (the harness
host's; the subreaper, stdlib only, drops it), and both start from such a directory."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.faults.harness import HarnessKernel
from pytest_hermes_kernel.transports import FileCellTransport, LocalShellBackend

SHADOWS = ("types", "struct")


@pytest.fixture
def project_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working dir: a project holding ``types.py`` and ``struct.py`` of its own."""
    for name in SHADOWS:
        (tmp_path / f"{name}.py").write_text(f"raise ImportError('the project own {name}.py was imported')\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def short_root() -> Iterator[str]:
    """A filecell root short enough for unix socket paths (an xdist worker's ``tmp_path`` is not)."""
    path = tempfile.mkdtemp(prefix="fcsh-", dir="/tmp")
    yield f"{path}/root"
    shutil.rmtree(path)


def test_a_filecell_kernel_starts_from_a_dir_holding_types_py(project_dir: Path, short_root: str) -> None:
    transport = FileCellTransport(LocalShellBackend(), root=short_root)
    try:
        with start_kernel(transport, start_timeout=60) as kernel:
            assert kernel.execute("6 * 7", timeout=30).value == "42"
    finally:
        transport.close()


def test_a_host_harness_starts_from_a_dir_holding_types_py(project_dir: Path) -> None:
    kernel = HarnessKernel("local", start_timeout=60)
    try:
        assert kernel.execute("x = 6 * 7; x", timeout=30).value == "42"
    finally:
        kernel.shutdown()
