"""An ssh transfer whose connection drops (``docker pause`` of the sshd: no FIN, no RST) ends
within the keepalive bound as a :class:`FileTransferError` naming the entry, leaving nothing;
it raised paramiko's bare ``SSHException: Server connection dropped:``, naming no path (and one
started once the connection was found dead, a bare ``TransportLostError``).

The test has an sshd container of its own (its own ``run_id``): other tests keep theirs.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_hermes_kernel.errors import FileTransferError
from pytest_hermes_kernel.transports.ssh.files import SftpFiles
from pytest_hermes_kernel.transports.ssh.transport import SshTransport
from tests.support import transport_of_its_own, wait_until

pytestmark = pytest.mark.usefixtures("docker_ready")


@pytest.fixture
def own_sshd() -> Iterator[SshTransport]:
    """An ssh transport with an sshd container of its own (removed when it closes); keepalives
    every 1 s, so that the pause is found within 3 s, not the default 9 s."""
    with transport_of_its_own("ssh", server=True, keepalive_interval=1.0, keepalive_missed=3) as transport:
        assert isinstance(transport, SshTransport)
        yield transport


def test_a_download_whose_sftp_session_drops_is_an_error_naming_the_file(own_sshd: SshTransport, start: Any,
                                                                         tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    k = start(own_sshd)
    assert k.execute("open('big', 'wb').write(b'b' * (4 << 20))").status == "ok"
    fetch = SftpFiles.fetch
    paused: list[float] = []

    def pause_then_fetch(self: SftpFiles, *args: Any) -> None:
        own_sshd.sshd.docker.api.pause(own_sshd.sshd_container_id)  # between the listing and the copy
        paused.append(time.monotonic())
        fetch(self, *args)

    monkeypatch.setattr(SftpFiles, "fetch", pause_then_fetch)
    bound = own_sshd.keepalive_interval * own_sshd.keepalive_missed + 6.0
    try:
        with pytest.raises(FileTransferError) as info:
            k.download("big", tmp_path / "dl")
        took = time.monotonic() - paused[0]
    finally:
        own_sshd.sshd.docker.api.unpause(own_sshd.sshd_container_id)
    assert info.value.path == "big" and "SFTP session ended" in str(info.value), info.value
    assert took <= bound, f"took {took:.1f} s"
    assert list(tmp_path.iterdir()) == []


def test_a_transfer_to_an_ssh_host_that_stopped_answering_is_an_error_naming_the_path(
        own_sshd: SshTransport, start: Any, tmp_path: Path) -> None:
    """Once the connection was found dead, the transfer's new connection raised a bare
    TransportLostError ("cannot reach ssh host ..."), naming no path."""
    k = start(own_sshd)
    assert k.execute("open('a', 'w').write('a')").status == "ok"
    conn = own_sshd._connection()
    own_sshd.sshd.docker.api.pause(own_sshd.sshd_container_id)
    try:
        wait_until(lambda: not conn.usable, 30, what="the paused connection found dead (keepalives: ~3 s)")
        with pytest.raises(FileTransferError) as info:
            k.download("a", tmp_path / "a")
    finally:
        own_sshd.sshd.docker.api.unpause(own_sshd.sshd_container_id)
    assert info.value.path == "a" and "cannot be reached" in str(info.value), info.value
    assert list(tmp_path.iterdir()) == []
