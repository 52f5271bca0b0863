"""A forked child of the host does not keep its parent's local kernels alive.

A local kernel's channel (one end of a socketpair) is its lease: when the host dies, by any
means, the kernel sees EOF and ends within ~0.1 s, and so does the kernel server whose control
socket is the server's lease. A child forked by the host (``os.fork()``, a ``multiprocessing``
worker with the fork start method, a pre-forking server) inherited copies of those sockets, so
no EOF came while it lived: a host SIGKILLed beside such a child left its kernels (the idle one
and the one running a cell, forked by the kernel server or spawned) and its kernel server running
for as long as the child lived, 6 s and more here; a pool worker of a dead parent can wait for
ever. Now the child's copies are closed in the child at the fork (its parent's kernels are not its
own: it cannot use them, ``KernelForkedError``), and the kernels end with the host.
"""

from __future__ import annotations

import json
import signal
import sys
import time

import psutil
import pytest

from tests.support import all_gone, gone, kill_quietly, python_host

HOST = """
import json, multiprocessing, os, sys, threading, time
import psutil
from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports import make_transport

def quiet_sleep():  # the child outlives the host; it must not hold the test's pipes either
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    time.sleep(60)
    os._exit(0)

forked = start_kernel("local", timeout=120)         # forked by the local kernel server
spawned = start_kernel(make_transport("local", server=False), timeout=120)  # spawned, no server
forked.execute("x = 1")
spawned.execute("x = 1")
threading.Thread(target=spawned.execute, args=("import time; time.sleep(60)",), daemon=True).start()
server = psutil.Process(forked.runner_pid).ppid()
time.sleep(0.5)  # (the cell is under way: a lease also ends a kernel mid-cell)
if sys.argv[1] == "os.fork":
    child = os.fork()
    if child == 0:
        quiet_sleep()
else:
    proc = multiprocessing.get_context("fork").Process(target=quiet_sleep, daemon=False)
    proc.start()
    child = proc.pid
print(json.dumps({"child": child, "server": server,
                  "kernels": [forked.runner_pid, forked.pid, spawned.runner_pid, spawned.pid]}), flush=True)
time.sleep(0.2)
os.kill(os.getpid(), 9)  # no exit hook: the leases are all that ends the kernels
"""


@pytest.mark.skipif(sys.platform != "linux", reason="os.fork with threads; /proc")
@pytest.mark.parametrize("how", ["os.fork", "multiprocessing"])
def test_the_kernels_end_with_their_host_while_its_forked_child_lives(how: str) -> None:
    host = python_host(HOST.replace("sys.argv[1]", repr(how)))
    out, err = host.communicate(timeout=120)
    assert host.returncode == -signal.SIGKILL, err[-3000:]
    facts = json.loads(out.strip().splitlines()[-1])
    kernels, child, server = facts["kernels"], facts["child"], facts["server"]
    try:
        deadline = time.monotonic() + 10.0
        while not all_gone([*kernels, server]) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not gone(child), "the test needs the child alive while it looks"
        left = [pid for pid in [*kernels, server] if not gone(pid)]
        assert left == [], (f"10 s after the host was SIGKILLed, with its {how} child alive, these "
                            f"kernel processes (runner, worker, runner, worker, then the kernel server "
                            f"{server}) still run: {left} of {kernels}")
    finally:
        kill_quietly([pid for pid in [child, *kernels, server] if not gone(pid)])
