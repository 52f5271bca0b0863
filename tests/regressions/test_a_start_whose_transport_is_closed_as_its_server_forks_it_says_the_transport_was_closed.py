"""Found by a breaker helper (the spare kernel, 2026-12-07): a docker or ssh transport closed
(``transport.close()``, from another thread, or the plugin's session end) while one of its kernels
started, here while its server claimed its spare (kernel/runner/spare.py). The server's stream
ended, so the start fell back to a plain spawn on the transport closed by then. Where the close
removed the container, docker said ``could not start a kernel runner in container ...: 404 Client
Error ... Could not find the file /tmp in container ...`` with ``Hint: does the image have python3?
is the container running?``, ssh ``sftp to hermes@127.0.0.1:PORT failed: SSH session not active``
with ``Hint: is the host up and the key accepted?``: a user went looking at a healthy image or host.
Where another transport of the run kept it (as here), docker started the kernel on the closed
transport anyway, and ssh said ``could not prepare ... over sftp: Failure`` with ``Hint: ... is it
read-only, or the host's disk full?``. A closed transport starts no kernel
(``tests/transports/test_closed_transports_say_so.py``), and such a start now says the transport was
closed and what to do.

The close lands inside the claim: the spare is stopped (SIGSTOP, from a kernel of another transport
on the same host: the server relays nothing while it claims), so the server, having made the new
kernel's dir, waits for its answer (5 s at most).
"""

from __future__ import annotations

import uuid

import pytest

from pytest_hermes_kernel import KernelStartError, start_kernel
from pytest_hermes_kernel.transports import make_transport
from tests.support import kernels_shut_down_after, wait_until  # noqa: F401 - fixture
from tests.transports.test_a_remote_kernel_from_the_servers_spare import a_start_held_in_its_claim, processes

#: The kernel root on each transport's kernel host (docker: in the container; ssh: the login's home).
ROOTS = {"docker": "/tmp/hermes-kernels", "ssh": "~/.hermes-kernels"}


@pytest.mark.parametrize("name", ["docker", "ssh"])
def test_a_start_whose_transport_is_closed_during_the_claim_says_so(name: str, kernels: list) -> None:
    listing = f"import os; sorted(os.listdir(os.path.expanduser({ROOTS[name]!r})))"
    run_id = f"test-closed-claim-{uuid.uuid4().hex[:12]}"
    looker_transport = make_transport(name, run_id=run_id, server=False)  # the same kernel host
    transport = make_transport(name, run_id=run_id, server=True)
    try:
        looker = start_kernel(looker_transport)
        kernels.append(looker)
        first = start_kernel(transport)
        kernels.append(first)
        with a_start_held_in_its_claim(looker, transport, first, listing) as (starting, (spare, spare_worker)):
            transport.close()
            with pytest.raises(KernelStartError) as refused:
                kernels.append(starting.result(timeout=60))
        wait_until(lambda: not {spare, spare_worker} & set(processes(looker)), 15.0,
                   what="the stopped spare of the closed transport's server to end")
    finally:
        transport.close()
        looker_transport.close()

    message = str(refused.value)
    assert f"this {name} transport was closed" in message, message
    assert "start the kernel on an open transport" in message, message
    assert "does the image have python3" not in message and "is the host up" not in message, message
