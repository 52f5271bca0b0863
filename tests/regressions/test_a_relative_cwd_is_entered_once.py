"""A relative ``cwd=`` is entered once, relative to where the transport says, on every path.

Seen: ``start_kernel("local", cwd="sub")`` with ``sub`` beside the caller failed its start on the
kernel-server path (the server resolved ``sub`` in its own directory) and, on the spawn path,
started and then every cell ``died`` with ``exit_code=70``: the runner was started in ``sub`` and
each worker entered ``sub`` again (``sub/sub``). On ssh the login shell entered it and the runner
again. Now: local resolves it against the caller's working directory (as ``subprocess`` does),
filecell through its local shell backend too, and docker and ssh (a kernel not on this machine),
which have no such directory of the caller's, refuse it with a message saying to give an absolute
path (filecell's launch script had entered its kernel dir first: ``sub`` was looked for there).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.errors import ConfigError, KernelStartError
from pytest_hermes_kernel.transports import make_transport


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
def test_a_local_kernels_relative_cwd_is_the_callers_subdirectory(tmp_path: Path, monkeypatch, server: bool):
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    transport = make_transport("local", server=server)
    try:
        with start_kernel(transport, cwd="sub") as k:
            first, second = k.execute("import os\nos.getcwd()"), k.execute("os.getcwd()")
    finally:
        transport.close()

    assert first.status == "ok" and first.value == repr(str(tmp_path / "sub")), first.summary()
    assert second.value == first.value, second.summary()


def test_a_local_filecell_kernels_relative_cwd_is_the_callers_subdirectory(tmp_path: Path, monkeypatch):
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    transport = make_transport("filecell")
    try:
        with start_kernel(transport, cwd="sub") as k:
            result = k.execute("import os\nos.getcwd()")
    finally:
        transport.close()

    assert result.status == "ok" and result.value == repr(str(tmp_path / "sub")), result.summary()


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
@pytest.mark.parametrize("name", ["docker", "ssh"])
def test_a_remote_kernels_relative_cwd_is_refused_naming_it(docker_ready, name: str, server: bool):
    transport = make_transport(name, server=server)
    try:
        with pytest.raises((ConfigError, KernelStartError)) as exc:
            start_kernel(transport, cwd="relsub")
    finally:
        transport.close()

    text = str(exc.value)
    assert "cwd='relsub' is relative" in text and "absolute" in text, text
