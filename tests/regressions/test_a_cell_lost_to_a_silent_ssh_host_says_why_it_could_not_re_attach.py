"""Seen reproducing "state lost after a transport drop" with ``hermes_transport_drop(mode="blackhole")``
on ssh (2026-12-07): the cell came back ``died``, ``transport_lost``, noted only ``channel lost: ...
closed: end of stream (the kernel runner or its relay is gone) (the runner could not be reached,
so it was not seen gone ...)``: the re-attach to the silent host had failed, and the note did not
say how (a connect unanswered), as it does for a re-attach that fails otherwise. A paused sshd
shows the same. The note now ends with the last re-attach's error.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel.transports.ssh.transport import SshTransport
from tests.regressions.test_ssh_paused_host import _lost_to_a_pause

pytestmark = pytest.mark.usefixtures("docker_ready")

#: own_sshd's keepalives: the pause is noticed after 2 s, not the default 9 s.
SSHD_OPTIONS = {"keepalive_interval": 1.0, "keepalive_missed": 2}


def test_the_loss_names_the_failed_re_attach(own_sshd: SshTransport, start) -> None:  # type: ignore[no-untyped-def]
    k = start(own_sshd, reconnect_timeout=3.0)
    assert k.execute("x = 1").status == "ok"
    lost = _lost_to_a_pause(own_sshd, k)
    note = lost.kernel.note or ""
    assert "; the last re-attach: " in note, note
    why = note.partition("; the last re-attach: ")[2]
    assert "cannot reach ssh host" in why or "ssh host not answering" in why, note
