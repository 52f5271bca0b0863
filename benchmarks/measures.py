"""Measurements shared by ``benchmarks/run.py``: ours and the anchors', on the same work.

Every function returns plain numbers (milliseconds, megabytes, cells per second) so that one
run can print them side by side and store them as JSON.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pytest_hermes_kernel import KernelKey, KernelRegistry, start_kernel
from pytest_hermes_kernel.transports import get_transport
from starts import MB, check_paths, path_of  # benchmarks/, on sys.path as for every script here

MEMORY_CELL = """
def _field(path, name):
    try:
        for line in open(path):
            if line.startswith(name):
                return int(line.split()[1]) * 1024 / 10**6  # kB (KiB, /proc's unit) to MB
    except OSError:
        return None
    return None
def _both(name, file):
    pair = [_field(f'/proc/{pid}/{file}', name) for pid in (os.getpid(), os.getppid())]
    return None if None in pair else sum(pair)
import os
(_both('VmRSS:', 'status'), _both('Pss:', 'smaps_rollup'))
"""
"""A cell's ``(RSS, PSS)`` in MB (10^6 bytes, as ``value_memory.py``; they were MiB) of its
worker and its supervisor (the worker's parent); ``None`` for a figure not readable in both (a PSS read as 0 from an unreadable ``smaps_rollup`` was
reported as the worker's alone, or as 0.0 MB)."""


def p50(xs: list[float]) -> float:
    return statistics.median(xs)


def p99(xs: list[float]) -> float:
    """The 99th percentile by nearest rank: the smallest value that 99 % of ``xs`` are at or below
    (of 100 round trips, the 99th slowest; ``xs[int(0.99 * n)]`` was one rank too high: the
    slowest of 100, the 1981st of 2000)."""
    return percentile(xs, 99)


def percentile(xs: list[float], q: int) -> float:
    """The ``q``-th percentile (0 < ``q`` <= 100) of ``xs`` by nearest rank: ``ceil(q n / 100)``-th smallest."""
    rank = -(-q * len(xs) // 100)  # ceil in whole numbers: no float rounding at the boundary
    return sorted(xs)[max(rank, 1) - 1]


def timed(fn: Callable[[], Any], n: int, warmup: int = 0) -> list[float]:
    """Wall seconds of ``n`` calls of ``fn`` (after ``warmup`` untimed ones)."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


# ------------------------------------------------------------------------------------ ours
def kernel_figures(transport: str, cells: int, starts: int) -> dict[str, float]:
    """Start, round trip, restart, interrupt and idle memory of one transport, on its default
    path (the kernel server's, but for filecell).

    :raises RuntimeError: if a kernel measured was not forked by a kernel server (it fell back to a spawn)."""
    t = get_transport(transport)
    with start_kernel(t) as warm:  # the first kernel may create the container: not timed
        warm.execute("1")
    paths: list[str] = []
    stops: list[float] = []
    start = timed(lambda: paths.append(_start_stop(t, stops)), starts)
    out: dict[str, float] = {"start_p50_ms": p50(start) * 1e3, "shutdown_p50_ms": p50(stops) * 1e3}
    with start_kernel(t) as k:
        paths.append(path_of(k))  # these figures are the default path's: the kernel server's
        check_paths(paths, None if transport == "filecell" else "server", f"{transport} kernel figures")
        rt = timed(lambda: k.execute("1"), cells, warmup=min(200, cells // 5))
        out.update(rt_p50_ms=p50(rt) * 1e3, rt_p99_ms=p99(rt) * 1e3)
        time.sleep(0.5)
        rss, pss = eval(k.execute(MEMORY_CELL).value)  # noqa: S307 - our own cell's repr of a tuple
        out.update(idle_rss_mb=rss, idle_pss_mb=pss)
        restart = timed(k.restart, max(5, starts // 3))
        out["restart_p50_ms"] = p50(restart) * 1e3
        out["interrupt_p50_ms"] = p50([_interrupt_latency(k) for _ in range(5)]) * 1e3
    return out


def _start_stop(transport: Any, stops: list[float]) -> str:
    """Start a kernel, run its first cell, shut it down; the path it took (:func:`starts.path_of`).
    Appends the seconds its ``shutdown()`` took to ``stops``."""
    k = start_kernel(transport)
    try:
        k.execute("1")
        return path_of(k)
    finally:
        t0 = time.perf_counter()
        k.shutdown()
        stops.append(time.perf_counter() - t0)


def _interrupt_latency(k: Any) -> float:
    """Seconds from ``interrupt()`` to the cell's KeyboardInterrupt result."""
    box: dict[str, Any] = {}
    th = threading.Thread(target=lambda: box.setdefault("r", k.execute("import time; time.sleep(60)")))
    th.start()
    time.sleep(0.3)
    t0 = time.perf_counter()
    k.interrupt()
    th.join()
    assert box["r"].status == "interrupted", box["r"].summary()
    return time.perf_counter() - t0


def throughput(transport: str, owners: int, cells_per_owner: int) -> float:
    """Cells per second with ``owners`` threads, each on its own kernel."""
    t = get_transport(transport)
    with KernelRegistry(max_kernels=max(4, owners), transport_factory=lambda key: t, background_reaper=False) as reg:
        keys = [KernelKey(owner=f"bench-{i}", transport=transport) for i in range(owners)]
        for key in keys:
            reg.execute(key, "1")

        def work(key: KernelKey) -> None:
            for _ in range(cells_per_owner):
                reg.execute(key, "1")

        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=owners) as pool:
            list(pool.map(work, keys))
        return owners * cells_per_owner / (time.perf_counter() - started)


# ------------------------------------------------------------------------------------ anchors
ECHO = "import os\nwhile True:\n d = os.read(0, 65536)\n if not d: break\n os.write(1, d)"
RELAY = ("import os, subprocess, sys\np = subprocess.Popen([sys.executable, '-c', %r], stdin=subprocess.PIPE, "
         "stdout=subprocess.PIPE, bufsize=0)\nwhile True:\n d = os.read(0, 65536)\n if not d: break\n "
         "os.write(p.stdin.fileno(), d)\n os.write(1, os.read(p.stdout.fileno(), 65536))" % ECHO)


def pipe_echo(cells: int, relay: bool = False) -> list[float]:
    """Round trips of 2 bytes through a child Python echo (``relay``: via a middle process, the
    shape of our supervisor + worker)."""
    proc = subprocess.Popen([sys.executable, "-c", RELAY if relay else ECHO], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, bufsize=0)

    def once() -> None:
        proc.stdin.write(b"1\n")
        if proc.stdout.read(2) != b"1\n":
            raise RuntimeError("the echo process died")

    out = timed(once, cells, warmup=200)
    proc.stdin.close()
    proc.wait()
    return out


def bare_python_start(n: int) -> list[float]:
    return timed(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True), n)


def bare_python_rss_mb() -> float:
    import psutil

    proc = subprocess.Popen([sys.executable, "-c", "import json, socket, selectors, ast, traceback, time; "
                             "time.sleep(30)"])
    time.sleep(1.0)
    rss = psutil.Process(proc.pid).memory_info().rss / MB
    proc.kill()
    proc.wait()
    return rss


def jupyter_figures(cells: int, starts: int) -> dict[str, float] | None:
    """The same figures for jupyter_client + ipykernel (``pip install '.[bench]'``)."""
    try:
        import psutil
        from jupyter_client.manager import start_new_kernel
    except ImportError:
        return None
    out: dict[str, float] = {}
    to_first, with_stop = [], []
    for _ in range(starts):
        t0 = time.perf_counter()
        km, kc = start_new_kernel(kernel_name="python3")
        kc.execute_interactive("1", timeout=60, output_hook=_quiet)
        to_first.append(time.perf_counter() - t0)
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        with_stop.append(time.perf_counter() - t0)
    # start_first: as starts.start_to_first_result times ours (shutdown not timed); start: as
    # kernel_figures' start_p50_ms (start + first cell + shutdown). The start table compared
    # ours to first result with jupyter_client's start + first result + shutdown.
    out["start_first_p50_ms"] = p50(to_first) * 1e3
    out["start_p50_ms"] = p50(with_stop) * 1e3
    out["shutdown_p50_ms"] = p50([b - a for a, b in zip(to_first, with_stop)]) * 1e3  # its stop_channels + shutdown_kernel(now=True)
    km, kc = start_new_kernel(kernel_name="python3")
    try:
        rt = timed(lambda: kc.execute_interactive("1", timeout=60, output_hook=_quiet), cells, warmup=50)
        out.update(rt_p50_ms=p50(rt) * 1e3, rt_p99_ms=p99(rt) * 1e3)
        time.sleep(0.5)
        pid = km.provisioner.process.pid  # type: ignore[union-attr]
        info = psutil.Process(pid).memory_full_info()
        out.update(idle_rss_mb=info.rss / MB, idle_pss_mb=info.pss / MB)
        lat = []
        for _ in range(3):
            kc.execute("import time; time.sleep(60)")
            time.sleep(0.3)
            t0 = time.perf_counter()
            km.interrupt_kernel()
            while True:
                msg = kc.get_iopub_msg(timeout=30)
                if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                    break
            lat.append(time.perf_counter() - t0)
        out["interrupt_p50_ms"] = p50(lat) * 1e3
        rst = []
        for _ in range(3):
            t0 = time.perf_counter()
            km.restart_kernel(now=True)
            kc.wait_for_ready(timeout=60)
            rst.append(time.perf_counter() - t0)
        out["restart_p50_ms"] = p50(rst) * 1e3
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return out


def _quiet(msg: Any) -> None:
    """Swallow iopub output (jupyter_client prints it by default)."""


def environment() -> dict[str, Any]:
    return {"python": sys.version.split()[0], "cpus": os.cpu_count(), "platform": sys.platform,
            "when": time.strftime("%Y-%m-%d %H:%M:%S")}
