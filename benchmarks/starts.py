"""Kernel start figures (issue #11), each beside its anchor, for ``benchmarks/run.py``.

* start to first result on each transport, on the kernel server path (the default) and on the
  spawn path (``server=False``), in a running container / over an open connection;
* the remote anchors: one ``docker exec true`` (docker-py, as the transport calls it) and one ssh
  exec of ``true`` on the transport's connection;
* idle PSS and USS (unshared) per kernel with 8 kernels forked from one server;
* 64 kernels started at once (local, server and spawn path).

Every figure is milliseconds (p50) or megabytes (MB, 10^6 bytes).
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


MB = 10**6
"""The unit of every ``*_mb`` figure here and in ``measures.py`` (as in ``value_memory.py``): they
were MiB (2^20 bytes), labelled MB."""

FORKED = "forked by kernel server"
"""What a launch's label says when a kernel server forked its runner (local, docker and ssh)."""


def path_of(handle: Any) -> str:
    """``"server"`` when a kernel server forked the kernel's runner, else ``"spawn"`` (its launch's label says which)."""
    launched = handle.launched
    return "server" if launched is not None and FORKED in launched.label else "spawn"


def check_paths(paths: list[str], want: str | None, what: str) -> None:
    """Raise unless every start took path ``want`` (``None``: either): a figure labelled "server
    path" whose starts fell back to a spawn (or "spawn path" whose were forked) measures the other path.

    :raises RuntimeError: if some did not, naming how many."""
    wrong = [p for p in paths if want is not None and p != want]
    if wrong:
        raise RuntimeError(f"{what}: {len(wrong)} of {len(paths)} kernels were started by the {wrong[0]} path, "
                           f"not the {want} path (a kernel server unavailable?): no {want} path figure")


def start_to_first_result(transport: Any, n: int, path: str | None = None) -> tuple[list[float], str]:
    """Seconds from ``start_kernel`` to the first cell's result, ``n`` times (shutdown untimed),
    and the first results' ``kernel.note``s (empty unless the server path fell back).

    :param path: ``"server"`` or ``"spawn"``: the path every start must have taken (``None``: not checked).
    :raises RuntimeError: if a start took the other path (:func:`check_paths`)."""
    with start_kernel(transport) as warm:  # the first start may create a container or a server
        notes = [warm.execute("1").kernel.note]
    times, paths = [], []
    for _ in range(n):
        t = time.perf_counter()
        k = start_kernel(transport)
        notes.append(k.execute("1").kernel.note)
        times.append(time.perf_counter() - t)
        paths.append(path_of(k))
        k.shutdown()
    check_paths(paths, path, f"start to first result on {getattr(transport, 'name', transport)}")
    return times, "; ".join(dict.fromkeys(note for note in notes if note))


def path_figures(name: str, n: int) -> dict[str, Any]:
    """Start to first result on both paths of transport ``name`` (filecell has one path)."""
    server = get_transport(name)
    if name == "filecell":
        times, note = start_to_first_result(server, n)
        return {"start_first_p50_ms": _p50_ms(times), "server_note": note}
    times, note = start_to_first_result(server, n, "server")
    out: dict[str, Any] = {"start_first_p50_ms": _p50_ms(times), "server_note": note}
    spawn = make_transport(name, server=False)
    try:
        out["start_first_spawn_p50_ms"] = _p50_ms(start_to_first_result(spawn, n, "spawn")[0])
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
    """Idle PSS and USS per kernel (supervisor + worker), ``kernels`` forked from one local server.

    :raises RuntimeError: if a kernel was not forked by a kernel server, or not all by the same one."""
    t = get_transport("local")
    handles = [start_kernel(t) for _ in range(kernels)]
    try:
        for h in handles:
            h.execute("1")
        check_paths([path_of(h) for h in handles], "server", "idle memory per kernel")
        servers = {h.launched.label.rsplit(FORKED, 1)[-1] for h in handles}
        if len(servers) != 1:
            raise RuntimeError(f"idle memory per kernel: {kernels} kernels forked by {len(servers)} servers, not one")
        time.sleep(0.5)
        pss, uss = [], []
        for h in handles:
            infos = [psutil.Process(pid).memory_full_info() for pid in (h.runner_pid, h.pid)]
            pss.append(sum(i.pss for i in infos) / MB)
            uss.append(sum(i.uss for i in infos) / MB)
    finally:
        for h in handles:
            h.shutdown()
    return {"kernels": kernels, "idle_pss_mb": statistics.median(pss), "idle_uss_mb": statistics.median(uss)}


def concurrent_starts(n: int = 64) -> dict[str, float]:
    """Seconds for ``n`` local kernels started at once to all give their first result, on both paths.

    :raises RuntimeError: if not all ``n`` gave a result, they were not ``n`` distinct kernels, or
        one took the other path."""
    out = {}
    for label, server in (("server", True), ("spawn", False)):
        transport = make_transport("local", server=server)
        try:
            out[f"{label}_s"] = _all_at_once(transport, n, label)
        finally:
            transport.close()
    out["kernels"] = n
    return out


def _all_at_once(transport: Any, n: int, path: str) -> float:
    """Seconds for ``n`` kernels of ``transport`` started from ``n`` threads to all give a first result."""
    with start_kernel(transport) as warm:
        warm.execute("1")
    handles = [KernelHandle(transport, KernelOptions()) for _ in range(n)]
    try:
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=n) as pool:
            values = list(pool.map(lambda h: h.start().execute("1").value, handles))
        took = time.perf_counter() - started
        if values != ["1"] * n:
            raise RuntimeError(f"{n} concurrent starts ({path}): {values.count('1')} gave a result")
        runners = {(h.runner_pid, h.pid) for h in handles}
        if len(runners) != n or None in {pid for pair in runners for pid in pair}:
            raise RuntimeError(f"{n} concurrent starts ({path}): {len(runners)} distinct kernels")
        check_paths([path_of(h) for h in handles], path, f"{n} concurrent starts")
    finally:
        for h in handles:
            h.shutdown()
    return took
