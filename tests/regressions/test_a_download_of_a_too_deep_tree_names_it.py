"""Found by a breaker helper (2026-12-06, deep trees against 4bcc1ed): the listing of a download
walks the tree recursively, so a tree about 1000 directories deep (``deep/d/d/.../leaf``, 1200
levels, 2.4 KB of path) ended ``download("deep", ...)`` with a bare ``RecursionError: maximum
recursion depth exceeded`` on local and ssh (a traceback from ``filetree._walk``, or from deep in
paramiko), and with "the kernel's side gave no answer to list deep" on docker. Fixed: a
``FileTransferError`` that names the path and says it is nested too deeply to copy.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel.errors import FileTransferError

MAKE = ("import os\nos.makedirs('deep')\nfd = os.open('deep', os.O_RDONLY)\nfor _ in range(1200):\n"
        "    os.mkdir('d', dir_fd=fd)\n    fd, up = os.open('d', os.O_RDONLY, dir_fd=fd), fd\n    os.close(up)\n"
        "os.close(os.open('leaf', os.O_CREAT | os.O_WRONLY, dir_fd=fd))")
REMOVE = "import subprocess\nsubprocess.run(['rm', '-rf', 'deep']).returncode"  # (rm never recurses on the stack)


@pytest.mark.hermes_transports("local", "docker", "ssh")
def test_a_download_of_a_tree_too_deep_to_walk_is_a_named_error(hermes_kernel, tmp_path) -> None:
    assert hermes_kernel.execute(MAKE).status == "ok"
    try:
        with pytest.raises(FileTransferError, match="deep is nested too deeply to copy"):
            hermes_kernel.download("deep", tmp_path / "got")
    finally:
        assert hermes_kernel.execute(REMOVE).value == "0"
    assert not (tmp_path / "got").exists()
