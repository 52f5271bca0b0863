"""Seen (a non-root breaker helper, 2026-12-05): root's ``hermes-kernel sweep`` (kind
``kernel-processes``) killed every kernel process on the machine whose host was gone, an ordinary
user's too: such as that user's kernel kept for post-mortem (its host, pytest, ends by design),
whose record root looked for under root's own ``<tmp>/pytest-hermes-kernel-0/kept``. A sweep now
judges only its own user's processes, as it does files ("only your own user's ... are looked at")."""

from __future__ import annotations

import os
import subprocess

import psutil
import pytest

from pytest_hermes_kernel.transports.leftovers import kill_orphan_kernels
from tests.nonroot import unprivileged_user


def test_roots_sweep_does_not_list_an_ordinary_users_kernel_process_whose_host_is_gone() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root, to start a kernel-like process as another user")
    user = unprivileged_user()
    gone = psutil.Popen(["true"])
    gone.wait()
    env = {"PATH": "/usr/bin:/bin", "HERMES_KERNEL_HOST_PID": str(gone.pid), "HERMES_KERNEL_ID": "f" * 32}
    theirs = subprocess.Popen(["sleep", "60"], env=env, user=user.uid, group=user.gid, extra_groups=[])
    try:
        said: list[str] = []
        kill_orphan_kernels(said.append, True)  # a dry run: lists, kills nothing
        assert not [line for line in said if f"process {theirs.pid} " in line], said
    finally:
        theirs.kill()
        theirs.wait()
