"""A helper that detaches from the test process (double fork, ``setsid``, an environment of its own,
no kernel marker) outlives the test unseen: its parent gone, it is init's child, no descendant of
the test process and carrying no ``HERMES_KERNEL_HOST_PID``. A transport whose launch leaves one
passes the contract suite green (found by a backend author's round, 2026-12-05): a known false pass.

A fix was tried and taken out the same day: the test process made a child subreaper during each
test adopted such a helper, but it adopted a daemon a session fixture starts to share with the
other xdist workers just the same, and a later test's check on that worker killed it (the
clean-clone run of f7792ac: the second docker engine of this repo's own suite, stopped under the
other workers). The last test here keeps that case passing."""

from __future__ import annotations

import re
import uuid

import psutil
import pytest

from tests.support import kill_quietly

GRACE = "--hermes-leak-grace=0.5"

#: ``detach(tag)``: a helper double-forked out of the test process, as a backend's launch might
#: leave one: ``setsid``, a clean environment, its parent exits at once.
DETACH = """
import subprocess

def detach(tag, seconds=300):
    subprocess.run(["sh", "-c", f"setsid sh -c 'sleep {seconds}; : {tag}' </dev/null >/dev/null 2>&1 &"],
                   env={"PATH": "/usr/bin:/bin"}, check=True)
"""

CONTRACT_CONFTEST = DETACH + """
import pytest
from pytest_hermes_kernel.transports.local import LocalTransport

class DetachedHelperTransport(LocalTransport):
    def launch(self, spec):
        detach("{tag}")
        return super().launch(spec)

@pytest.fixture
def hermes_transport():
    transport = DetachedHelperTransport()
    yield transport
    transport.close()
"""


def _running(tag: str) -> list[int]:
    """Pids of the live processes whose command line carries ``tag`` (this test's own helpers),
    and of their children (a helper's ``sleep``)."""
    out = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            if tag in " ".join(proc.info["cmdline"] or ()) and proc.info["status"] != psutil.STATUS_ZOMBIE:
                out += [proc.pid, *(child.pid for child in proc.children(recursive=True))]
        except psutil.NoSuchProcess:
            continue
    return out


@pytest.fixture
def tag() -> object:
    tag = f"he-detached-{uuid.uuid4().hex[:10]}"
    yield tag
    kill_quietly(_running(tag))  # a failed test's helpers


@pytest.mark.xfail(strict=True, reason="known false pass: a helper that detaches from the test process "
                   "(setsid, a clean environment, no kernel marker) goes to init and no leak probe sees it")
def test_a_transport_whose_launch_leaves_a_detached_helper_fails_the_contract(pytester, run, tag) -> None:
    pytester.makeconftest(CONTRACT_CONFTEST.replace("{tag}", tag))
    pytester.makepyfile(test_contract="from pytest_hermes_kernel.contract import *  # noqa: F401,F403\n")

    result = run(GRACE, "-q", "-k", "test_namespace_persists_across_cells")

    out = result.stdout.str()
    result.assert_outcomes(passed=1, errors=1)
    assert re.search(rf"leaked child process: pid \d+: sh -c sleep 300; : {tag}", out), out[-3000:]
    assert not _running(tag), "the check ended the helper it reported"


@pytest.mark.xfail(strict=True, reason="known false pass: a helper that detaches from the test process "
                   "(setsid, a clean environment, no kernel marker) goes to init and no leak probe sees it")
def test_a_detached_helper_a_test_leaves_is_named_and_ended(pytester, run, tag) -> None:
    pytester.makepyfile(test_detach=DETACH + f"""
def test_leaves_a_helper():
    detach("{tag}")

def test_clean():
    pass
""")

    result = run(GRACE, "--hermes-leak-check=error")

    out = result.stdout.str()
    result.assert_outcomes(passed=2, errors=1)
    assert "test_leaves_a_helper: resources outlived the test" in out and f"sh -c sleep 300; : {tag}" in out, out[-3000:]
    assert "test_clean: resources" not in out, out[-3000:]
    assert not _running(tag)


def test_a_daemon_a_session_fixture_shares_with_other_workers_is_not_called_a_leak(pytester, run, tag) -> None:
    """A session fixture that starts a detached daemon and leaves it running (the other xdist workers
    use it; the last one stops it) leaks nothing: it must be neither reported nor ended."""
    pytester.makeconftest(DETACH + f"""
import pytest

@pytest.fixture(scope="session")
def shared_daemon():
    detach("{tag}")
    yield  # left running: another worker stops it
""")
    pytester.makepyfile(test_shared="def test_one(shared_daemon):\n    pass\n\ndef test_two(shared_daemon):\n    pass\n")

    result = run(GRACE, "--hermes-leak-check=error")

    result.assert_outcomes(passed=2)
    assert _running(tag), "the check ended the daemon the other workers share"
