"""A child forked while a thread of the parent was making a shared transport can start kernels.

``get_transport`` makes a shared transport under the module's lock, and making one can take
seconds (a docker transport asks its engine, sweeps what dead runs left). A child forked
meanwhile (``os.fork``, ``multiprocessing`` "fork", a pre-forking server) inherited that lock
held by a thread it does not have: its first ``start_kernel`` (of any transport) waited for it
forever. Now a forked child gets the lock free; its transports are its own anyway.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

HOST = textwrap.dedent("""
    import json, os, threading
    from pytest_hermes_kernel import start_kernel
    from pytest_hermes_kernel.transports import LocalTransport, get_transport, register_transport

    get_transport("local")  # the parent has used the shared transports before
    inside, release = threading.Event(), threading.Event()

    def slow(**options):  # a transport that takes its time to be made, as docker's may
        inside.set()
        release.wait(30)
        return LocalTransport(**options)

    register_transport("slow", slow)
    maker = threading.Thread(target=lambda: get_transport("slow"))
    maker.start()
    inside.wait(30)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        import faulthandler
        faulthandler.dump_traceback_later(10, exit=True)
        with start_kernel("local") as k:
            os.write(w, json.dumps(k.execute("1 + 1").value).encode())
        os._exit(0)
    os.close(w)
    _, status = os.waitpid(pid, 0)
    child = os.read(r, 1024).decode()
    release.set()
    maker.join(30)
    print(json.dumps({"status": status, "child": child}))
""")


@pytest.mark.skipif(sys.platform != "linux", reason="os.fork with threads: Linux")
def test_a_child_forked_while_a_transport_is_made_starts_a_kernel() -> None:
    done = subprocess.run([sys.executable, "-c", HOST], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])

    assert out == {"status": 0, "child": '"2"'}, f"the child hung on the parent's lock: {done.stderr[-3000:]}"
