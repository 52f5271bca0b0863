"""What each test of a run costs in CPU, machine-wide: where a suite's floor on N cores comes from.

Worker seconds (``benchmarks/suite_time.py``) say how long tests take, not what they cost: a test
that waits 5 s for a keepalive bound costs almost nothing, a 3 s output flood keeps both cores
busy. The floor of a parallel run's wall time is its CPU divided by the cores, so this measures
CPU per test: the machine's busy jiffies (``/proc/stat``: user, nice, system, irq, softirq,
steal) from a test's setup to its teardown, which counts everything the test causes: its kernels,
inner pytest runs, ``dockerd``, ``containerd``, ``runc``, sshd in its containers.

That attribution is exact only when one test runs at a time, so the plugin refuses ``-n N``::

    PYTHONPATH=benchmarks python -m pytest -p suite_cpu -n 0 -p no:cacheprovider \\
        --hermes-transport=local,docker,ssh,filecell --hermes-require-transports \\
        --hermes-leak-check=error tests fixtures examples      # writes suite-cpu.json
    python benchmarks/suite_cpu.py suite-cpu.json --top 25

Prints CPU seconds and wall seconds by top-level directory, by transport leg and by file, the
costliest tests, and the floor: total CPU over 2 cores. Background load (an idle ``dockerd``, a
kernel's keepalives) is counted into whichever test runs; on an idle 2-core machine it is about
0.1 core. ``SUITE_CPU_OUT`` names the output file (default ``suite-cpu.json``).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

TRANSPORTS = ("local", "docker", "ssh", "filecell")
LEG = re.compile(r"\[(?P<leg>" + "|".join(TRANSPORTS) + r")[\]-]")
TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def busy_seconds() -> float:
    """CPU seconds the whole machine has been busy since boot (first line of ``/proc/stat``)."""
    with open("/proc/stat") as fh:
        fields = [int(x) for x in fh.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    return (user + nice + system + irq + softirq + steal) / TICKS_PER_S


# ---------------------------------------------------------------------------------- the plugin
_rows: dict[str, tuple[float, float]] = {}


def pytest_configure(config: Any) -> None:
    workers = getattr(config.option, "numprocesses", None)
    if workers not in (None, 0):
        raise pytest.UsageError("suite_cpu counts machine-wide CPU to the test that runs: use -n 0")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: Any, nextitem: Any) -> Iterator[None]:
    busy, start = busy_seconds(), time.monotonic()
    yield
    _rows[item.nodeid] = (busy_seconds() - busy, time.monotonic() - start)


def pytest_sessionfinish(session: Any) -> None:
    path = os.environ.get("SUITE_CPU_OUT", "suite-cpu.json")
    with open(path, "w") as fh:
        json.dump({"tests": {k: {"cpu_s": c, "wall_s": w} for k, (c, w) in _rows.items()}}, fh)


# ---------------------------------------------------------------------------------- the report
def leg(node: str) -> str:
    m = LEG.search(node)
    return m["leg"] if m else "none"


def report(tests: dict[str, dict[str, float]], top: int, cores: int) -> str:
    """The tables printed for ``tests`` (node id -> ``cpu_s``, ``wall_s``)."""
    groups: dict[str, collections.defaultdict[str, list[float]]] = {
        name: collections.defaultdict(lambda: [0.0, 0.0, 0]) for name in ("directory", "transport", "file")}
    for node, row in tests.items():
        path = node.split("::", 1)[0]
        for name, key in (("directory", "/".join(path.split("/")[:2])), ("transport", leg(node)), ("file", path)):
            acc = groups[name][key]
            acc[0] += row["cpu_s"]
            acc[1] += row["wall_s"]
            acc[2] += 1
    cpu = sum(r["cpu_s"] for r in tests.values())
    wall = sum(r["wall_s"] for r in tests.values())
    out = [f"{len(tests)} tests: {cpu:.0f} CPU-s in {wall:.0f} s of wall time, one at a time "
           f"({cpu / wall:.2f} cores busy on average)",
           f"floor of a parallel run on {cores} cores: {cpu / cores:.0f} s (every core busy all the time)"]
    for name, limit in (("directory", 15), ("transport", 5), ("file", top)):
        out.append(f"\nby {name}: {'CPU-s':>8} {'wall s':>8} {'tests':>6} {'CPU ms/test':>12}")
        ranked = sorted(groups[name].items(), key=lambda kv: -kv[1][0])[:limit]
        out += [f"  {c:>8.1f} {w:>8.1f} {n:>6} {c / n * 1000:>12.0f}  {key}" for key, (c, w, n) in ranked]
    out.append(f"\ncostliest {top} tests: {'CPU-s':>8} {'wall s':>8}")
    ranked_tests = sorted(tests.items(), key=lambda kv: -kv[1]["cpu_s"])[:top]
    out += [f"  {r['cpu_s']:>8.2f} {r['wall_s']:>8.2f}  {node}" for node, r in ranked_tests]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("path", help="the JSON the plugin wrote (SUITE_CPU_OUT)")
    parser.add_argument("--top", type=int, default=25, help="files and tests to list")
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 1, help="cores of the floor")
    args = parser.parse_args(argv)
    try:
        with open(args.path) as fh:
            tests = json.load(fh)["tests"]
    except (OSError, ValueError, KeyError) as exc:
        print(f"suite_cpu: cannot read {args.path}: {exc}", file=sys.stderr)
        return 2
    if not tests:
        print(f"suite_cpu: {args.path} has no tests", file=sys.stderr)
        return 2
    print(report(tests, args.top, args.cores))
    return 0


if __name__ == "__main__":
    sys.exit(main())
