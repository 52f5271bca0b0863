"""A shared container is alive while any of its members is (issue #9 point 9).

Before: a shared container was judged by its creator's pid alone, so when the creator was gone
(a host-SIGKILL fault, an xdist worker that finished first) while other processes still used
it, another run's first docker use removed it mid-cell. Now each member is checked by pid and
start time: no sweep removes a container that a live member uses, and once the last member is
gone, also by SIGKILL, the next sweep removes it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid

import pytest

from pytest_hermes_kernel.containers.rundir import run_dir_path

MEMBER = """
import sys, time
from pytest_hermes_kernel.transports.docker.transport import DockerTransport
t = DockerTransport(run_id=sys.argv[1])
print(t.shared_container(), flush=True)
time.sleep(600)
"""


def _member(run_id: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-c", MEMBER, run_id], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip() if proc.stdout else ""
    assert line, "the member did not join a shared container"
    return proc, line


def _kill(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    if proc.stdout:
        proc.stdout.close()


def test_a_sweep_leaves_a_shared_container_to_its_survivors_and_removes_it_after_the_last(
        hermes_transport) -> None:
    if hermes_transport.name != "docker":
        pytest.skip("shared kernel host containers belong to the docker transport")
    from pytest_hermes_kernel.containers.sweep import sweep_dead_runs

    client = hermes_transport.client
    run_id = f"members-{uuid.uuid4().hex[:12]}"  # another run than this one: the sweep may judge it
    creator, cid = _member(run_id)
    survivor = None
    try:
        survivor, cid2 = _member(run_id)
        assert cid2 == cid, "the second member must join the creator's container"
        _kill(creator)
        assert cid not in sweep_dead_runs(client), "a sweep removed a container a live member uses"
        assert client.api.inspect_container(cid)["State"]["Running"]
        _kill(survivor)
        deadline = time.monotonic() + 10
        while cid not in sweep_dead_runs(client) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert cid not in {c.id for c in client.containers.list(all=True, sparse=True)}, "the last member's death left it"
        assert not os.path.exists(run_dir_path(run_id)), "the removed container's run files outlived it"
    finally:
        for proc in (creator, survivor):
            if proc is not None:
                _kill(proc)
        from pytest_hermes_kernel.containers.lifecycle import remove_container

        remove_container(cid, client=client)
        shutil.rmtree(run_dir_path(run_id), ignore_errors=True)  # the SIGKILLed members' run files
