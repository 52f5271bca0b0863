"""Found by a breaker helper (the spare kernel, 2026-12-07): the ssh connection was cut (a dropped
link, the fault proxy's reset) while the host's kernel server was making a kernel, here while it
claimed its spare (kernel/runner/spare.py). The server's stream broke, so the start fell back to a
plain spawn, as documented, but on the connection it had begun on, cut by then: the start failed
with ``KernelStartError: ssh transport: sftp to hermes@127.0.0.1:PORT failed: SSH session not
active`` (``Hint: is the host up and the key accepted?``), and the log said ``(failed launch): could
not end its processes: ssh connection ... is down: closed``, the failed fork's processes left to
their orphan timer. A kernel's re-attach after such a cut takes a new connection; now the start
does too: the failed fork's kill and the spawn run on one, and the kernel starts, its note naming
the server that went.

The cut lands inside the claim: the spare is stopped (SIGSTOP, from a kernel of another
transport on the same host), so the server, having made the kernel's dir, waits for its answer
(5 s at most) when the link is reset.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.faults.proxy import ProxyRoute
from pytest_hermes_kernel.transports import make_transport
from tests.support import kernels_shut_down_after, wait_until  # noqa: F401 - fixture
from tests.transports.test_a_remote_kernel_from_the_servers_spare import a_start_held_in_its_claim, processes

#: A cell of the looking kernel: the kernel dirs under the login's kernel root.
KERNEL_DIRS = "import os; sorted(os.listdir(os.path.expanduser('~/.hermes-kernels')))"


@pytest.fixture
def two_transports() -> Iterator[tuple[Any, Any, ProxyRoute]]:
    """``(looker's, server path's, its route)``: one run id (one sshd container); only the second
    goes through the fault proxy."""
    run_id, route = f"test-cut-claim-{uuid.uuid4().hex[:12]}", ProxyRoute()
    looker = make_transport("ssh", run_id=run_id, server=False)
    transport = make_transport("ssh", run_id=run_id, server=True, connect_via=route)
    try:
        yield looker, transport, route
    finally:
        transport.close()
        looker.close()
        route.close()


def test_a_start_whose_link_is_cut_during_the_claim_starts_on_a_new_connection(two_transports, kernels):
    looker_transport, transport, route = two_transports
    looker = start_kernel(looker_transport)
    kernels.append(looker)
    first = start_kernel(transport)
    kernels.append(first)
    with a_start_held_in_its_claim(looker, transport, first, KERNEL_DIRS) as (starting, (spare, spare_worker)):
        assert route.proxy is not None and route.proxy.reset() >= 1, "the link was cut"
        k = starting.result(timeout=60)  # was: KernelStartError ... sftp ... failed: SSH session not active
    kernels.append(k)

    result = k.execute("1 + 1")
    assert result.value == "2"
    assert result.kernel.note.startswith("kernel server unavailable ("), result.kernel.note
    assert "started by a plain spawn" in result.kernel.note
    wait_until(lambda: not {spare, spare_worker} & set(processes(looker)), 15.0,
               what="the stopped spare of the server whose stream was cut to end")
