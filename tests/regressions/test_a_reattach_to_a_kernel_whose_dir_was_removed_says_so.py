"""Seen (left alone by the twelfth session, fixed 2026-12-06): a docker or ssh kernel whose cell
removed its own kernel dir (its default working dir) lost its unix socket with it; when its stream
then dropped, the re-attach tried for the whole ``reconnect_timeout`` (10.3 s measured) and the
result named only the drop ("broke while sending: connection reset"), not why no re-attach could
work.

Fixed: a re-attach looks at the socket path after it finds the runner alive (one exec more,
``transports/reattach.py``); a socket that is gone makes the loss final at once, and the result
says so: "no re-attach: the kernel runner (...) runs, but its socket .../sock is gone (No such
file or directory): no relay can reach it again (did a cell remove its kernel dir?)" (0.26 s).
"""

from __future__ import annotations

import pytest


@pytest.mark.hermes_transports("docker", "ssh")
def test_a_dropped_stream_of_a_kernel_without_its_socket_names_the_socket(hermes_kernel_factory, hermes_faults) -> None:
    kernel = hermes_kernel_factory()
    assert kernel.execute("import os, shutil\nhome = os.getcwd()\nos.chdir('/')\nshutil.rmtree(home)").status == "ok"
    hermes_faults.transport_drop(kernel, "reset")

    result = kernel.execute("1")

    assert result.status == "died" and result.kernel.reason == "transport_lost", result.summary()
    note = result.kernel.note
    assert "no re-attach" in note and "/sock is gone (No such file or directory)" in note, note
    assert f"{kernel.kernel_id}/sock" in note, note
