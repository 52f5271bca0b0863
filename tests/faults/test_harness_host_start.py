"""The host harness's process starts clean, also under ``-W error`` (a CI exporting
``PYTHONWARNINGS=error``): the package never imports the module that ``python -m`` runs, so
runpy has nothing to warn about (it did: the host died at once and the test saw only
``HostGoneError``)."""

from __future__ import annotations

import subprocess
import sys


def test_the_harness_host_starts_under_warnings_as_errors() -> None:
    out = subprocess.run([sys.executable, "-W", "error", "-m", "pytest_hermes_kernel.faults._harness_host"],
                         stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)

    assert out.returncode == 0 and "Warning" not in out.stderr, out.stderr
