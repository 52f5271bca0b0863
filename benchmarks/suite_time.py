"""Where a test run's time goes: sums of pytest's ``--durations`` lines by phase, transport and file.

Run the suite with every duration reported, then read its output::

    python -m pytest -n 4 -p no:cacheprovider --hermes-transport=local,docker,ssh,filecell \\
        --hermes-require-transports --hermes-leak-check=error --durations=0 --durations-min=0.05 \\
        tests fixtures examples > /tmp/run.log
    python benchmarks/suite_time.py /tmp/run.log --top 30

Times are worker seconds (under ``-n 4`` up to four times the wall time), summed over the lines
pytest printed: durations under ``--durations-min`` are not in them. A test's transport is the
leg in its id (``[docker]``, ``[ssh-...]``); tests without one (unit, plugin and docs tests, most
of which run pytest in a subprocess) count as ``none``.
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
from collections.abc import Iterable

LINE = re.compile(r"^\s*(?P<s>\d+(?:\.\d+)?)s (?P<phase>setup|call|teardown)\s+(?P<node>\S+)")
TRANSPORTS = ("local", "docker", "ssh", "filecell")
LEG = re.compile(r"\[(?P<leg>" + "|".join(TRANSPORTS) + r")[\]-]")
SUMMARY = re.compile(r"=+ (?P<counts>.*) in (?P<s>\d+(?:\.\d+)?)s")


def durations(lines: Iterable[str]) -> list[tuple[float, str, str]]:
    """``(seconds, phase, node id)`` of each ``--durations`` line."""
    out = []
    for line in lines:
        m = LINE.match(line)
        if m:
            out.append((float(m["s"]), m["phase"], m["node"]))
    return out


def leg(node: str) -> str:
    m = LEG.search(node)
    return m["leg"] if m else "none"


def report(rows: list[tuple[float, str, str]], top: int, wall: str | None) -> str:
    by_phase: collections.Counter[str] = collections.Counter()
    by_leg: collections.Counter[tuple[str, str]] = collections.Counter()
    by_file: collections.Counter[str] = collections.Counter()
    for seconds, phase, node in rows:
        by_phase[phase] += seconds
        by_leg[(leg(node), phase)] += seconds
        by_file[node.split("::", 1)[0]] += seconds
    total = sum(by_phase.values())
    out = [f"{len(rows)} durations, {total:.0f} worker seconds" + (f" (pytest's own line: {wall})" if wall else "")]
    out.append("by phase: " + ", ".join(f"{p} {by_phase[p]:.0f} s" for p in ("setup", "call", "teardown")))
    out.append(f"{'transport':<10} {'setup':>8} {'call':>8} {'teardown':>9} {'total':>8}")
    for name in (*TRANSPORTS, "none"):
        parts = [by_leg[(name, p)] for p in ("setup", "call", "teardown")]
        out.append(f"{name:<10} {parts[0]:>8.0f} {parts[1]:>8.0f} {parts[2]:>9.0f} {sum(parts):>8.0f}")
    out.append(f"\ntop {top} files (worker seconds):")
    out += [f"{seconds:8.1f}  {name}" for name, seconds in by_file.most_common(top)]
    out.append(f"\ntop {top} single durations:")
    out += [f"{seconds:8.2f}  {phase:<8} {node}" for seconds, phase, node in sorted(rows, reverse=True)[:top]]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("log", help="pytest output with --durations=0 lines ('-': stdin)")
    parser.add_argument("--top", type=int, default=25, help="files and single durations to list (default 25)")
    args = parser.parse_args(argv)
    text = sys.stdin.read() if args.log == "-" else open(args.log, encoding="utf-8", errors="replace").read()
    rows = durations(text.splitlines())
    if not rows:
        print(f"{args.log}: no --durations lines (run pytest with --durations=0)", file=sys.stderr)
        return 1
    summary = [m for m in map(SUMMARY.search, text.splitlines()) if m]
    print(report(rows, args.top, f"{summary[-1]['counts']} in {summary[-1]['s']} s" if summary else None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
