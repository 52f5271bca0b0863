"""Since a57a100 the host renames a local kernel dir to ``.removing-<name>`` before it removes it;
a Ctrl-C (or any error) midway through the removal left it so, half removed: no leak check looks
at that name, and a sweep takes it only once it is older than its max age. It is renamed back
under its own name now, where the leak check reports it and the next clean-up or sweep finds it."""

from __future__ import annotations

import os

import pytest

from pytest_hermes_kernel.kernel.runner.trees import remove_tree
from pytest_hermes_kernel.transports import kernel_dirs


def test_a_ctrl_c_while_a_kernel_dir_is_removed_leaves_it_under_its_own_name(tmp_path, monkeypatch):
    monkeypatch.setenv(kernel_dirs.KERNEL_DIR_ENV, str(tmp_path))
    kdir = kernel_dirs.new_kernel_dir()

    def interrupted(path: str) -> bool:
        raise KeyboardInterrupt

    monkeypatch.setattr(kernel_dirs, "remove_tree", interrupted)
    try:
        with pytest.raises(KeyboardInterrupt):
            kernel_dirs.remove_kernel_dir(kdir)
        assert os.listdir(tmp_path) == [os.path.basename(kdir)], "seen, and reported, as itself"
    finally:
        remove_tree(kdir)
        remove_tree(os.path.join(str(tmp_path), kernel_dirs.REMOVING_PREFIX + os.path.basename(kdir)))
