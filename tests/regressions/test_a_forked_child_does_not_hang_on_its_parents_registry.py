"""A forked child cannot use its parent's ``KernelRegistry``, and cannot hang on it either.

A registry belongs to the process that made it, as its handles do (B42), but it never said so:
in a child forked while a thread of the parent was starting a key's kernel, the child's
``execute`` of that key, ``shutdown_owner``, ``shutdown_all`` and ``close`` waited for that
start, which no thread of the child runs: forever. Now acquiring in a child raises
``KernelForkedError`` (a ``start_kernel`` or a registry of the child's own is how it gets
kernels), and the shutdown calls leave the parent's kernels alone and return at once.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

HOST = textwrap.dedent("""
    import json, os, sys, threading
    from pytest_hermes_kernel import KernelKey, KernelRegistry

    reg = KernelRegistry(background_reaper=False)
    started, release = threading.Event(), threading.Event()
    from pytest_hermes_kernel.kernel.handle import KernelHandle
    start = KernelHandle.start

    def slow_start(self):  # the parent's start of "pending" is under way when the fork happens
        if self.owner == "pending" and not release.is_set():
            started.set()
            release.wait(30)
        return start(self)

    KernelHandle.start = slow_start
    reg.execute(KernelKey(owner="ready"), "1")
    parent = threading.Thread(target=lambda: reg.execute(KernelKey(owner="pending"), "1"))
    parent.start()
    started.wait(30)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        import faulthandler
        faulthandler.dump_traceback_later(10, exit=True)
        out = {}
        for name, call in [("execute", lambda: reg.execute(KernelKey(owner="pending"), "2")),
                           ("execute_ready", lambda: reg.execute(KernelKey(owner="ready"), "2")),
                           ("shutdown_owner", lambda: reg.shutdown_owner("pending")),
                           ("close", reg.close)]:
            try:
                out[name] = repr(call())
            except Exception as exc:
                out[name] = type(exc).__name__
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    _, status = os.waitpid(pid, 0)
    child = json.loads(os.read(r, 65536) or b"{}")
    release.set()
    parent.join(30)
    ours = reg.execute(KernelKey(owner="pending"), "40 + 2").value
    reg.close()
    print(json.dumps({"status": status, "child": child, "parent": ours}))
""")


@pytest.mark.skipif(sys.platform != "linux", reason="os.fork with threads: Linux")
def test_a_child_forked_during_a_start_is_refused_and_never_hangs() -> None:
    done = subprocess.run([sys.executable, "-c", HOST], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])

    assert out["status"] == 0, f"the child hung (killed by its own faulthandler timer): {done.stderr[-3000:]}"
    assert out["child"] == {"execute": "KernelForkedError", "execute_ready": "KernelForkedError",
                            "shutdown_owner": "0", "close": "None"}, out
    assert out["parent"] == "42", "the parent's registry works on as before"


CLOSE_HOST = textwrap.dedent("""
    import json, os, threading
    from pytest_hermes_kernel import KernelKey, KernelRegistry
    from pytest_hermes_kernel.transports import get_transport

    inside, release = threading.Event(), threading.Event()

    def slow_factory(key):  # the registry asks for a key's transport under its lock (a docker one: seconds)
        inside.set()
        release.wait(30)
        return get_transport("local")

    with KernelRegistry(background_reaper=False, transport_factory=slow_factory) as reg:
        maker = threading.Thread(target=lambda: reg.execute(KernelKey(owner="a"), "1"))
        maker.start()
        inside.wait(30)
        pid = os.fork()
        if pid == 0:
            import faulthandler
            faulthandler.dump_traceback_later(10, exit=True)
        else:
            _, status = os.waitpid(pid, 0)
            release.set()
            maker.join(30)
    if pid == 0:  # the child left the with block: its close() is done
        os._exit(0)
    print(json.dumps({"status": status}))
