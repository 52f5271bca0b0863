"""Found by a breaker helper (the spare kernel, 2026-12-07): the ssh connection was cut (a dropped
link: the fault proxy's reset) while a start put the runner file into its kernel dir over SFTP, on
the spawn path or in the plain spawn a failed server fork falls back to. Depending on where the
cut landed, the start raised a bare ``EOFError`` (the SFTP session's close on the cut link, over
the error) or paramiko's ``SSHException: Server connection dropped``, out of ``start_kernel`` as
they were, or ``KernelStartError: ssh transport: could not prepare ... over sftp: Socket is
closed`` with ``Hint: the login user must be able to write there: is it read-only, or the host's
disk full?``: a user went looking at a healthy disk. Each now says the connection was cut, and the
next start connects anew and works (it took the cut connection, not yet seen dead, at times: ``sftp
to ... failed:`` with ``Hint: is the host up and the key accepted?``).

The cut is made where the runner goes out: the transport's ``put_file`` is wrapped to reset the
link first (the seam the kit's own code calls; the reset is the fault proxy's, as
``hermes_transport_drop`` makes it).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_hermes_kernel import KernelStartError, start_kernel
from pytest_hermes_kernel.faults.proxy import ProxyRoute
from pytest_hermes_kernel.transports import make_transport
from pytest_hermes_kernel.transports.ssh import rundir
from tests.support import kernels_shut_down_after  # noqa: F401 - fixture


@pytest.fixture
def routed() -> Iterator[tuple[Any, ProxyRoute]]:
    """A spawn-path ssh transport of its own run, through a fault proxy; its route."""
    route = ProxyRoute()
    transport = make_transport("ssh", run_id=f"test-cut-put-{uuid.uuid4().hex[:12]}", server=False, connect_via=route)
    try:
        yield transport, route
    finally:
        transport.close()
        route.close()


@pytest.mark.parametrize("cut_after_bytes", [0, 64 * 1024], ids=["before-the-write", "during-the-write"])
def test_a_start_whose_link_is_cut_as_its_runner_goes_out_says_so(routed, kernels, monkeypatch, cut_after_bytes):
    transport, route = routed
    first = start_kernel(transport)
    kernels.append(first)
    put_file = rundir.put_file

    def cut_then_put(sftp: Any, path: str, data: bytes) -> None:
        if cut_after_bytes:
            with sftp.open(path + ".part", "wb") as fh:
                fh.write(data[:cut_after_bytes])
        assert route.proxy is not None and route.proxy.reset() >= 1, "the link was cut"
        put_file(sftp, path, data)

    monkeypatch.setattr(rundir, "put_file", cut_then_put)
    with pytest.raises(KernelStartError) as cut:
        kernels.append(start_kernel(transport))
    monkeypatch.undo()

    message = str(cut.value)
    assert "was cut while" in message and "Hint: the next start tries a new connection" in message, message
    assert "disk full" not in message, message
    again = start_kernel(transport)
    kernels.append(again)
    assert again.execute("1 + 1").value == "2"
