"""Runs of this kit in a pid namespace of their own (``unshare --pid --fork --mount-proc``): what a
CI job in a container with the host's network, beside another run, is to this machine: the same
hostname (and here the same file system), its own pids, pytest its pid 1.

A test writes an inner test file that records what it holds in ``$KB_OUT/<name>.json`` and waits
for ``$KB_OUT/go``; :func:`start` runs it in a namespace, :func:`wait_for` reads what it recorded,
:func:`finish` says go and collects the run's output, :func:`stop` ends whatever still runs.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.support import RUN_TIMEOUT_S, UNRELATED_PLUGINS

#: What an inner test file holds to wait: ``wait_for(name)`` polls ``$KB_OUT/<name>`` for 120 s.
WAIT_FOR = '''
import json, os, pathlib, time

OUT = pathlib.Path(os.environ["KB_OUT"])


def wait_for(name):
    deadline = time.monotonic() + 120
    while not (OUT / name).exists():
        assert time.monotonic() < deadline, f"never saw {name}"
        time.sleep(0.05)
'''


def unshare() -> str:
    """The ``unshare`` command; skips where this process may not make namespaces (not root)."""
    found = shutil.which("unshare")
    if os.geteuid() != 0 or found is None:
        pytest.skip("needs root and unshare, to start a run in a pid namespace of its own")
    return found


def prepare(directory: Path, inner: str) -> Path:
    """Ready ``directory`` for a namespaced run of the test file ``inner`` (skips where no
    namespace can be made: :func:`unshare`); return the out dir its test records in (``KB_OUT``)."""
    unshare()
    (directory / "test_inner.py").write_text(inner)
    out = directory / "out"
    out.mkdir()
    return out


def ended_namespace() -> str:
    """The id of a pid namespace that has ended (``pid:[N]``: one made, read and left at once)."""
    ended = subprocess.run([unshare(), "--pid", "--fork", "readlink", "/proc/self/ns/pid"],
                           capture_output=True, text=True, timeout=30, check=True).stdout.strip()
    assert ended.startswith("pid:["), ended
    return ended


def pytest_command(*options: str) -> list[str]:
    """``python -m pytest`` of this interpreter, one process (no xdist), leak check an error."""
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *UNRELATED_PLUGINS, "-p", "no:xdist", "-q",
            "--hermes-leak-check=error", *options]


def start(directory: Path, command: Sequence[str], *, before: str = "", mount: bool = False,
          **env: str) -> subprocess.Popen[str]:
    """Run ``command`` in ``directory`` as the first process of a new pid namespace (killed with it).

    :param before: shell run in the namespace first (e.g. ``echo N > /proc/sys/kernel/ns_last_pid``).
    :param mount: a mount namespace of its own too (``before`` may mount a private ``/tmp`` then).
    :param env: set over this process's environment.
    """
    args = [unshare(), "--pid", "--fork", "--kill-child", "--mount-proc"]
    if mount:
        args += ["--mount", "--propagation", "private"]
    script = f"{before} && exec {shlex.join(command)}" if before else f"exec {shlex.join(command)}"
    return subprocess.Popen([*args, "sh", "-c", script], cwd=directory, env=dict(os.environ, **env),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_for(proc: subprocess.Popen[str], path: Path) -> Any:
    """What the run recorded at ``path`` (JSON); fails with its output if it ends first."""
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            stop([proc], path.parent / "go")
            pytest.fail(f"the inner run never wrote {path.name}:\n{proc.communicate()[0][-3000:]}")
        time.sleep(0.05)
    return json.loads(path.read_text())


def finish(proc: subprocess.Popen[str], go: Path) -> str:
    """Say go, and the run's output once it ended."""
    go.write_text("")
    return proc.communicate(timeout=RUN_TIMEOUT_S)[0]


def stop(procs: Iterable[subprocess.Popen[str]], go: Path) -> None:
    """Say go, and kill any run still going (its namespace goes with it)."""
    go.write_text("")
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
