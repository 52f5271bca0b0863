"""Kernel start figures (issue #11), each beside its anchor, for ``benchmarks/run.py``.

* start to first result on each transport, on the kernel server path (the default) and on the
  spawn path (``server=False``), in a running container / over an open connection;
* the remote anchors: one ``docker exec true`` (docker-py, as the transport calls it) and one ssh
  exec of ``true`` on the transport's connection;
* idle PSS and USS (unshared) per kernel with 8 kernels forked from one server;
* 64 kernels started at once (local, server and spawn path).

Every figure is milliseconds (p50) or megabytes.
"""

from __future__ import annotations

import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psutil

from pytest_hermes_kernel import KernelHandle, KernelOptions, start_kernel
from pytest_hermes_kernel.transports import get_transport, make_transport


def _p50_ms(xs: list[float]) -> float:
    return statistics.median(xs) * 1e3


def start_to_first_result(transport: Any, n: int) -> tuple[list[float], str]:
    """Seconds from ``start_kernel`` to the first cell's result, ``n`` times (shutdown untimed),
    and the first result's ``kernel.note`` (empty unless the server path fell back)."""
    with start_kernel(transport) as warm:  # the first start may create a container or a server
        note = warm.execute("1").kernel.note
    times = []
    for _ in range(n):
        t = time.perf_counter()
        k = start_kernel(transport)
        k.execute("1")
        times.append(time.perf_counter() - t)
        k.shutdown()
    return times, note


def path_figures(name: str, n: int) -> dict[str, Any]:
    """Start to first result on both paths of transport ``name`` (filecell has one path)."""
    server = get_transport(name)
    times, note = start_to_first_result(server, n)
    out: dict[str, Any] = {"start_first_p50_ms": _p50_ms(times), "server_note": note}
    if name == "filecell":
        return out
    spawn = make_transport(name, server=False)
    try:
        out["start_first_spawn_p50_ms"] = _p50_ms(start_to_first_result(spawn, n)[0])
    finally:
        spawn.close()
    return out


def docker_exec_true(n: int) -> float:
    """p50 ms of one ``docker exec true`` in the shared container (create + start + wait)."""
    t = get_transport("docker")
    cid = t.shared_container()
    times = []
    for _ in range(n):
        started = time.perf_counter()
        exec_id = t.api.exec_create(cid, ["true"])["Id"]
        t.api.exec_start(exec_id)
        times.append(time.perf_counter() - started)
    return _p50_ms(times)


def ssh_exec_true(n: int) -> float:
    """p50 ms of one ssh exec of ``true`` on the transport's open connection (to its exit status)."""
    conn = get_transport("ssh")._connection()
    times = []
    for _ in range(n):
        started = time.perf_counter()
        conn.run("true", timeout=30.0)
        times.append(time.perf_counter() - started)
    return _p50_ms(times)


def memory_per_kernel(kernels: int = 8) -> dict[str, float]:
    """Idle PSS and USS per kernel (supervisor + worker), ``kernels`` forked from one local server."""
    t = get_transport("local")
    handles = [start_kernel(t) for _ in range(kernels)]
    try:
        for h in handles:
            h.execute("1")
        time.sleep(0.5)
        pss, uss = [], []
        for h in handles:
            infos = [psutil.Process(pid).memory_full_info() for pid in (h.runner_pid, h.pid)]
            pss.append(sum(i.pss for i in infos) / 2**20)
            uss.append(sum(i.uss for i in infos) / 2**20)
    finally:
        for h in handles:
            h.shutdown()
    return {"kernels": kernels, "idle_pss_mb": statistics.median(pss), "idle_uss_mb": statistics.median(uss)}


def concurrent_starts(n: int = 64) -> dict[str, float]:
    """Seconds for ``n`` local kernels started at once to all give their first result, on both paths."""
    out = {}
    for label, server in (("server", True), ("spawn", False)):
        transport = make_transport("local", server=server)
        with start_kernel(transport) as warm:
            warm.execute("1")
        handles = [KernelHandle(transport, KernelOptions()) for _ in range(n)]
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=n) as pool:
            values = list(pool.map(lambda h: h.start().execute("1").value, handles))
        out[f"{label}_s"] = time.perf_counter() - started
        for h in handles:
            h.shutdown()
        transport.close()
        if values != ["1"] * n:
            raise RuntimeError(f"{n} concurrent starts ({label}): {values.count('1')} gave a result")
    out["kernels"] = n
    return out
