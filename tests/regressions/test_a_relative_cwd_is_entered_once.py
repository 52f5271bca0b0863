"""A relative ``cwd=`` is entered once, relative to where the transport says, on every path.

Seen: ``start_kernel("local", cwd="sub")`` with ``sub`` beside the caller failed its start on the
kernel-server path (the server resolved ``sub`` in its own directory) and, on the spawn path,
started and then every cell ``died`` with ``exit_code=70``: the runner was started in ``sub`` and
each worker entered ``sub`` again (``sub/sub``). On ssh the login shell entered it and the runner
again. Now: local resolves it against the caller's working directory (as ``subprocess`` does),
filecell through its local shell backend too, and docker and ssh (a kernel not on this machine),
which have no such directory of the caller's, refuse it with a message saying to give an absolute
path (filecell's launch script had entered its kernel dir first: ``sub`` was looked for there).
A local kernel's relative ``cwd`` is resolved once, when its handle is made: a relaunch after the
caller's ``chdir`` and the kernel's file transfers mean the same directory as its first launch.
"""

from __future__ import annotations

import os
import signal
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


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
def test_a_local_kernels_relative_cwd_is_where_its_files_go_in_and_out(tmp_path: Path, monkeypatch, server: bool):
    """Its transfers were refused ("a transfer cannot tell where that is"); before that (b5c17da)
    an upload landed in the caller's directory, where no cell saw it."""
    for where in ("sub", "elsewhere/sub"):
        (tmp_path / where).mkdir(parents=True)
    (tmp_path / "data.txt").write_text("in")
    monkeypatch.chdir(tmp_path)
    transport = make_transport("local", server=server)
    try:
        with start_kernel(transport, cwd="sub") as k:
            monkeypatch.chdir(tmp_path / "elsewhere")  # the kernel's dir stays the one it started in
            k.upload(tmp_path / "data.txt", "data.txt")
            k.execute("open('out.txt', 'w').write(open('data.txt').read() + ' and out')")
            k.download("out.txt", tmp_path / "out.txt")
    finally:
        transport.close()

    assert (tmp_path / "sub" / "data.txt").read_text() == "in"
    assert (tmp_path / "out.txt").read_text() == "in and out"
    assert not any((tmp_path / "elsewhere" / "sub").iterdir())


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
def test_a_relaunched_local_kernel_enters_the_dir_it_started_in_after_the_caller_moved(tmp_path: Path, monkeypatch,
                                                                                       server: bool):
    for where in ("sub", "elsewhere/sub"):
        (tmp_path / where).mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    transport = make_transport("local", server=server)
    try:
        with start_kernel(transport, cwd="sub") as k:
            k.execute("pass")
            monkeypatch.chdir(tmp_path / "elsewhere")
            os.kill(k.launched.pid, signal.SIGKILL)  # its runner lost: the next cell's kernel is a new launch
            again = k.execute("import os\nos.getcwd()")  # died, or ran in a new runner: says state_lost
            if again.status == "died":
                again = k.execute("import os\nos.getcwd()")
    finally:
        transport.close()

    assert again.status == "ok" and again.value == repr(str(tmp_path / "sub")), again.summary()  # not elsewhere/sub
