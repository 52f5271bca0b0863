"""Seed bug: kernels were looked up by a key that did not include the owner, so owners shared state.

One kernel per owner; ``shutdown_owner`` ends only that owner's kernels (and its children's).
"""

from __future__ import annotations

from pytest_hermes_kernel import KernelKey
from tests.support import gone, wait_until


def test_owners_do_not_see_each_others_namespace(make_registry):
    reg = make_registry()
    a, b = KernelKey(owner="conv-a"), KernelKey(owner="conv-b")

    reg.execute(a, "secret = 'only-a'")
    rb = reg.execute(b, "secret")
    ra = reg.execute(a, "secret")

    assert rb.ename == "NameError"
    assert ra.value == "'only-a'"
    assert ra.kernel.kernel_id != rb.kernel.kernel_id and ra.kernel.pid != rb.kernel.pid


def test_shutdown_owner_ends_only_that_owner_and_its_children(make_registry):
    reg = make_registry(max_kernels=8)
    mine = [KernelKey(owner="conv-a"), KernelKey.child("conv-a", "c1")]
    theirs = [KernelKey(owner="conv-ab"), KernelKey(owner="conv-b"), KernelKey.child("conv-b", "c1")]
    pids = {key: reg.execute(key, "import os\nkeep = 1\nos.getpid()").kernel.pid for key in mine + theirs}

    assert reg.shutdown_owner("conv-a") == 2

    wait_until(lambda: all(gone(pids[k]) for k in mine), 5.0, what="conv-a's kernels to end")
    for key in theirs:
        r = reg.execute(key, "keep")
        assert r.value == "1" and r.kernel.pid == pids[key] and not r.kernel.state_lost
    assert {s.key for s in reg.snapshot()} == {reg.resolve(k) for k in theirs}
