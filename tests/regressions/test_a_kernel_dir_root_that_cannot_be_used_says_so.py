"""Found by a fresh-user helper (2026-12-05): with ``PYTEST_HERMES_KERNEL_DIR`` (the root of local
kernel dirs, which the run's usage error lists among the known variables) naming a directory that
does not exist, every local test errored at setup with a bare ``FileNotFoundError: [Errno 2] No
such file or directory: '/nonexist/hermes-kernel-32473-yzw4p3s_'`` traceback from
``tempfile.mkdtemp``, naming neither the variable nor what to do. A kernel start now raises
``KernelStartError`` naming the root, where it came from and the hint; on both paths.
"""

from __future__ import annotations

import os

import pytest

from pytest_hermes_kernel import KernelStartError, start_kernel
from pytest_hermes_kernel.transports import make_transport


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
@pytest.mark.parametrize("how", ["missing", "a file"])
def test_a_kernel_dir_root_that_cannot_be_used_fails_the_start_naming_it(tmp_path, monkeypatch, server, how):
    root = tmp_path / "kernels"
    if how == "a file":
        root.write_text("not a dir")
    monkeypatch.setenv("PYTEST_HERMES_KERNEL_DIR", str(root))
    transport = make_transport("local", server=server)
    try:
        with pytest.raises(KernelStartError) as info:
            with start_kernel(transport):
                pass
    finally:
        transport.close()
    text = str(info.value)
    assert f"cannot make a kernel dir under {root} ($PYTEST_HERMES_KERNEL_DIR)" in text, text
    assert "Hint: make it, or point PYTEST_HERMES_KERNEL_DIR at a writable directory" in text, text
    assert os.listdir(tmp_path) == (["kernels"] if how == "a file" else []), os.listdir(tmp_path)  # nothing made