""")


@pytest.mark.skipif(sys.platform != "linux", reason="os.fork with threads: Linux")
def test_a_child_leaving_the_registrys_with_block_returns_while_a_parent_thread_holds_its_lock() -> None:
    done = subprocess.run([sys.executable, "-c", CLOSE_HOST], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]

    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"status": 0}, (
        f"the child's close() hung on the parent's registry lock: {done.stderr[-3000:]}")


LOOK_HOST = textwrap.dedent("""
    import json, os, threading
    from pytest_hermes_kernel import KernelKey, KernelRegistry

    reg = KernelRegistry(background_reaper=False)
    reg.execute(KernelKey(owner="a"), "1")
    stop = threading.Event()

    def look():  # a busy host: its threads take the registry's lock all the time (here: looking)
        while not stop.is_set():
            reg.snapshot()

    lookers = [threading.Thread(target=look) for _ in range(3)]
    for t in lookers:
        t.start()
    statuses, seen = [], []
    for _ in range(20):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            import faulthandler
            faulthandler.dump_traceback_later(5, exit=True)
            os.write(w, json.dumps([len(reg), len(reg.snapshot())]).encode())
            os._exit(0)
        os.close(w)
        statuses.append(os.waitpid(pid, 0)[1])
        seen.append(os.read(r, 1000).decode())
        os.close(r)
    stop.set()
    for t in lookers:
        t.join()
    reg.close()
    print(json.dumps({"statuses": statuses, "seen": seen}))
""")


@pytest.mark.skipif(sys.platform != "linux", reason="os.fork with threads: Linux")
def test_a_childs_look_at_the_registry_never_waits_for_a_parent_thread() -> None:
    """``len(reg)`` and ``reg.snapshot()`` in a child forked while a thread of the parent held the
    registry's lock (any registry call does, for a moment) waited for ever: 20 of 20 forks beside
    three threads calling ``snapshot()``. A child sees none of its parent's kernels (they are not its own,
    as ``shutdown_all()`` there ends none of them) and never waits."""
    done = subprocess.run([sys.executable, "-c", LOOK_HOST], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    hung = sum(1 for status in out["statuses"] if status != 0)
    assert hung == 0, f"{hung} of 20 children hung on the parent's registry lock: {done.stderr[-2000:]}"
    assert set(out["seen"]) == {"[0, 0]"}, out["seen"]


HELD_HOST = textwrap.dedent("""
    import json, os, threading
    from pytest_hermes_kernel import KernelKey, KernelRegistry

    reg = KernelRegistry(background_reaper=False)
    handle = reg.get_or_start(KernelKey(owner="a"))
    held, release = threading.Event(), threading.Event()

    def hold():  # a parent thread inside the registry's lock as the fork happens
        with reg._lock:
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(30)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        import faulthandler
        faulthandler.dump_traceback_later(10, exit=True)
        out = {}
        for name, call in [("discard", lambda: reg.discard(KernelKey(owner="a"), handle)), ("reap_once", reg.reap_once),
                           ("reap_expired", reg.reap_expired), ("sweep_stale", reg.sweep_stale),
                           ("seconds_to_next_expiry", reg.seconds_to_next_expiry)]:
            out[name] = repr(call())
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    _, status = os.waitpid(pid, 0)
    child = json.loads(os.read(r, 65536) or b"{}")
    release.set()
    holder.join(30)
    ours = reg.execute(KernelKey(owner="a"), "40 + 2").value
    reg.close()
    print(json.dumps({"status": status, "child": child, "parent": ours}))
""")


@pytest.mark.skipif(sys.platform != "linux", reason="os.fork with threads: Linux")
def test_discard_and_the_reaping_calls_in_a_child_return_while_a_parent_thread_holds_the_lock() -> None:
    # discard(), reap_once(), reap_expired(), sweep_stale() and seconds_to_next_expiry() took the
    # registry's lock in a forked child too: with a parent thread inside it at the fork, each waited
    # for ever (found by a docstring check, 2026-12-06); now a child's copy leaves the parent's alone
    done = subprocess.run([sys.executable, "-c", HELD_HOST], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])

    assert out["status"] == 0, f"the child hung on the parent's registry lock: {done.stderr[-3000:]}"
    assert out["child"] == {"discard": "False", "reap_once": "0", "reap_expired": "0", "sweep_stale": "None",
                            "seconds_to_next_expiry": "None"}, out
    assert out["parent"] == "42", "the parent's kernel was left alone"
