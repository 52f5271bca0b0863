"""Found by a helper (2026-12-07): an ssh transport that was closed (``transport.close()``, the
plugin's session end) still started kernels when its host stayed up: another transport of the
run kept the shared sshd container running, or the transport named a ``target=`` host. On the
kernel-server path the start simply worked, a kernel nobody would end with the transport's
close; on the spawn path it said ``this ssh transport was closed during the kernel's start``,
though the close came long before it. A closed docker transport refuses every start
(``hosts.refuse_if_closed()``); a closed ssh transport now does the same, on both paths, saying
it was closed and what to do (``CLOSED_TRANSPORT_HINT``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_hermes_kernel import KernelStartError, start_kernel
from pytest_hermes_kernel.errors import CLOSED_TRANSPORT_HINT
from pytest_hermes_kernel.transports import make_transport
from tests.support import kernels_shut_down_after  # noqa: F401 - fixture


@pytest.fixture(scope="module")
def keeper() -> Iterator[Any]:
    """An ssh transport of a run of its own with a kernel: it keeps the run's sshd container running."""
    transport = make_transport("ssh", run_id=f"test-closed-kept-{uuid.uuid4().hex[:12]}", server=False)
    kernel = start_kernel(transport)
    try:
        yield transport
    finally:
        kernel.shutdown()
        transport.close()


def _other(keeper: Any, host: str, server: bool) -> Any:
    """A second transport onto the keeper's sshd: of the same run, or naming it as a ``target=``."""
    if host == "run":
        return make_transport("ssh", run_id=keeper.sshd.run_id, server=server)
    record = keeper.sshd.record
    return make_transport("ssh", target=f"{record['user']}@{record['host']}:{record['port']}", server=server,
                          key_filename=record["key_file"], host_key=record["host_key"])


@pytest.mark.parametrize("host", ["run", "target"], ids=["same-run", "target"])
@pytest.mark.parametrize("server", [True, False], ids=["kernel-server", "spawn"])
def test_a_start_on_a_closed_ssh_transport_is_refused(keeper, kernels, host: str, server: bool) -> None:
    transport = _other(keeper, host, server)
    try:
        used = start_kernel(transport)  # it has a connection (and a server) before its close
        assert used.execute("1 + 1").value == "2"
        used.shutdown()
    finally:
        transport.close()

    with pytest.raises(KernelStartError) as refused:
        kernels.append(start_kernel(transport))

    message = str(refused.value)
    assert "this ssh transport was closed: it starts no kernel any more" in message, message
    assert message.endswith(CLOSED_TRANSPORT_HINT), message
