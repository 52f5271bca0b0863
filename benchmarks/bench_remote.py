"""Docker and ssh transport benchmarks, each beside its floor (DESIGN.md section 9).

Run:  python benchmarks/bench_remote.py [--transports docker,ssh] [--cells 2000] [--starts 20] [--json out.json]

Figures (per transport):
* cell round trip for a trivial cell (``1``), p50 and p99, vs. the floor: a raw echo through
  the same path (``docker exec cat`` on a hijacked socket; ``cat`` on a paramiko exec channel);
* kernel start (runner shipped, started, relay attached, hello) in an already running
  container / over an established connection, median, and the first start of the session
  (container or sshd container start included).
"""

from __future__ import annotations

import argparse
import json
import select
import statistics
import sys
import time
from pathlib import Path

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports import make_transport

sys.path.insert(0, str(Path(__file__).resolve().parent))

import measures  # noqa: E402


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile (0.99) of ``values`` by nearest rank (``int(q * n)`` was one rank too
    high: the p99 of 100 round trips was the slowest of them)."""
    return measures.percentile(values, round(q * 100))


def round_trip(transport, cells: int) -> list[float]:
    with start_kernel(transport) as k:
        for _ in range(200):
            k.execute("1")
        times = []
        for _ in range(cells):
            t = time.perf_counter()
            k.execute("1")
            times.append(time.perf_counter() - t)
    return times


def starts(transport, n: int) -> list[float]:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        k = start_kernel(transport)
        k.execute("1")
        times.append(time.perf_counter() - t)
        k.shutdown()
    return times


def docker_echo_floor(transport, cells: int) -> list[float]:
    stream = transport.open_exec(transport.shared_container(), ["cat"])
    times = []
    try:
        for i in range(cells + 200):
            t = time.perf_counter()
            stream.send(b"1\n")
            got = b""
            while len(got) < 2:
                got += stream.recv(5.0)
            if i >= 200:
                times.append(time.perf_counter() - t)
    finally:
        stream.close()
    return times


def ssh_echo_floor(transport, cells: int) -> list[float]:
    chan = transport._connection().open_exec("cat")
    times = []
    try:
        for i in range(cells + 200):
            t = time.perf_counter()
            chan.sendall(b"1\n")
            got = b""
            while len(got) < 2:
                select.select([chan], [], [], 5.0)
                if chan.recv_ready():
                    got += chan.recv(64)
            if i >= 200:
                times.append(time.perf_counter() - t)
    finally:
        chan.close()
    return times


def measure(name: str, cells: int, n_starts: int) -> dict[str, float]:
    transport = make_transport(name)
    try:
        t = time.perf_counter()
        with start_kernel(transport) as k:
            k.execute("1")
        first = time.perf_counter() - t
        rt = round_trip(transport, cells)
        floor = (docker_echo_floor if name == "docker" else ssh_echo_floor)(transport, cells)
        st = starts(transport, n_starts)
    finally:
        transport.close()
    return {"round_trip_p50_ms": statistics.median(rt) * 1e3, "round_trip_p99_ms": pct(rt, 0.99) * 1e3,
            "floor_echo_p50_ms": statistics.median(floor) * 1e3, "start_median_s": statistics.median(st),
            "first_start_s": first}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transports", default="docker,ssh")
    parser.add_argument("--cells", type=int, default=2000)
    parser.add_argument("--starts", type=int, default=20)
    parser.add_argument("--json")
    args = parser.parse_args()
    results = {}
    for name in filter(None, args.transports.split(",")):
        results[name] = measure(name, args.cells, args.starts)
        r = results[name]
        print(f"{name:6s} round trip p50 {r['round_trip_p50_ms']:.2f} ms  p99 {r['round_trip_p99_ms']:.2f} ms  "
              f"(floor echo p50 {r['floor_echo_p50_ms']:.2f} ms)  start median {r['start_median_s'] * 1e3:.0f} ms  "
              f"first start {r['first_start_s']:.2f} s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(results, fh, indent=2)


if __name__ == "__main__":
    main()
