"""Seen (a non-root breaker helper, 2026-12-05): ``hermes-kernel sweep`` run by an ordinary user
printed "removed kernel dir /tmp/hermes-kernel-999999-abcdef (its host is gone, or it is stale)"
and counted it, for a stale kernel dir of root's that it could not remove (its ``rmtree`` ignored
the refusal): the dir was still there. The README says a sweep looks only at your own user's
files. Now a kernel dir another user owns is not judged: neither listed nor claimed."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

from tests.nonroot import unprivileged_user

SWEEP = """
from pytest_hermes_kernel.transports.leftovers import sweep_kernel_dirs
print("COUNT", sweep_kernel_dirs(lambda line: print("SAID", line), False))
"""


def test_a_users_sweep_neither_claims_nor_counts_roots_stale_kernel_dir() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root, to make a kernel dir another user owns")
    user = unprivileged_user()
    tmp = tempfile.mkdtemp(prefix="hk-sweep-")
    os.chmod(tmp, 0o1777)  # a shared temp dir, as /tmp is
    roots = os.path.join(tmp, "hermes-kernel-999999-abcdef")  # a host pid that is gone
    os.mkdir(roots, 0o700)
    os.utime(roots, (0, 0))  # and old
    try:
        ran = user.run(SWEEP, env={"TMPDIR": tmp})
        assert ran.returncode == 0, ran.stdout + ran.stderr
        assert os.path.isdir(roots)
        assert "COUNT 0" in ran.stdout and roots not in ran.stdout, ran.stdout
    finally:
        shutil.rmtree(tmp)
