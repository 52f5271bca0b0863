"""Seen following README's post-mortem flow on a kept kernel whose cell had started a daemon (a
helper in a session of its own, ``start_new_session=True``, 2026-12-07): ``hermes-kernel sweep
--kept --kernel ID``, which the README says "ends it: nothing of it is left", ended the kernel and
said ``sweep: 1 kept kernel``, but the daemon ran on, reparented to init, until a later plain
``hermes-kernel sweep`` killed it as a kernel process whose host is gone. The kept sweep now ends
what the kernels it ended left on this machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import gone, wait_until

SUITE = """
from pathlib import Path

def test_fails(hermes_kernel):
    r = hermes_kernel.execute("import subprocess; d = subprocess.Popen(['sleep', '300'], start_new_session=True); d.pid")
    Path("daemon.txt").write_text(f"{hermes_kernel.kernel_id} {r.value}")
    assert False, "deliberate failure"
"""


@pytest.fixture
def private_tmpdir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A ``TMPDIR`` of the test's own for the run and the CLI (the kept records are there)."""
    tmp = Path(tempfile.mkdtemp(prefix="hk-", dir="/tmp"))  # short: a unix socket path has 108 bytes
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.delenv("PYTEST_HERMES_KERNEL_DIR", raising=False)
    yield tmp
    _hermes("sweep", "--kept")
    shutil.rmtree(tmp, ignore_errors=True)


def _hermes(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_hermes_kernel.cli", *args], capture_output=True, text=True,
                          timeout=60, env=dict(os.environ), stdin=subprocess.DEVNULL)


def test_sweep_kept_ends_the_daemon_of_the_kernel_it_ends(pytester: pytest.Pytester, private_tmpdir: Path) -> None:
    pytester.makepyfile(test_daemon=SUITE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--hermes-transport=local",
                                           "--hermes-keep-failed", timeout=120)
    result.assert_outcomes(failed=1)
    kernel_id, daemon = (pytester.path / "daemon.txt").read_text().split()
    try:
        assert not gone(int(daemon)), "the daemon should still run while its kernel is kept"

        swept = _hermes("sweep", "--kept", "--kernel", kernel_id)

        assert swept.returncode == 0, swept.stderr
        assert f"removed kept kernel {kernel_id}" in swept.stdout, swept.stdout
        wait_until(lambda: gone(int(daemon)), 5.0, what=f"the kept kernel's daemon {daemon} to end with it")
        assert f"killed kernel process {daemon}" in swept.stdout, swept.stdout
    finally:
        if not gone(int(daemon)):
            os.kill(int(daemon), 9)
