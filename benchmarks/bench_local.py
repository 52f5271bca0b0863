"""Local transport benchmarks, side by side with their anchors (DESIGN.md section 9).

Run:  python benchmarks/bench_local.py [--cells 3000] [--starts 30] [--json out.json]

Figures (medians of many iterations):
* cell round trip for a trivial cell (``1``), p50 and p99, vs. a raw pipe echo with a child
  Python (the floor) and, when installed (``pip install '.[bench]'``), jupyter_client+ipykernel;
* start to first result, vs. a bare ``python -c pass`` and jupyter_client;
* idle kernel memory: RSS and PSS of the runner's supervisor + worker (PSS shares the pages
  the fork left in common), vs. a bare Python child and an idle ipykernel.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import psutil

from pytest_hermes_kernel import start_kernel


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def round_trip(cells: int) -> list[float]:
    with start_kernel("local") as k:
        for _ in range(200):
            k.execute("1")
        times = []
        for _ in range(cells):
            t = time.perf_counter()
            k.execute("1")
            times.append(time.perf_counter() - t)
    return times


def raw_pipe_echo(cells: int) -> list[float]:
    code = "import os\nwhile True:\n d=os.read(0, 64)\n if not d: break\n os.write(1, d)"
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    times = []
    for i in range(cells + 200):
        t = time.perf_counter()
        proc.stdin.write(b"1\n")
        proc.stdout.read(2)
        if i >= 200:
            times.append(time.perf_counter() - t)
    proc.stdin.close()
    proc.wait()
    return times


def start_to_first_result(n: int) -> list[float]:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        with start_kernel("local") as k:
            k.execute("1")
            times.append(time.perf_counter() - t)
    return times


def bare_python_start(n: int) -> list[float]:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - t)
    return times


def memory_of(pids: list[int]) -> tuple[float, float]:
    rss = pss = 0
    for pid in pids:
        info = psutil.Process(pid).memory_full_info()
        rss += info.rss
        pss += info.pss
    return rss / 2**20, pss / 2**20


def idle_memory() -> dict[str, float]:
    with start_kernel("local") as k:
        k.execute("1")
        time.sleep(0.5)
        rss, pss = memory_of([k.runner_pid, k.pid])
        worker_rss, worker_pss = memory_of([k.pid])
    proc = subprocess.Popen([sys.executable, "-c", "import json, socket, selectors, ast, traceback; import time; time.sleep(30)"])
    time.sleep(0.8)
    bare, _ = memory_of([proc.pid])
    proc.kill()
    proc.wait()
    return {"kernel_rss_mb": rss, "kernel_pss_mb": pss, "worker_rss_mb": worker_rss, "worker_pss_mb": worker_pss,
            "bare_python_rss_mb": bare}


def jupyter_anchor(cells: int, starts: int) -> dict[str, float] | None:
    try:
        from jupyter_client.manager import start_new_kernel
    except ImportError:
        return None
    out: dict[str, float] = {}
    start_times = []
    for _ in range(starts):
        t = time.perf_counter()
        km, kc = start_new_kernel(kernel_name="python3")
        kc.execute_interactive("1", timeout=30)
        start_times.append(time.perf_counter() - t)
        km.shutdown_kernel(now=True)
        kc.stop_channels()
    out["start_p50_ms"] = statistics.median(start_times) * 1e3
    km, kc = start_new_kernel(kernel_name="python3")
    times = []
    for i in range(cells + 50):
        t = time.perf_counter()
        kc.execute_interactive("1", timeout=30)
        if i >= 50:
            times.append(time.perf_counter() - t)
    out["rt_p50_ms"] = statistics.median(times) * 1e3
    out["rt_p99_ms"] = pct(times, 0.99) * 1e3
    pid = km.provisioner.process.pid if km.provisioner else km.kernel.pid
    out["idle_rss_mb"] = memory_of([pid])[0]
    km.shutdown_kernel(now=True)
    kc.stop_channels()
    return out


def main(argv: list[str] | None = None) -> dict[str, object]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", type=int, default=3000)
    ap.add_argument("--starts", type=int, default=30)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    rt = round_trip(args.cells)
    echo = raw_pipe_echo(args.cells)
    start = start_to_first_result(args.starts)
    bare = bare_python_start(args.starts)
    mem = idle_memory()
    jup = jupyter_anchor(min(args.cells, 500), min(args.starts, 5))
    res = {
        "python": sys.version.split()[0], "cpus": os.cpu_count(),
        "cell_rt_p50_ms": statistics.median(rt) * 1e3, "cell_rt_p99_ms": pct(rt, 0.99) * 1e3,
        "raw_pipe_echo_p50_ms": statistics.median(echo) * 1e3,
        "start_to_first_result_p50_ms": statistics.median(start) * 1e3,
        "bare_python_start_p50_ms": statistics.median(bare) * 1e3, **mem, "jupyter": jup,
    }
    rows = [
        ("local cell round trip p50 (target <= 0.25 ms)", res["cell_rt_p50_ms"], res["raw_pipe_echo_p50_ms"],
         "raw pipe echo", (jup or {}).get("rt_p50_ms")),
        ("local cell round trip p99", res["cell_rt_p99_ms"], None, "", (jup or {}).get("rt_p99_ms")),
        ("start to first result p50 (target <= 60 ms)", res["start_to_first_result_p50_ms"],
         res["bare_python_start_p50_ms"], "bare python", (jup or {}).get("start_p50_ms")),
        ("idle kernel RSS, runner+worker (target <= 15 MB)", mem["kernel_rss_mb"], mem["bare_python_rss_mb"],
         "bare python", (jup or {}).get("idle_rss_mb")),
        ("idle kernel PSS, runner+worker", mem["kernel_pss_mb"], None, "", None),
    ]
    print(f"{'figure':52} {'ours':>9} {'floor':>9} {'jupyter':>9}  ratio(ours/jupyter)")
    for name, ours, floor, _fname, jval in rows:
        f = f"{floor:9.3f}" if floor is not None else " " * 9
        j = f"{jval:9.3f}" if jval is not None else "      n/a"
        ratio = f"{ours / jval:.2f}x" if jval else ""
        print(f"{name:52} {ours:9.3f} {f} {j}  {ratio}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(res, fh, indent=2)
    return res


if __name__ == "__main__":
    main()
