"""Seed bug: delegated children's kernels were LRU-evicted mid-task under a small cap.

Children are pinned (exempt from the cap) while they live and disposed by ``shutdown_child``.
"""

from __future__ import annotations

from pytest_hermes_kernel import KernelKey
from tests.support import gone, wait_until

PARENT = "conv-parent"


def test_five_children_under_a_cap_of_two_keep_their_state(make_registry, fake_clock):
    reg = make_registry(max_kernels=2, idle_timeout=None, clock=fake_clock)
    children = {f"c{i}": KernelKey.child(PARENT, f"c{i}") for i in range(5)}
    others = [KernelKey(owner=f"other-{i}") for i in range(3)]

    for i, key in enumerate(children.values()):
        assert reg.execute(key, f"v = {i}").status == "ok"
        reg.execute(others[i % 3], "pressure = 1")  # unpinned kernels push against the cap
    pids = {}
    for i, (cid, key) in enumerate(children.items()):
        r = reg.execute(key, "v")
        assert r.value == str(i) and not r.kernel.state_lost, r.summary()
        pids[cid] = r.kernel.pid

    snap = {s.key: s for s in reg.snapshot()}
    assert all(snap[reg.resolve(k)].pinned for k in children.values())
    assert sum(1 for s in snap.values() if not s.pinned) <= 2

    for cid, key in children.items():
        assert reg.shutdown_child(cid) == 1
        wait_until(lambda: gone(pids[cid]), 5.0, what=f"child {cid}'s kernel to end")
        assert reg.resolve(key) not in {s.key for s in reg.snapshot()}
    assert all(not s.pinned for s in reg.snapshot())


def test_child_key_names_its_owner_and_child(make_registry):
    key = KernelKey.child(PARENT, "c9")
    assert key.owner == f"{PARENT}::child::c9" and key.child_id == "c9"
    assert KernelKey(owner=PARENT).child_id is None
