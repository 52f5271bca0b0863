"""Kernel start and cell round trip of two checkouts, side by side in one run.

    python benchmarks/compare_checkouts.py BEFORE_DIR AFTER_DIR [--rounds 6] [--transport local]

Each checkout runs with its own interpreter (``<dir>/.venv/bin/python`` when there is one) in
alternating rounds, each checkout first in every other one (A, B, B, A, A, B, ...), so both see the
same machine load and the same place in a round: the second of a pair met what the first left
behind (on docker, the same code measured second read 1.21x, before and after swapped 1.17x either
way); the figures are medians over all rounds: start = ``start_kernel`` + first cell + shutdown,
round trip = one trivial cell. Beside each ratio, the spread: the lowest and highest ratio of
one round's medians (a ratio inside it says less than its digits).
Used for the "within 10 % of before" check of a re-layout (issue #8).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

import cli_args  # benchmarks/, on sys.path as for every script here

PROBE = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from pytest_hermes_kernel import start_kernel
name, starts, cells = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
with start_kernel(name) as warm:
    warm.execute("1")
start = []
for _ in range(starts):
    t0 = time.perf_counter()
    with start_kernel(name) as k:
        k.execute("1")
    start.append(time.perf_counter() - t0)
rt = []
with start_kernel(name) as k:
    for i in range(cells + 200):
        t0 = time.perf_counter()
        k.execute("1")
        if i >= 200:
            rt.append(time.perf_counter() - t0)
print(json.dumps({"start": start, "rt": rt}))
"""


def _python(checkout: Path) -> str:
    venv = checkout / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def _round(checkout: Path, transport: str, starts: int, cells: int) -> dict[str, list[float]]:
    out = subprocess.run([_python(checkout), "-c", PROBE, str(checkout), transport, str(starts), str(cells)],
                         cwd=checkout, capture_output=True, text=True, check=True, timeout=600)
    return json.loads(out.stdout.strip().splitlines()[-1])


def order(n: int, before: Path, after: Path) -> list[tuple[str, Path]]:
    """Round ``n``'s runs: each checkout first in every other round."""
    pair = [("before", before), ("after", after)]
    return pair if n % 2 == 0 else pair[::-1]


def spread(before: list[list[float]], after: list[list[float]]) -> tuple[float, float]:
    """The lowest and highest after/before ratio of one round's medians, over the rounds."""
    ratios = [statistics.median(a) / statistics.median(b) for b, a in zip(before, after)]
    return min(ratios), max(ratios)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--transport", default="local")
    ap.add_argument("--rounds", type=cli_args.count(2, even=True), default=6, help="an even number (default 6)")
    ap.add_argument("--starts", type=cli_args.count(1), default=10)
    ap.add_argument("--cells", type=cli_args.count(1), default=1000)
    args = ap.parse_args(argv)
    rounds: dict[str, dict[str, list[list[float]]]] = {"before": {"start": [], "rt": []}, "after": {"start": [], "rt": []}}
    for n in range(args.rounds):
        for label, checkout in order(n, args.before, args.after):
            got = _round(checkout.resolve(), args.transport, args.starts, args.cells)
            for key in ("start", "rt"):
                rounds[label][key].append(got[key])
        print(f"[compare] round {n + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    print(f"{args.transport}: {'figure':26} {'before':>10} {'after':>10} {'after/before':>13}  per round (spread)")
    for key, name in (("start", "start+first cell+stop p50"), ("rt", "cell round trip p50")):
        b, a = (statistics.median([x for r in rounds[who][key] for x in r]) * 1e3 for who in ("before", "after"))
        low, high = spread(rounds["before"][key], rounds["after"][key])
        print(f"{'':{len(args.transport) + 2}}{name:26} {b:8.3f}ms {a:8.3f}ms {a / b:12.3f}x  {low:.3f}x-{high:.3f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
