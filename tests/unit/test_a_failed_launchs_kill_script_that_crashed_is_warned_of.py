"""ssh ``end_kernel`` after a failed launch (eb6632a): a kill script that printed neither ``gone``
nor ``left`` was taken for a host that runs no command (an sftp-only login) and logged at DEBUG only.
Seen (breaker review, 2026-12-06): a kill script that ran and crashed (a traceback on stderr, exit
status 1, nothing on stdout) said nothing either, though the failed launch's processes may run on.
Now only a host that does not run an ``echo`` as given is taken for one that runs no command; a
host that does gets the warning, as before eb6632a.
"""

from __future__ import annotations

import logging

import pytest

from pytest_hermes_kernel.transports.ssh.address import SHELL_CHECK
from pytest_hermes_kernel.transports.ssh.probes import end_kernel


class _Transport:
    python = "python3"

    def __init__(self, said: tuple[int, bytes]) -> None:
        self.said = said

    def run_script(self, conn, script, *args, python=None):  # noqa: ANN001, ANN201
        return self.said


class _Conn:
    target = "hermes@host:22"

    def __init__(self, sftp_only: bool) -> None:
        self.sftp_only = sftp_only

    def run(self, command: str, *, timeout: float):  # noqa: ANN201
        if self.sftp_only:
            return 1, b"This service allows sftp connections only.\n", b""
        return 0, (SHELL_CHECK + "\n").encode() if SHELL_CHECK in command else b"", b""


@pytest.mark.parametrize(("sftp_only", "warned"), [(False, True), (True, False)], ids=["crashed", "sftp-only"])
def test_a_kill_script_that_crashed_after_a_failed_launch_is_warned_of(sftp_only, warned, caplog) -> None:
    said = (1, b"This service allows sftp connections only.\n") if sftp_only else (1, b"")
    caplog.set_level(logging.DEBUG, logger="pytest_hermes_kernel")
    end_kernel(_Transport(said), _Conn(sftp_only), "", "k1", "failed launch")
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert bool(warnings) == warned, warnings
    if warned:
        assert "could not end all its processes" in warnings[0], warnings
