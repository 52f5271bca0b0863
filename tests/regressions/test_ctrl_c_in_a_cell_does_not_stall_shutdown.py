"""Bug: after Ctrl-C (or the plugin's SIGTERM, which raises KeyboardInterrupt) hit a cell's wait,
shutting that kernel down took 10 s and ended it by SIGKILL.

The KeyboardInterrupt left the channel marked as being read by the interrupted waiter, so the
shutdown request's reply was never read: it timed out (``2 * shutdown_grace + 6`` s) and the
runner was killed from outside. A run torn down after a CI abort spent that long per busy kernel,
longer than ``docker stop`` waits before its SIGKILL, which then left the run's containers and
files. Now the interrupted read hands the channel on, and the shutdown is answered at once.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.support import gone, kill_quietly, python_host, wait_until

HOST = """
import json, os, signal, threading, time
from pytest_hermes_kernel import start_kernel

signal.signal(signal.SIGINT, signal.default_int_handler)  # a background job (`cmd &`) inherits SIGINT ignored
kernel = start_kernel("local")
marker = {marker!r}

def interrupt_when_the_cell_runs():
    while not os.path.exists(marker):
        time.sleep(0.01)
    os.kill(os.getpid(), signal.SIGINT)

threading.Thread(target=interrupt_when_the_cell_runs, daemon=True).start()
try:
    kernel.execute(f"open({{marker!r}}, 'w').close()\\nimport time\\ntime.sleep(60)", timeout=120)
except KeyboardInterrupt:
    pass
pids = [kernel.runner_pid, kernel.pid]
started = time.monotonic()
info = kernel.shutdown()
print(json.dumps({{"seconds": time.monotonic() - started, "step": info.step, "pids": pids}}), flush=True)
"""


def test_shutdown_after_ctrl_c_in_a_cell_is_answered_at_once(tmp_path: Path) -> None:
    host = python_host(HOST.format(marker=str(tmp_path / "cell-started")))
    facts: dict = {}
    try:
        out, err = host.communicate(timeout=60)
        facts = json.loads(out.splitlines()[-1]) if out.strip() else {}
        assert facts, err[-2000:]

        assert facts["seconds"] < 5.0, facts
        assert facts["step"] != "unreachable", facts
        wait_until(lambda: all(gone(pid) for pid in facts["pids"]), 5.0, what="the kernel's processes to end")
    finally:
        kill_quietly([*facts.get("pids", []), host.pid])
        host.communicate(timeout=10)  # reaps it and closes its pipes, also after a timeout above
