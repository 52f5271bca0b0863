"""Found by the breaker helper on hostile host environments (2026-12-05): a relative
``PYTEST_HERMES_KERNEL_DIR`` (``relkd``, as a CI script writes it) failed every local kernel start,
on both paths: "the local kernel runner died during start (exit code 2), before its hello ...
can't open file '/work/relkd/hermes-kernel-.../relkd/hermes-kernel-.../hermes-runner-....pyz'":
the runner, started in its kernel dir, was named by the relative path again. The root is now
made absolute against the working dir, as ``tempfile`` does with a relative ``TMPDIR``.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports import make_transport


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
def test_a_local_kernel_starts_under_a_relative_root(tmp_path, monkeypatch, server):
    (tmp_path / "relkd").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTEST_HERMES_KERNEL_DIR", "relkd")
    transport = make_transport("local", server=server)
    try:
        with start_kernel(transport, start_timeout=30) as kernel:
            where = kernel.execute("import os; os.getcwd()").value
            assert where is not None and where.startswith(repr(str(tmp_path / "relkd" / "hermes-kernel-"))[:-1]), where
    finally:
        transport.close()
    assert list((tmp_path / "relkd").iterdir()) == []
