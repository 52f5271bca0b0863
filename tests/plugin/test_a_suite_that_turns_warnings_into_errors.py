"""A user's suite run with warnings made errors (``-W error::ResourceWarning``, ``-W
error::pytest.PytestUnraisableExceptionWarning``, ``python -X dev``) sees no warning of the kit's
own making: no unclosed socket or file, no running subprocess collected, no traceback at the end.

Each case runs the user's pytest in a subprocess under the strict setting and asserts its exit
status and that nothing of the kind was printed, anywhere in its output.
"""

from __future__ import annotations

import pytest

from tests.support import output_of

STRICT = ("-W", "error::ResourceWarning", "-W", "error::pytest.PytestUnraisableExceptionWarning")
NOISE = ("ResourceWarning", "PytestUnraisableExceptionWarning", "Exception ignored", "Traceback")

SESSION_KERNEL_NEVER_SHUT_DOWN = """
import pytest
from pytest_hermes_kernel import start_kernel

@pytest.fixture(scope="session")
def shared():
    yield start_kernel("local")  # never shut down: the leak check warns of it and ends it

def test_a(shared):
    shared.execute("a = 1")

def test_b(shared):
    assert shared.execute("a").value == "1"
"""


def test_a_local_kernel_the_leak_check_ended_leaves_no_unclosed_socket_to_turn_the_run_red(pytester, run):
    """Its handle's channel socket stayed open after the leak check ended the kernel: collected at
    pytest's end, ``ResourceWarning: unclosed <socket.socket ...>`` became a 40-line traceback from
    pytest's unconfigure and exit status 1 under ``-W error::...``, below ``2 passed, 1 warning``."""
    pytester.makepyfile(test_session=SESSION_KERNEL_NEVER_SHUT_DOWN)

    result = run(*STRICT, "-q")

    text = output_of(result)
    assert result.ret == 0, text
    result.assert_outcomes(passed=2, warnings=1)  # the HermesLeakWarning: the user's own leak
    assert "HermesLeakWarning" in text
    assert not [word for word in NOISE if word in text], text
