"""A kernel dir holding a tree deeper than Python's recursion limit is removed at shutdown.

A kernel dir is its cells' working dir, and ``shutil.rmtree`` before Python 3.12 recurses once
per level: a cell that made 1,500 nested dirs there made the local ``shutdown()`` raise
``RecursionError`` (``ignore_errors=True`` does not catch it) with the dir left behind, and the
stale-dir sweep of a later run raised it too. Now such a tree goes by ``rm -rf``
(``kernel/runner/trees.py``; the kernel servers in a container or on an ssh host and the scripts
that reap a spawned runner there use it too).
"""

from __future__ import annotations

import os
import time

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.kernel.runner.trees import remove_tree
from pytest_hermes_kernel.transports import make_transport
from pytest_hermes_kernel.transports.kernel_dirs import sweep_stale_kernel_dirs
from tests.support import NEST_DIRS_CELL, nest_dirs, tmp_path_for_deep_trees  # noqa: F401 - this module's tmp_path


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
def test_a_local_shutdown_removes_a_tree_past_the_recursion_limit(server: bool) -> None:
    transport = make_transport("local", server=server)
    try:
        kernel = start_kernel(transport)
        kdir = kernel.execute(NEST_DIRS_CELL).value.strip("'")
        end = kernel.shutdown()  # it raised RecursionError
        assert end.confirmed and not os.path.lexists(kdir), (end, kdir)
    finally:
        transport.close()


def test_the_stale_kernel_dir_sweep_removes_a_tree_past_the_recursion_limit(tmp_path) -> None:
    stale = tmp_path / "hermes-kernel-0000"
    stale.mkdir()
    nest_dirs(str(stale))
    old = time.time() - 10_000
    os.utime(stale, (old, old))

    assert sweep_stale_kernel_dirs(60.0, root=str(tmp_path)) == 1  # it raised RecursionError
    assert not stale.exists()


def test_remove_tree_says_whether_the_tree_is_gone(tmp_path) -> None:
    deep = tmp_path / "deep"
    deep.mkdir()
    nest_dirs(str(deep))
    (tmp_path / "target").mkdir()
    (tmp_path / "target" / "kept").write_text("x")
    os.symlink(tmp_path / "target", deep / "link")

    assert remove_tree(str(deep)) and not deep.exists()
    assert (tmp_path / "target" / "kept").read_text() == "x"  # a link is removed, never followed
    assert remove_tree(str(tmp_path / "never-was"))


def test_a_failed_download_of_a_tree_past_the_recursion_limit_raises_its_own_error(tmp_path) -> None:
    from pytest_hermes_kernel.kernel.transfer import Staging

    with pytest.raises(OSError, match="the download's own error"):  # it was RecursionError, from the clean-up
        with Staging(tmp_path / "out", 1 << 30, kind="dir") as staging:
            staging.dir.joinpath("top").mkdir()
            nest_dirs(str(staging.dir / "top"))
            raise OSError("the download's own error")
    assert not staging.dir.exists() and not (tmp_path / "out").exists()
