"""Handed case B40: fixture teardown was skipped on SIGTERM (a CI abort) and on an interrupt
during fixture setup, leaving kernels, containers and their ports behind.

An inner run (pytest in a subprocess) starts a kernel, in the test or inside a fixture's setup
before its ``yield``, says so through a file, and waits; the outer test then sends SIGTERM or
SIGINT. Once pytest has exited (status 2, interrupted), nothing of the run may survive: no
process of its kernels on this machine, no container labelled with its run id (so no sshd and
no ssh session), no run directory. On local, docker, ssh and filecell.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from pytest_hermes_kernel.containers.rundir import run_dir_path
from pytest_hermes_kernel.procs import processes_with_env
from tests.support import RUN_TIMEOUT_S, UNRELATED_PLUGINS, run_containers, wait_until

INNER = """
import os, pathlib, time
import pytest

HERE = pathlib.Path(__file__).parent


def hold(tag):
    (HERE / tag).touch()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # the outer test signals us meanwhile
        time.sleep(0.05)
    pytest.fail("never signalled")


@pytest.fixture
def started_in_setup(hermes_kernel_factory):
    k = hermes_kernel_factory()
    assert k.execute("1 + 1").value == "2"
    hold("in_setup")
    yield k


def test_in_test(hermes_kernel):
    assert hermes_kernel.execute("1 + 1").value == "2"
    hold("in_test")


def test_in_setup(started_in_setup):
    pass
"""

#: The inner pytest, with Python's own SIGINT handler whatever this run inherited: a pytest started
#: as a background job of a non-interactive shell (``.ci/run &``) has SIGINT ignored, and its
#: inner runs would inherit that and sit out a Ctrl-C (status 1 after "never signalled").
SIGINT_AS_AT_A_TERMINAL = ("import signal, sys, pytest; signal.signal(signal.SIGINT, signal.default_int_handler); "
                           "sys.exit(pytest.console_main())")

#: SIGTERM inside fixture setup on every transport; in the test where a container holds the run;
#: Ctrl-C (pytest's own path) once each way. About 6 s a case on the 2-core machine.
CASES = [(transport, "SIGTERM", "in_setup") for transport in ("local", "docker", "ssh", "filecell")] + [
    ("docker", "SIGTERM", "in_test"), ("ssh", "SIGINT", "in_test"), ("local", "SIGINT", "in_setup")]


def _containers_of(run_id: str) -> list[str]:
    return [c["Id"] for c in run_containers(run_id)]


@pytest.mark.parametrize(("transport", "signame", "where"), CASES, ids=["-".join(c) for c in CASES])
def test_a_signalled_run_leaves_nothing(pytester: pytest.Pytester, request: pytest.FixtureRequest,
                                        transport: str, signame: str, where: str) -> None:
    if transport in ("docker", "ssh"):
        request.getfixturevalue("docker_ready")
    pytester.makepyfile(test_inner=INNER)
    run_id = f"b40-{uuid.uuid4().hex}"
    proc = subprocess.Popen(
        [sys.executable, "-c", SIGINT_AS_AT_A_TERMINAL, "-p", "no:cacheprovider", *UNRELATED_PLUGINS, "-q", "-k", where,
         f"--hermes-transport={transport}", "--hermes-require-transports", f"--hermes-run-id={run_id}"],
        cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_until(lambda: (pytester.path / where).exists() or proc.poll() is not None, RUN_TIMEOUT_S,
                   what=f"the inner run to start its kernel {where.replace('_', ' ')}")
        assert proc.poll() is None, proc.communicate()[0]
        os.kill(proc.pid, getattr(signal, signame))
        out = proc.communicate(timeout=RUN_TIMEOUT_S)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
    wait_until(lambda: not processes_with_env("HERMES_KERNEL_HOST_PID", str(proc.pid)), 2.0,
               what="the run's kernel processes to be gone")
    if transport in ("docker", "ssh"):
        assert _containers_of(run_id) == [], f"containers of the run survived it:\n{out}"
    assert not Path(run_dir_path(run_id)).exists(), f"the run's files survived it:\n{out}"
