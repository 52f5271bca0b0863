"""The host harness's process starts clean, also under ``-W error`` (a CI exporting
``PYTHONWARNINGS=error``): the package never imports the module that ``python -m`` runs, so
runpy has nothing to warn about (it did: the host died at once and the test saw only
``HostGoneError``)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def test_the_harness_host_starts_under_warnings_as_errors() -> None:
    from pytest_hermes_kernel.faults.harness import _HOST_BOOT  # how HarnessKernel starts it

    out = subprocess.run([sys.executable, "-W", "error", "-c", _HOST_BOOT],
                         stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)

    assert out.returncode == 0 and "Warning" not in out.stderr, out.stderr


def test_a_harness_whose_kernel_cannot_start_leaves_no_pipe_open(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Its host is killed and the start error raised; the pipes to the host stayed open (the leak
    check reported two ``leaked fd: ... pipe`` after the test)."""
    from pytest_hermes_kernel.errors import KernelStartError
    from pytest_hermes_kernel.faults.harness import HarnessKernel

    before = set(os.listdir("/proc/self/fd"))
    with pytest.raises(KernelStartError):
        HarnessKernel("local", {"cwd": str(tmp_path / "no-such-dir"), "start_timeout": 30}, start_timeout=60)
    pipes = [fd for fd in set(os.listdir("/proc/self/fd")) - before
             if os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:")]
    assert not pipes, f"pipes left open: {pipes}"


def test_a_harness_asked_for_with_the_tests_transport_says_it_takes_a_name(hermes_transport, hermes_faults) -> None:
    """``hermes_faults.harness(transport)`` (docs/reference.md, "Faults in depth") takes a transport
    *name*: given the test's ``hermes_transport``, a newcomer's first try, it started a host process
    that failed with ``KernelStartError: the harness host could not start a <...LocalTransport object
    at 0x...> kernel: cannot pickle '_thread.lock' object``. Now a usage error says what to pass."""
    import re

    from pytest_hermes_kernel.errors import ConfigError

    with pytest.raises(ConfigError, match=re.escape(f"hermes_faults.harness({hermes_transport.name!r})")) as info:
        hermes_faults.harness(hermes_transport)
    assert "takes a transport name" in str(info.value) and "pickle" not in str(info.value)
