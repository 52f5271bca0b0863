"""Every public name of ``pytest_hermes_kernel`` is there to be found: ``dir()`` (a REPL's or an
IDE's completion) lists it, and ``getattr`` gives it.

The names that are not exceptions are imported on first use (the plugin's import stays free of
the kernel core), and ``dir(pytest_hermes_kernel)`` listed none of them (found by a breaker helper
on 2026-12-05): ``start_kernel``, ``aexecute``, ``KernelRegistry`` and eleven more were missing
from a REPL's completion although ``from pytest_hermes_kernel import start_kernel`` worked; so were
the transport classes of ``pytest_hermes_kernel.transports`` (``FileCellTransport``, ...).
"""

from __future__ import annotations

import subprocess
import sys

import pytest_hermes_kernel
import pytest_hermes_kernel.transports


def test_dir_lists_every_public_name():
    listed = dir(pytest_hermes_kernel)
    assert [n for n in pytest_hermes_kernel.__all__ if n not in listed] == []
    for name in pytest_hermes_kernel.__all__:
        assert getattr(pytest_hermes_kernel, name) is not None


def test_dir_of_the_transports_lists_the_transport_classes():
    listed = dir(pytest_hermes_kernel.transports)
    for name in ("LocalTransport", "DockerTransport", "SshTransport", "FileCellTransport", "LocalShellBackend"):
        assert name in listed, name


def test_dir_imports_nothing_of_the_kernel_core():
    code = ("import sys, pytest_hermes_kernel as p\n"
            "names = dir(p)\n"
            "assert 'start_kernel' in names, names\n"
            "assert 'pytest_hermes_kernel.kernel.handle' not in sys.modules, 'dir() imported the kernel core'\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
