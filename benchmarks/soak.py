"""Long use of one KernelRegistry, the way an agent host uses it for days: what grows per cycle.

    python benchmarks/soak.py --transport local --cycles 50 500
    python benchmarks/soak.py --transport docker --cycles 20 200 --server off

One *cycle*: a new key (a new conversation) on one registry with ``max_kernels=2`` (so every
cycle evicts one), a few cells (one printing 200 KiB, one over its budget, one interrupted from
another thread, one on a restarted kernel), every other cycle ``shutdown_owner`` of an old key
(``--mode reap``: one cell, then the kernel reaped idle and its kernel server ended idle).
After the warm-up and after each checkpoint in ``--cycles``, the host process is measured: fds,
threads, children and zombies, RSS, gc objects by type, the registry's and transport's own
dicts and lists, and the median time per cell over the last stretch. Prints the growth per 100
cycles between the first and last checkpoint; a figure that grows linearly is a leak.
"""

from __future__ import annotations

import argparse
import collections
import gc
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psutil  # noqa: E402

from pytest_hermes_kernel import KernelKey, KernelRegistry  # noqa: E402
from pytest_hermes_kernel.transports import make_transport  # noqa: E402


def sizes(obj: Any, prefix: str, out: dict[str, int], depth: int = 1) -> None:
    """``len`` of every container attribute of ``obj`` (and one level into its plain objects)."""
    for name, value in list(vars(obj).items()):
        if isinstance(value, (dict, list, set, collections.deque, collections.OrderedDict)):
            out[f"{prefix}.{name}"] = len(value)
            inner = list(value.values()) if isinstance(value, dict) else []
            if inner and all(isinstance(v, (dict, list, set)) for v in inner):  # {place: {paths}}: what is in them
                out[f"{prefix}.{name}[*]"] = sum(len(v) for v in inner)
        elif depth > 0 and hasattr(value, "__dict__") and not isinstance(value, type) and not callable(value):
            sizes(value, f"{prefix}.{name}", out, depth - 1)


def measure(reg: KernelRegistry, transport: Any) -> dict[str, float]:
    gc.collect()
    me = psutil.Process()
    kids = me.children(recursive=True)
    out: dict[str, float] = {
        "fds": len(os.listdir("/proc/self/fd")), "threads": threading.active_count(),
        "tasks": len(os.listdir("/proc/self/task")), "children": len(kids),
        "zombies": sum(1 for k in kids if _status(k) == psutil.STATUS_ZOMBIE),
        "rss_kib": me.memory_info().rss // 1024, "gc_objects": len(gc.get_objects()),
    }
    sizes(reg, "reg", out)  # type: ignore[arg-type]
    sizes(transport, "transport", out)  # type: ignore[arg-type]
    pool = getattr(transport, "servers", None) or getattr(transport, "_servers", None)
    for i, server in enumerate(list(getattr(pool, "_servers", {}).values())):  # each kernel server's host side
        sizes(server, f"server{i}", out, depth=0)
    out.update(far_side(transport))
    return out


FAR_SIDE = r"""
import os
procs = zombies = 0
servers = []
for pid in filter(str.isdigit, os.listdir('/proc')):
    try:
        stat = open(f'/proc/{pid}/stat').read()
        cmd = open(f'/proc/{pid}/cmdline', 'rb').read().replace(b'\0', b' ')
    except OSError:
        continue
    procs += 1
    zombies += stat.rsplit(')', 1)[1].split()[0] == 'Z'
    if b'.pyz server' in cmd and int(pid) != os.getpid():
        try:
            servers.append((len(os.listdir(f'/proc/{pid}/fd')), len(os.listdir(f'/proc/{pid}/task'))))
        except OSError:
            pass
dirs = 0
for root in ('/tmp', os.path.expanduser('~/.hermes-kernels')):
    try:
        dirs += len(os.listdir(root))
    except OSError:
        pass
print(procs, zombies, dirs, len(servers), sum(s[0] for s in servers), sum(s[1] for s in servers))
"""


def far_side(transport: Any) -> dict[str, float]:
    """Processes, zombies, entries of /tmp and ~/.hermes-kernels, kernel servers and their fds and
    threads, where docker or ssh kernels run."""
    if transport.name == "docker":
        cid = transport.hosts.run_container()
        code, out = transport.run_script(cid, FAR_SIDE, user="")
    elif transport.name == "ssh":
        code, out = transport.run_probe(FAR_SIDE)
        conn = transport.current_connection
        chans = len(conn.client.get_transport()._channels.values()) if conn is not None else -1
    else:  # local: this process's kernel and kernel server dirs in the kernel dir root
        from pytest_hermes_kernel.transports.kernel_dirs import kernel_dir_root

        mine = f"-{os.getpid()}-"
        return {"local.dirs": sum(1 for n in os.listdir(kernel_dir_root()) if n.startswith("hermes-kernel") and mine in n)}
    names = ["far.procs", "far.zombies", "far.dirs", "far.servers", "far.server_fds", "far.server_threads"]
    res = dict(zip(names, map(int, out.split()))) if code == 0 else {"far.failed": 1}
    if transport.name == "ssh":
        res["ssh.channels"] = chans
    return res


def _status(proc: psutil.Process) -> str:
    try:
        return proc.status()
    except psutil.Error:
        return "gone"


def by_type() -> collections.Counter[str]:
    gc.collect()
    return collections.Counter(type(o).__qualname__ for o in gc.get_objects())


