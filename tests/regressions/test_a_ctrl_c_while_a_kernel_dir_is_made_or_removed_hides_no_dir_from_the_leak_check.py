"""Since a57a100 a local kernel dir is made as ``.making-<name>`` and renamed to ``.removing-<name>``
before it is removed; a Ctrl-C (or any error) as its host file was written left the first, and one
midway through the removal left the second, half removed: no leak check looks at such a name, and a
sweep takes it only once it is older than its max age. It is renamed back under its own name now,
where the leak check reports it and the next clean-up or sweep finds it; a dir being made is
removed."""

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


def test_a_ctrl_c_while_a_kernel_dir_is_made_leaves_nothing(tmp_path, monkeypatch):
    """Its ``.making-<name>`` stayed, as no leak check sees it (before a57a100 it stayed as itself)."""
    monkeypatch.setenv(kernel_dirs.KERNEL_DIR_ENV, str(tmp_path))

    def interrupted() -> str:  # called as the host file is written
        raise KeyboardInterrupt

    monkeypatch.setattr(kernel_dirs, "_pid_namespace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        kernel_dirs.new_kernel_dir()
    assert os.listdir(tmp_path) == []
