"""The host probes' shortcuts for a test that starts nothing: the child-process probe asks the
kernel whether the test process has any child before psutil walks every process's parent, and
the kernel-process probe scans no environment in a process that never did anything towards a
kernel. Each shortcut must still see what it skips when it is there: a child started from any
thread, a zombie, a kernel's runner."""

from __future__ import annotations

import subprocess
import sys

from pytest_hermes_kernel.procs import has_children

FRESH = """
import os
from pytest_hermes_kernel.leaks.probes import child_processes, kernel_processes
from pytest_hermes_kernel.procs import has_children
print(has_children(os.getpid()), child_processes(), kernel_processes())
"""


def test_a_process_with_no_child_has_none_and_the_probes_find_nothing() -> None:
    out = subprocess.run([sys.executable, "-c", FRESH], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "{}", "{}"], out


STAGES = """
import os, subprocess, threading, time
from pytest_hermes_kernel.procs import has_children

def state(pid):
    with open(f"/proc/{pid}/stat", "rb") as fh:
        return fh.read().rsplit(b")", 1)[1].split()[0]

def until(check):
    deadline = time.monotonic() + 5
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)

print("none", has_children(os.getpid()))
child = subprocess.Popen(["sleep", "30"])
print("child", has_children(os.getpid()))
child.kill()
until(lambda: state(child.pid) == b"Z")
print("zombie", has_children(os.getpid()))
child.wait()
print("reaped", has_children(os.getpid()))
started, stop = [], threading.Event()
def spawn():  # a thread lists the children it forked in its own file, the main thread's is empty
    started.append(subprocess.Popen(["sleep", "30"]))
    stop.wait()
thread = threading.Thread(target=spawn)
thread.start()
until(lambda: started)
print("thread's child", has_children(os.getpid()))
started[0].kill()
started[0].wait()
stop.set()
thread.join()
"""


def test_a_child_is_seen_while_it_lives_as_a_zombie_and_from_another_thread() -> None:
    out = subprocess.run([sys.executable, "-c", STAGES], capture_output=True, text=True, check=True, timeout=60).stdout
    assert out.splitlines() == ["none False", "child True", "zombie True", "reaped False", "thread's child True"], out


def test_a_pid_that_cannot_be_read_is_left_to_the_full_walk() -> None:
    assert has_children(2**22 + 1)  # above pid_max: no /proc entry, so "maybe" and the caller walks


def test_the_kernel_probe_finds_a_kernel_started_in_a_fresh_process() -> None:
    script = ("from pytest_hermes_kernel import start_kernel\n"
              "from pytest_hermes_kernel.leaks.probes import kernel_processes\n"
              "with start_kernel('local') as k:\n"
              "    k.execute('1')\n"
              "    print(len(kernel_processes()))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60).stdout
    assert int(out) >= 1, out

