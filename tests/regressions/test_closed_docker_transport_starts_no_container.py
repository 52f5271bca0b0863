"""Bug: a cell run on a docker kernel after its transport was closed started a new container
that outlived the process.

The pytest plugin closes the run's shared transports at session end; a kernel a user kept past
that (a module global, a cell in an ``atexit`` hook) found its channel gone, and its next cell
auto-restarted it: the closed transport joined the run's shared container again (starting one:
its last member had removed it), or started a fresh one, and the process then exited a member
of it. The container and the run's files stayed until another run's sweep. A closed docker
transport now refuses the start with a :class:`KernelStartError` that says it was closed.
"""

from __future__ import annotations

import json
import uuid

import pytest

from tests.support import python_host, run_leftovers

HOST = """
import json
from pytest_hermes_kernel import KernelStartError, start_kernel
from pytest_hermes_kernel.containers.sharing import use_run_id
from pytest_hermes_kernel.transports import close_shared_transports, get_transport

use_run_id({run_id!r})
kernel = start_kernel(get_transport("docker", **{options!r}))
kernel.execute("x = 1")
close_shared_transports()  # what the plugin does at session end
first = kernel.execute("print(x)")
try:
    second = kernel.execute("print(x)")
    print(json.dumps({{"first": first.status, "second": second.status}}), flush=True)
except KernelStartError as exc:
    print(json.dumps({{"first": first.status, "second": "raised", "error": str(exc)}}), flush=True)
"""


@pytest.mark.parametrize("options", [{}, {"server": False}, {"container": "fresh"}],
                         ids=["kernel-server", "spawn", "fresh-container"])
def test_a_cell_after_the_transport_closed_starts_no_container(options: dict, docker_ready: None) -> None:
    run_id = f"closed-docker-{uuid.uuid4().hex[:12]}"
    host = python_host(HOST.format(run_id=run_id, options=options))
    out, err = host.communicate(timeout=120)

    assert run_leftovers(run_id) == []  # the host has exited; removed by it if not
    outcome = json.loads(out.splitlines()[-1]) if out.strip() else {}
    assert outcome.get("first") == "died", err[-2000:]  # the channel ended with the transport
    assert outcome["second"] == "raised", outcome
    assert "this docker transport was closed" in outcome["error"]
