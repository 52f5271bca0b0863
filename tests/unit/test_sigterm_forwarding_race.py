"""A race in the xdist controller's SIGTERM forwarding (plugin/signals.py): the controller reads a
worker's /proc status (its SIGTERM handler installed, none pending), then sends it SIGTERM. A worker
that got the same SIGTERM itself (``timeout``, ``kill -TERM -<pgid>``, a systemd stop: the whole
group) and whose handler ran between those two statements had put the default action back (its
second SIGTERM is meant to kill at once): the forwarded one killed it in its teardown, which never
ended (its containers stayed). The interleaving is forced here, with the plugin's own handler in
the worker: now a worker takes a SIGTERM within ``DUPLICATE_S`` of its first for the same stop.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_hermes_kernel.plugin import signals

WORKER = r"""
import signal, sys, time
from pytest_hermes_kernel.plugin import signals

signals._worker[:] = [True]  # what the plugin's pytest_configure sets in an xdist worker
signal.signal(signal.SIGTERM, signals._on_sigterm)
try:
    print("ready", flush=True)  # (a SIGTERM may land before print returns: inside the try)
    while True:
        time.sleep(0.01)
except KeyboardInterrupt:
    print("tearing down", flush=True)
    try:
        time.sleep(float(sys.argv[1]))  # its teardown
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    print("torn down", flush=True)
"""


def _worker(teardown_s: float, script: str = WORKER) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(signals.__file__).parents[2]),
                                                        os.environ.get("PYTHONPATH", "")])}
    worker = subprocess.Popen([sys.executable, "-c", script, str(teardown_s)], stdout=subprocess.PIPE, text=True,
                              env=env)
    assert worker.stdout is not None and worker.stdout.readline() == "ready\n"
    return worker


def test_a_second_sigterm_to_a_worker_after_the_window_still_kills_it() -> None:
    """The window is for the forward only: a SIGTERM past it is a second stop, and kills at once."""
    worker = _worker(60)
    try:
        assert worker.stdout is not None
        worker.send_signal(signal.SIGTERM)
        assert worker.stdout.readline() == "tearing down\n"
        time.sleep(signals.DUPLICATE_S + 0.2)  # past the window: the condition is the time itself
        worker.send_signal(signal.SIGTERM)

        assert worker.wait(timeout=10) == -signal.SIGTERM
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        worker.stdout.close()  # type: ignore[union-attr]


AT_THE_END = r"""
import signal, sys, time
from pytest_hermes_kernel.plugin import signals

signals._worker[:] = [True]  # an xdist worker
signal.signal(signal.SIGTERM, signals._on_sigterm)
signals.pytest_sessionfinish(type("Session", (), {"config": type("Config", (), {"stash": {signals._previous_key: None}})()})())
assert signal.getsignal(signal.SIGTERM) is signals._on_sigterm_at_the_end
try:
    print("ready", flush=True)  # its session is over: it ends its kept kernels, then its shared transports
    while True:
        time.sleep(0.01)
except SystemExit:
    print("tearing down", flush=True)
    time.sleep(float(sys.argv[1]))  # the shared transports' close (its containers removed)
    print("torn down", flush=True)
"""


@pytest.mark.parametrize("script", [WORKER, AT_THE_END], ids=["running", "at-its-sessions-end"])
def test_a_worker_that_handles_its_own_sigterm_meanwhile_still_tears_down(monkeypatch, script) -> None:
    """The forward lands right after the worker handled the group's SIGTERM itself: while its tests
    run (the handler raises KeyboardInterrupt), and once its session is over (it raises SystemExit as
    the worker removes its containers); before, the forward killed it (exit -15, no 'torn down')."""
    worker = _worker(0.3, script)
    try:
        real_open = open

        def read_then_let_its_own_sigterm_land(path, *args, **kwargs):
            with real_open(path, *args, **kwargs) as fh:
                text = fh.read()
            worker.send_signal(signal.SIGTERM)  # the group's SIGTERM, handled by the worker just now
            assert worker.stdout is not None and worker.stdout.readline() == "tearing down\n"
            return io.StringIO(text)

        monkeypatch.setattr("pytest_hermes_kernel.plugin.crashes.live_worker_pids", lambda config: [worker.pid])
        monkeypatch.setattr(signals, "open", read_then_let_its_own_sigterm_land, raising=False)
        signals._pass_on_to_workers(object())  # type: ignore[arg-type]

        out, _ = worker.communicate(timeout=10)
        assert worker.returncode == 0 and out == "torn down\n", (worker.returncode, out)  # not "interrupted"
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        worker.stdout.close()  # type: ignore[union-attr]
