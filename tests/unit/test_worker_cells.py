"""What a cell sees of the process it runs in, on real local kernels (kernel/runner/worker.py):
its unterminated output, its working directory on ``sys.path``, no stray descriptors, a forked
child without the kernel's channel, and an interrupt that reaches it while it waits for a tool.
Written against the survivors of the mutation run of ``worker.py`` (issue #13).
"""

from __future__ import annotations

import os
import stat
import threading

from tests.support import run_in_thread, wait_until

SOCKETS = ("import os, stat\n"
           "def sockets(pid='self'):\n"
           "    found = []\n"
           "    for name in os.listdir(f'/proc/{pid}/fd'):\n"
           "        try:\n"
           "            if stat.S_ISSOCK(os.stat(f'/proc/{pid}/fd/{name}').st_mode):\n"
           "                found.append(int(name))\n"
           "        except OSError:\n"
           "            pass\n"
           "    return sorted(found)\n")


def test_output_without_a_newline_is_in_its_cells_result(make_kernel):
    k = make_kernel()

    r = k.execute('import sys\nprint("no newline", end="")\nsys.stderr.write("half a line")')

    assert (r.stdout, r.stderr) == ("no newline", "half a line")


def test_a_cell_imports_modules_from_its_working_directory(make_kernel, tmp_path):
    (tmp_path / "hk_local_module.py").write_text("ANSWER = 42\n")
    k = make_kernel(cwd=str(tmp_path))

    r = k.execute("import hk_local_module\nhk_local_module.ANSWER")

    assert r.status == "ok" and r.value == "42", r.summary()


def test_a_cell_holds_its_std_streams_and_the_kernels_channel_only(make_kernel):
    k = make_kernel()

    r = k.execute(SOCKETS + "fds = sorted(int(n) for n in os.listdir('/proc/self/fd'))\n"
                  "[fd for fd in fds if fd > 2 and os.path.exists(f'/proc/self/fd/{fd}')], sockets()")

    others, socks = eval(r.value)  # noqa: S307 - our own cell's repr of two lists of ints
    assert len(socks) == 1 and others == socks, f"fds beyond 0-2: {others}, sockets: {socks}"


def test_a_process_forked_by_a_cell_does_not_hold_the_kernels_channel(make_kernel):
    k = make_kernel()

    r = k.execute(SOCKETS + "import time\nchild = os.fork()\n"
                  "if child == 0:\n    time.sleep(30)\n    os._exit(0)\n"
                  "child")
    child = int(r.value)
    # the child closes its copy when it first runs, which a loaded machine may delay past fork()'s return
    wait_until(lambda: k.execute(f"sockets({child}) or 'none'").value == "'none'", 5.0,
               what="the forked child to close its copy of the kernel's channel")
    k.execute(f"os.kill({child}, 9); os.waitpid({child}, 0)")


def test_an_interrupt_reaches_a_cell_waiting_for_a_tools_result_at_once(make_kernel, tmp_path):
    """The cell's ``finally`` runs while the tool still runs on the host; the kernel keeps its state."""
    started, release = threading.Event(), threading.Event()

    def slow() -> str:
        started.set()
        release.wait(30)
        return "late"

    marker = tmp_path / "interrupted"
    k = make_kernel(tools={"slow": slow})
    k.execute("x = 41")
    cell = run_in_thread(k, f"import hermes_tools\ntry:\n    hermes_tools.slow()\n"
                            f"finally:\n    open({str(marker)!r}, 'w').close()\n")
    try:
        assert started.wait(10), "the tool was called"
        k.interrupt()
        wait_until(marker.exists, 5.0, what="the cell to be interrupted while its tool runs")
    finally:
        release.set()
    r = cell.result(timeout=30)

    assert r.status == "interrupted" and r.ename == "KeyboardInterrupt", r.summary()
    nxt = k.execute("x + 1")
    assert nxt.value == "42" and not nxt.kernel.state_lost, "the interrupt kept the kernel and its state"


def test_socket_helper_sees_a_socket(tmp_path):
    """The helper the cells above use finds a socket among a process's descriptors."""
    import socket

    a, b = socket.socketpair()
    try:
        namespace: dict[str, object] = {}
        exec(SOCKETS, namespace)  # noqa: S102 - the helper's own source
        assert a.fileno() in namespace["sockets"]() and stat.S_ISSOCK(os.fstat(b.fileno()).st_mode)
    finally:
        a.close()
        b.close()
