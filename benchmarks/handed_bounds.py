"""How soon the handed cases' cells come back, beside the bound each case file names.

A regression test asserts what a cell does (its status and value: a read of stdin ended by
end-of-file, not by the cell's timeout); how soon it does so is a figure, measured here. Asserted
per cell in a test (``< 1.0`` s), it failed on a loaded 2-core machine with every value right.

    python benchmarks/handed_bounds.py [--transports local,docker] [--rounds 20]

Prints, per transport and cell, the p50 and the slowest of ``--rounds`` runs in milliseconds, the
case's bound, and ``over`` where the slowest run passed it. Cases:

* B17 (``tests/regressions/test_handed_b17_stdin_is_dev_null.py``): each read of stdin in a cell,
  or in a child that inherits it, ends at once (the case: at most 1 s).
* B07 (``tests/regressions/test_handed_b07_system_exit_policy.py``): ``exit()`` ends the kernel
  cleanly, and an ``os._exit(5)`` is seen, promptly (the case: at most 2 s).

Each timed cell follows an untimed one, so a cell that ended the kernel before it is not timed
with the next generation's start.
"""

from __future__ import annotations

import argparse
import statistics
import time

from pytest_hermes_kernel import start_kernel

#: ``{case: (bound in seconds, [cell, ...])}``.
CASES: dict[str, tuple[float, list[str]]] = {
    "B17": (1.0, ['input("name? ")',
                  'import subprocess; subprocess.run(["cat"], capture_output=True).stdout',
                  "import sys; sys.stdin.read()",
                  'subprocess.run(["sh", "-c", "read line; echo got:$line"], capture_output=True, text=True).stdout']),
    "B07": (2.0, ["exit()", "import os; os._exit(5)"]),
}


def time_cells(transport: str, rounds: int) -> list[tuple[str, str, float, list[float]]]:
    """``(case, cell, bound_s, [seconds per round])`` for each case's cells, on one kernel of ``transport``."""
    rows: list[tuple[str, str, float, list[float]]] = []
    with start_kernel(transport) as kernel:
        for case, (bound, cells) in CASES.items():
            for code in cells:
                took = []
                for _ in range(rounds):
                    kernel.execute("0", timeout=60.0)  # (a fresh generation after a B07 cell: not timed)
                    started = time.monotonic()
                    kernel.execute(code, timeout=10.0)
                    took.append(time.monotonic() - started)
                rows.append((case, code, bound, took))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--transports", default="local", help="comma-separated transport names")
    ap.add_argument("--rounds", type=int, default=20, help="runs of each cell")
    args = ap.parse_args()
    for transport in args.transports.split(","):
        for case, code, bound, took in time_cells(transport, args.rounds):
            worst = max(took)
            print(f"{transport:8} {case:4} p50 {statistics.median(took) * 1e3:7.1f} ms  max {worst * 1e3:7.1f} ms  "
                  f"bound {bound * 1e3:.0f} ms{'  over' if worst > bound else ''}  {code[:60]}")


if __name__ == "__main__":
    main()
