"""Found by a helper (2026-12-07): the ssh connection was cut (a dropped link: the fault proxy's
reset) while a start put its new kernel server's runner file into the server's dir over SFTP
(``kernel_server.start_server``). Depending on where the cut landed, the start raised a bare
``EOFError`` (the SFTP session's close on the cut link, over the error) or paramiko's
``SSHException``, out of ``start_kernel`` as they were: no word of the cut link, nor of what to do.
The same cut in a kernel dir's put says so (``test_an_ssh_start_whose_link_is_cut_as_its_runner_is_put_says_the_link_was_cut``);
a server that cannot start is not an error of its own, so this start now falls back to a plain
spawn on a new connection and the kernel starts, its first result's ``kernel.note`` naming the
cut link.

The cut is made where the server's runner goes out: ``put_file`` (the seam the kit's own code
calls) is wrapped to reset the link once, first (the reset is the fault proxy's, as
``hermes_transport_drop`` makes it).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.faults.proxy import ProxyRoute
from pytest_hermes_kernel.transports import make_transport
from pytest_hermes_kernel.transports.ssh import rundir
from tests.support import kernels_shut_down_after  # noqa: F401 - fixture


@pytest.fixture
def routed() -> Iterator[tuple[Any, ProxyRoute]]:
    """A kernel-server ssh transport of its own run, through a fault proxy; its route."""
    route = ProxyRoute()
    transport = make_transport("ssh", run_id=f"test-cut-server-{uuid.uuid4().hex[:12]}", server=True,
                               connect_via=route)
    try:
        yield transport, route
    finally:
        transport.close()
        route.close()


@pytest.mark.parametrize("cut", ["before", "during", "after"], ids=lambda cut: f"{cut}-the-write")
def test_a_start_whose_link_is_cut_as_its_server_goes_out_starts_on_a_new_one(routed, kernels, monkeypatch, cut):
    transport, route = routed
    put_file, cuts = rundir.put_file, []

    def cut_link() -> None:
        assert route.proxy is not None and route.proxy.reset() >= 1, "the link was cut"

    def cut_once_then_put(sftp: Any, path: str, data: bytes) -> None:
        if cuts:
            return put_file(sftp, path, data)
        cuts.append(path)  # the server's runner file: the first put of this transport's first start
        if cut == "during":
            with sftp.open(path, "wb") as fh:
                fh.write(data[:64 * 1024])
                cut_link()
                fh.write(data[64 * 1024:])
            return None
        if cut == "before":
            cut_link()
        put_file(sftp, path, data)
        if cut == "after":  # its next step (the SFTP session's close, the server's exec) finds the link cut
            cut_link()
        return None

    monkeypatch.setattr(rundir, "put_file", cut_once_then_put)
    kernel = start_kernel(transport)
    kernels.append(kernel)
    monkeypatch.undo()

    assert cuts and "/server-" in cuts[0], cuts  # the cut landed in the server's start
    result = kernel.execute("1 + 1")
    assert result.value == "2"
    note = result.kernel.note
    assert "kernel server unavailable" in note and "was cut while" in note, note
    again = start_kernel(transport)  # a server starts on the new connection, and forks this one
    kernels.append(again)
    assert again.execute("2 + 2").value == "4"
