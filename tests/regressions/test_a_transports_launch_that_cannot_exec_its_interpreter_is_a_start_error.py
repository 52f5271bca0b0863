"""Seen, writing a transport of one's own from docs/reference.md: a ``launch`` that runs the runner
with ``subprocess.Popen([spec.python, ...])`` directly (no ``nice`` or shell in front, which would
exit 127 and say so) let ``Popen``'s ``FileNotFoundError`` out of ``start_kernel`` bare: no
:class:`KernelStartError` (what a caller of ``start_kernel`` catches), no word of the transport,
and the contract's ``test_runner_dying_at_start_fails_fast_with_exit_status_and_stderr`` failed
on a traceback from the author's own code, not on what to change.

Now an ``OSError`` from ``launch`` is a :class:`KernelStartError` naming the transport, the
kernel and the OS error (the original chained); a :class:`TransportLostError` (an ``OSError``
too) is left as the transport raised it.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from pytest_hermes_kernel import KernelStartError, start_kernel
from pytest_hermes_kernel.errors import TransportLostError
from pytest_hermes_kernel.transports import Launched, LaunchSpec, Transport

MISSING = "/nonexistent/hermes-oc/python3"


class ExecsDirectly(Transport):
    """A launch that starts the runner's interpreter itself, as an author's first try does."""

    name = "direct"

    def launch(self, spec: LaunchSpec) -> Launched:
        subprocess.Popen([spec.python or sys.executable, "-c", "pass"], stdin=subprocess.DEVNULL)
        raise AssertionError("the interpreter was expected to be missing")

    def kill(self, launched: Launched) -> bool:
        return True

    def alive(self, launched: Launched) -> bool:
        return False


class HostGone(ExecsDirectly):
    def launch(self, spec: LaunchSpec) -> Launched:
        raise TransportLostError("the direct transport's host does not answer")


def test_an_interpreter_the_launch_cannot_exec_is_a_start_error_naming_the_transport() -> None:
    with pytest.raises(KernelStartError) as info:
        start_kernel(ExecsDirectly(), python=MISSING)

    text = str(info.value)
    assert text.startswith("the direct transport could not start the kernel runner: FileNotFoundError"), text
    assert MISSING in text and "No such file or directory" in text, text
    assert info.value.kernel_id and isinstance(info.value.__cause__, FileNotFoundError)


def test_a_transport_lost_error_from_the_launch_is_left_as_it_was_raised() -> None:
    with pytest.raises(TransportLostError, match="host does not answer"):
        start_kernel(HostGone())
