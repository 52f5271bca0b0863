"""Scale runs: lifecycle invariants under volume. Each prints its figure and fails loudly.

    python benchmarks/scale.py                 # all of them
    python benchmarks/scale.py --only cycles --cycles 1000

* ``cycles``: N start/stop cycles: 0 leaked processes, host RSS flat within 10 %
  (measured after a warm-up of 50 cycles, so one-time imports and caches are not counted).
* ``alive64``: 64 kernels alive at once under a cap of 64, each answering with its own pid.
* ``race32``: 32 threads send first cells to one key: exactly one kernel process.
* ``churn200``: 200 owners churn through a cap of 4: never more than 4 alive, every evicted
  kernel's process gone, the next cell of an evicted owner reports ``evicted``.
* ``suite``: the full test suite's wall time with ``-n 2``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil

from pytest_hermes_kernel import KernelKey, KernelRegistry, start_kernel
from pytest_hermes_kernel.kernel.runner.environ import SERVER_KERNEL_ID_PREFIX
from pytest_hermes_kernel.procs import processes_with_env

REPO = Path(__file__).resolve().parent.parent


class InvariantBroken(AssertionError):
    pass


def kernel_processes() -> list[str]:
    """Kernel processes of this host, not its kernel servers: a server outlives its kernels by
    design (the transport's, closed with it, as the leak check counts it), and counting it broke
    every invariant (race32 "2 runner process(es)", cycles and alive64 "1 left")."""
    return [p for p in processes_with_env("HERMES_KERNEL_HOST_PID", str(os.getpid()))
            if not _kernel_server(int(p.split(":")[0]))]


def _kernel_server(pid: int) -> bool:
    try:
        return psutil.Process(pid).environ().get("HERMES_KERNEL_ID", "").startswith(SERVER_KERNEL_ID_PREFIX)
    except (psutil.NoSuchProcess, psutil.AccessDenied, OSError):
        return False


def runner_processes() -> list[str]:
    """Kernel runners (supervisors) of this host: they lead their own session."""
    from pytest_hermes_kernel.procs import session_id

    return [p for p in kernel_processes() if session_id(int(p.split(":")[0])) == int(p.split(":")[0])]


def wait_no_kernels(timeout: float = 10.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while (left := kernel_processes()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def cycles(n: int) -> str:
    me = psutil.Process()
    for _ in range(50):
        with start_kernel("local") as k:
            k.execute("1")
    rss0 = me.memory_info().rss
    started = time.perf_counter()
    for i in range(n):
        with start_kernel("local") as k:
            k.execute("1")
        if (i + 1) % 200 == 0:
            print(f"  {i + 1}/{n} cycles, host RSS {me.memory_info().rss / 2**20:.1f} MB", flush=True)
    wall = time.perf_counter() - started
    rss1 = me.memory_info().rss
    left = wait_no_kernels()
    growth = (rss1 - rss0) / rss0
    figure = (f"{n} start/stop cycles in {wall:.1f} s ({wall / n * 1e3:.1f} ms each); leaked processes: "
              f"{len(left)}; host RSS {rss0 / 2**20:.1f} -> {rss1 / 2**20:.1f} MB ({growth:+.1%}); "
              f"open fds {me.num_fds()}")
    if left or growth > 0.10:
        raise InvariantBroken(figure + ("\n  " + "\n  ".join(left) if left else ""))
    return figure


def alive64() -> str:
    with KernelRegistry(max_kernels=64, background_reaper=False) as reg:
        keys = [KernelKey(owner=f"o{i}") for i in range(64)]
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=8) as pool:
            pids = list(pool.map(lambda k: reg.execute(k, "import os; os.getpid()").value, keys))
        wall = time.perf_counter() - started
        alive = sum(psutil.pid_exists(int(p)) for p in pids)
        host_rss = psutil.Process().memory_info().rss / 2**20
        figure = (f"64 kernels started in {wall:.1f} s, {len(set(pids))} distinct pids, {alive} alive, "
                  f"{len(reg)} registry entries; host RSS {host_rss:.1f} MB")
        if len(set(pids)) != 64 or alive != 64 or len(reg) != 64:
            raise InvariantBroken(figure)
    left = wait_no_kernels()
    if left:
        raise InvariantBroken(f"after shutdown_all: {len(left)} kernel processes left")
    return figure


def race32() -> str:
    with KernelRegistry(background_reaper=False) as reg:
        key = KernelKey(owner="race")
        with ThreadPoolExecutor(max_workers=32) as pool:
            pids = list(pool.map(lambda _i: reg.execute(key, "import os; os.getpid()").value, range(32)))
        procs = runner_processes()
        figure = f"32 concurrent first cells for one key: {len(set(pids))} kernel(s), {len(procs)} runner process(es)"
        if len(set(pids)) != 1 or len(procs) != 1:
            raise InvariantBroken(figure)
    return figure


def churn200() -> str:
    with KernelRegistry(max_kernels=4, background_reaper=False) as reg:
        peak = 0
        started = time.perf_counter()
        for i in range(200):
            reg.execute(KernelKey(owner=f"owner-{i}"), f"x = {i}")
            peak = max(peak, len(reg))
        wall = time.perf_counter() - started
        time.sleep(0.2)
        runners = runner_processes()
        back = reg.execute(KernelKey(owner="owner-0"), "x")
        figure = (f"200 owners through a cap of 4 in {wall:.1f} s: peak {peak} registered, {len(runners)} runner "
                  f"processes alive, evicted owner's next cell: {back.ename} reason={back.kernel.reason}; "
                  f"evictions counted: {reg.stats['evicted']}")
        if peak > 4 or len(runners) > 4 or back.kernel.reason != "evicted" or reg.stats["evicted"] < 196:
            raise InvariantBroken(figure)
    return figure


def suite() -> str:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "-q", "-p", "no:cacheprovider", "tests",
                           "fixtures"], cwd=REPO, capture_output=True, text=True)
    wall = time.perf_counter() - started
    tail = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr[-300:]
    return f"full suite with -n 2: {wall:.1f} s wall ({tail}); exit code {proc.returncode}"


RUNS: dict[str, Callable[[argparse.Namespace], str]] = {
    "cycles": lambda a: cycles(a.cycles), "alive64": lambda a: alive64(), "race32": lambda a: race32(),
    "churn200": lambda a: churn200(), "suite": lambda a: suite(),
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", action="append", choices=list(RUNS))
    ap.add_argument("--cycles", type=int, default=1000)
    args = ap.parse_args(argv)
    failed = 0
    for name in args.only or list(RUNS):
        print(f"[scale] {name} ...", flush=True)
        try:
            print(f"[scale] {name}: {RUNS[name](args)}", flush=True)
        except InvariantBroken as exc:
            failed += 1
            print(f"[scale] {name}: INVARIANT BROKEN: {exc}", flush=True)
    print(f"[scale] {'all invariants hold' if not failed else f'{failed} invariant(s) broken'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
