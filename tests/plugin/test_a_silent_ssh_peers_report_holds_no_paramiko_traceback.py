"""A failed test whose ssh peer went silent shows the kit's account, not paramiko's tracebacks.

Found by the user-reproduction round (2026-12-06): under ``hermes_transport_drop(mode="blackhole")``
on ssh the cell ends ``died``, ``reason="transport_lost"``, as documented; the failed test's
report then held a "Captured log call" section of ~25 ERROR lines from paramiko's own thread
(``Exception (client): Error reading SSH protocol banner[Errno 9] Bad file descriptor`` and two
chained tracebacks), a re-attach try the kit had given up and closed. It read as a crash of the
kit. The kit reports a failed connect itself, so paramiko's banner error and its traceback are
dropped from the kit's log channel, as its refused channel opens already were.

The inner run's ssh transport pings every 1 s and gives up after 2 missed (the default 3 s x 3
made each attempt wait 9 s for the same end; no marker option sets a transport's keepalive, so its
conftest registers ``ssh`` with them): the attempts' silent spells, the re-attach try and its
banner error are the same, 4 x ~3.7 s instead of 4 x ~10.7 s.
"""

from __future__ import annotations

CONFTEST = """
from pytest_hermes_kernel.transports import SshTransport, register_transport


def quick_keepalive_ssh(**options):
    return SshTransport(**{**options, "keepalive_interval": 1.0, "keepalive_missed": 2})


register_transport("ssh", quick_keepalive_ssh)
"""

TEST = """
import pytest


@pytest.mark.parametrize("attempt", range(4))  # paramiko's thread is not always in its banner read
@pytest.mark.hermes_transport_drop(mode="blackhole", during_cell=2, delay=0.3)
def test_silent_peer(hermes_kernel, attempt):
    hermes_kernel.execute("notes = ['a']")
    r = hermes_kernel.execute("import time; time.sleep(3); notes.append('b')")
    assert r.status == "ok", r.summary()
"""


def test_the_report_of_a_silent_ssh_peer_has_no_paramiko_traceback(pytester, run) -> None:  # type: ignore[no-untyped-def]
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_silent=TEST)

    result = run("-q", "--hermes-transport=ssh")

    out = result.stdout.str()
    result.assert_outcomes(failed=4)
    assert "reason=transport_lost" in out, out[-3000:]  # the kit's own account is there
    assert "paramiko.transport" not in out and "Traceback (most recent call last)" not in out, out[-5000:]
