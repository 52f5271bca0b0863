"""Seen (a loaded engine, two xdist workers starting sshd containers): an ssh transport's start
failed with ``KernelStartError: could not read the sshd container's host key
/etc/ssh/ssh_host_ed25519_key.pub: None``. The key file was there; the engine had answered the
``docker exec`` that reads it with its output lost (moby/moby#27289, the loss the kit's scans
already ask again for), and the read was never tried twice.

Now the read asks again, as the scans do, until an answer is complete (its end line came). The
engine is faked here: when the read asks again is what is under test.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_hermes_kernel.errors import KernelStartError
from pytest_hermes_kernel.transports.ssh.sshd import SshdContainer

KEY = b"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl root@c0ffee\n"


class LossyApi:
    """A docker API whose exec answers come back empty ``lost`` times, then as the command says."""

    def __init__(self, lost: int) -> None:
        self.lost, self.asked = lost, 0

    def exec_create(self, container_id: str, cmd: list[str], **_: Any) -> dict[str, str]:
        self.cmd = cmd
        return {"Id": "exec"}

    def exec_start(self, exec_id: str, **_: Any) -> tuple[bytes | None, bytes | None]:
        self.asked += 1
        if self.asked <= self.lost:
            return None, None
        return KEY + (b"hermes-scan-end\n" if "hermes-scan-end" in " ".join(self.cmd) else b""), None


def _container(api: LossyApi) -> SshdContainer:
    sshd = SshdContainer.__new__(SshdContainer)  # no engine: only the read is used
    sshd.docker = type("Client", (), {"api": api})()
    return sshd


def test_a_host_key_read_whose_answer_was_lost_is_asked_again() -> None:
    api = LossyApi(lost=2)
    assert _container(api)._read_host_key("c0ffee") == KEY.decode().rsplit(" ", 1)[0]
    assert api.asked == 3


def test_a_host_key_that_never_comes_is_still_an_error_naming_the_file() -> None:
    with pytest.raises(KernelStartError, match="could not read the sshd container's host key"):
        _container(LossyApi(lost=99))._read_host_key("c0ffee")
