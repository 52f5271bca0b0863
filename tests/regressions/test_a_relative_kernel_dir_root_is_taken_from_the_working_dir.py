"""Found by a CI-maintainer helper and a hostile-environment helper, each on its own (2026-12-05): a CI job that set ``PYTEST_HERMES_KERNEL_DIR`` to a
short relative path (the README says to keep the root short: a kernel dir holds sockets), say
``PYTEST_HERMES_KERNEL_DIR=kd``, had every local test error at setup: ``KernelStartError: the local
kernel runner died during start (exit code 2), before its hello ... can't open file
'/proj/kd/hermes-kernel-31189-cq3_95uk/kd/hermes-kernel-31189-cq3_95uk/hermes-runner-....pyz'``:
the runner runs in its kernel dir, where the relative path to its zipapp points nowhere. The root
is now taken from the working directory at the start, as the temp dir is; on both paths, and the
leak check finds nothing left under it.
"""

from __future__ import annotations

import os

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports import make_transport


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
def test_a_relative_kernel_dir_root_runs_kernels_under_it(tmp_path, monkeypatch, server):
    (tmp_path / "kd").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTEST_HERMES_KERNEL_DIR", "kd")
    transport = make_transport("local", server=server)
    try:
        with start_kernel(transport) as kernel:
            result = kernel.execute("import os; os.getcwd()")
            assert result.status == "ok", result
            assert result.value.strip("'").startswith(str(tmp_path / "kd") + os.sep), result.value
    finally:
        transport.close()
    assert [n for n in os.listdir(tmp_path / "kd") if n.startswith("hermes-kernel-")] == []