def cycle(reg: KernelRegistry, i: int, transport_name: str, times: list[float]) -> None:
    key = KernelKey(owner=f"conv-{i}", transport=transport_name)
    t0 = time.perf_counter()
    r = reg.execute(key, "x = 1")
    times.append(time.perf_counter() - t0)
    assert r.status == "ok", r
    for _ in range(3):
        t0 = time.perf_counter()
        assert reg.execute(key, "x + 1").value == "2"
        times.append(time.perf_counter() - t0)
    assert reg.execute(key, "print('y' * 200_000)").status == "ok"
    assert reg.execute(key, "import time; time.sleep(30)", timeout=0.2).status == "timeout"
    handle = reg.get_or_start(key)
    timer = threading.Timer(0.2, handle.interrupt)
    timer.start()
    r = reg.execute(key, "import time; time.sleep(30)")
    timer.join()
    assert r.status == "interrupted", r
    assert reg.execute(key, "x", reset=True).status == "error"
    if i % 2:  # every other conversation ends on purpose (its kernel evicted already, mostly)
        reg.shutdown_owner(f"conv-{i - 2}")


def reap_cycle(reg: KernelRegistry, i: int, transport_name: str, times: list[float]) -> None:
    """``--mode reap``: a cell, then wait until the idle reaper ended the kernel and the kernel
    server ended itself for being idle (the next cycle starts both again)."""
    key = KernelKey(owner=f"conv-{i}", transport=transport_name)
    t0 = time.perf_counter()
    r = reg.execute(key, "print('y' * 50_000); x = 1")
    times.append(time.perf_counter() - t0)
    assert r.status == "ok", r
    _wait(lambda: len(reg) == 0, 20.0, "the idle reaper to end the kernel")
    transport = reg._factory(key)
    _wait(lambda: not _servers_alive(transport), 20.0, "the idle kernel server to end")


def _servers_alive(transport: Any) -> int:
    if transport.name == "local":
        return sum(1 for k in psutil.Process().children() if _status(k) not in (psutil.STATUS_ZOMBIE, "gone"))
    return far_side(transport).get("far.servers", 0)


def _wait(pred: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout} s for {what}")
        time.sleep(0.05)


def checkpoints(values: list[int]) -> list[int]:
    """``--cycles``: at least two checkpoints, whole numbers, each above the one before; the growth
    is measured between the first and the last (one checkpoint printed "+0.0" for every figure, a
    leak included; a lower one after a higher measured no cycle in between).

    :raises argparse.ArgumentTypeError: if they are not."""
    if len(values) < 2:
        raise argparse.ArgumentTypeError("--cycles needs two checkpoints or more (growth is between the first and last)")
    if values[0] < 1 or any(b <= a for a, b in zip(values, values[1:])):
        raise argparse.ArgumentTypeError(f"--cycles {' '.join(map(str, values))}: each checkpoint a number of cycles "
                                         "above the one before (from 1)")
    return values


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--transport", default="local")
    ap.add_argument("--cycles", type=int, nargs="+", default=[50, 500])
    ap.add_argument("--server", choices=["on", "off"], default="on")
    ap.add_argument("--types", action="store_true", help="print gc object types that grew most")
    ap.add_argument("--mode", choices=["cells", "reap"], default="cells",
                    help="reap: each cycle one cell, then the kernel reaped idle and its kernel server ended idle")
    args = ap.parse_args(argv)
    try:
        checkpoints(args.cycles)
    except argparse.ArgumentTypeError as exc:
        ap.error(str(exc))
    reap = args.mode == "reap"
    extra = {"server_idle_timeout": 0.5} if reap else {}
    if args.transport != "filecell":  # (filecell has no kernel server)
        extra["server"] = args.server == "on"
    transport = make_transport(args.transport, **extra)
    from pytest_hermes_kernel import WatchdogPolicy
    from pytest_hermes_kernel.kernel.options import KernelOptions

    reg = KernelRegistry(max_kernels=2, idle_timeout=0.3 if reap else None, transport_factory=lambda key: transport,
                         options=KernelOptions(watchdog=WatchdogPolicy(interrupt_grace=1.0, kill_grace=1.0)))
    times: list[float] = []
    try:
        for i in range(5):
            (reap_cycle if reap else cycle)(reg, i, args.transport, times)
        base, base_types, done = measure(reg, transport), by_type() if args.types else None, 5
        base_at = done
        times.clear()
        rows = [(done, base, 0.0)]
        for target in args.cycles:
            started = time.monotonic()
            while done < base_at + target:
                (reap_cycle if reap else cycle)(reg, done, args.transport, times)
                done += 1
            m = measure(reg, transport)
            rows.append((done - base_at, m, statistics.median(times) * 1e3))
            print(f"[soak] {done - base_at} cycles ({time.monotonic() - started:.0f} s): median cell "
                  f"{statistics.median(times) * 1e3:.2f} ms", file=sys.stderr, flush=True)
            times.clear()
        first, last = rows[1], rows[-1]
        span = last[0] - first[0]
        print(f"{'figure':45} {'base':>9} " + " ".join(f"{'@' + str(r[0]):>9}" for r in rows[1:]) + "  per 100 cycles")
        for name in sorted(set(base) | set(last[1])):
            vals = [r[1].get(name, 0) for r in rows]
            growth = (vals[-1] - vals[1]) * 100 / span if span else 0
            flag = "  <-- grows" if abs(growth) >= 1 and growth > 0 else ""
            print(f"{name:45} " + " ".join(f"{v:9.0f}" for v in vals) + f"  {growth:+.1f}{flag}")
        print(f"{'median cell ms':45} {'':9} " + " ".join(f"{r[2]:9.2f}" for r in rows[1:]))
        if base_types is not None:
            grown = by_type() - base_types
            print("gc types grown:", grown.most_common(25))
    finally:
        reg.close()
        transport.close()


if __name__ == "__main__":
    main()
