"""Bug: a SIGTERM to the pytest-xdist controller alone (``kill $PID`` of a CI script, ``docker stop``
of a container whose first process is pytest) left the workers to execnet, which stops a busy
worker only by a SIGINT to itself 5 s later, and kills it 5 s after that. Started with SIGINT
ignored, as a background job of a non-interactive shell is (``pytest -n 2 &``), the workers sat
the SIGINT out and were killed with no teardown: the run's docker container, its kernel and its run
files outlived the run (and the run took 11 s to end). The controller now passes its first
SIGTERM on to each worker that has not had one, which tears down at once as the controller does.
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
from tests.support import RUN_TIMEOUT_S, UNRELATED_PLUGINS, run_containers, wait_until

HOLDS = """
import pathlib, time

def test_holds(hermes_kernel):
    assert hermes_kernel.execute("1 + 1").value == "2"
    (pathlib.Path(__file__).parent / "started").touch()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # the outer test sends SIGTERM meanwhile
        time.sleep(0.05)
"""

#: pytest as a background job of a CI script: SIGINT ignored, and so in its xdist workers
SIGINT_IGNORED = "import signal, sys, pytest; signal.signal(signal.SIGINT, signal.SIG_IGN); sys.exit(pytest.main())"


def test_a_sigterm_to_the_controller_tears_the_workers_down(pytester: pytest.Pytester, docker_ready: None) -> None:
    pytester.makepyfile(test_holds=HOLDS)
    run_id = f"xdist-term-{uuid.uuid4().hex[:12]}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_HERMES_") and k != "PYTEST_XDIST_TESTRUNUID"}
    proc = subprocess.Popen([sys.executable, "-c", SIGINT_IGNORED, "-p", "no:cacheprovider", *UNRELATED_PLUGINS, "-q",
                             "-n", "2", "--hermes-transport=docker", f"--hermes-run-id={run_id}"],
                            cwd=pytester.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_until(lambda: (pytester.path / "started").exists() or proc.poll() is not None, RUN_TIMEOUT_S,
                   what="the inner run's test to hold its kernel")
        assert proc.poll() is None, proc.communicate()[0]
        os.kill(proc.pid, signal.SIGTERM)
        out = proc.communicate(timeout=RUN_TIMEOUT_S)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    left = run_containers(run_id)
    try:
        assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
        assert [c["Id"][:12] for c in left] == [], f"the run's container outlived it:\n{out}"
        assert not Path(run_dir_path(run_id)).exists(), f"the run's files outlived it:\n{out}"
    finally:
        from pytest_hermes_kernel.containers.lifecycle import remove_container

        for container in left:
            remove_container(container["Id"])
