"""Bug: a forked child that started a kernel either used its parent's shared transport, or made
one that nothing closed when it exited.

The module's exit hook was registered once, by the first process that made a shared transport,
and ran only in that process. A child forked after its parent had made one (any transport) and
then started a docker or ssh kernel of its own exited normally a member of the container it had
joined: the container, the run's files and the sshd key stayed until another run's sweep. A
child that asked for a transport its parent had made got the parent's instance, whose kernel
servers and ssh connection live on threads that do not survive a fork: docker waited 16 s before
it spawned the kernel instead, ssh failed after 25 s with ``sftp ... failed``. Now a forked child
makes shared transports of its own and closes them at its exit; its parent's are left alone.
"""

from __future__ import annotations

import json
import uuid

import pytest

from tests.support import python_host, run_leftovers

HOST = """
import json, os, sys
from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.containers.sharing import use_run_id

use_run_id({run_id!r})
parent = start_kernel({parent!r})  # the parent's shared transport, and the exit hook it registers
parent.execute("1")
pid = os.fork()
if pid == 0:
    try:
        child = start_kernel({child!r}, start_timeout=20)
        print(json.dumps({{"child": child.execute("1 + 1").value}}), flush=True)
    except Exception as exc:
        print(json.dumps({{"child": f"{{type(exc).__name__}}: {{exc}}"}}), flush=True)
    sys.exit(0)  # a normal exit: the child's exit hooks run
os.waitpid(pid, 0)
print(json.dumps({{"parent": parent.execute("2 + 1").value}}), flush=True)
parent.shutdown()
"""


def _run(parent: str, child: str) -> tuple[dict, list[str], str]:
    """Run the host script; ``(its printed facts, what its run left, its stderr)``."""
    run_id = f"forked-child-{uuid.uuid4().hex[:12]}"
    host = python_host(HOST.format(run_id=run_id, parent=parent, child=child))
    out, err = host.communicate(timeout=150)
    facts = {k: v for line in out.splitlines() if line.startswith("{") for k, v in json.loads(line).items()}
    return facts, run_leftovers(run_id), err  # the host and its child have exited


@pytest.mark.parametrize("transport", ["docker", "ssh"])
def test_a_forked_child_leaves_no_container_of_its_own(transport: str, docker_ready: None) -> None:
    facts, left, err = _run(parent="local", child=transport)

    assert left == []
    assert facts == {"child": "2", "parent": "3"}, err[-2000:]


def test_a_forked_child_does_not_use_its_parents_ssh_connection(docker_ready: None) -> None:
    facts, left, err = _run(parent="ssh", child="ssh")

    assert facts == {"child": "2", "parent": "3"}, err[-2000:]
    assert left == []
