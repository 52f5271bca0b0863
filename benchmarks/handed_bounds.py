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
* B03/B25/B26 (``tests/transports/test_docker.py``, ``test_ssh.py``: ``test_interrupt_of_a_long_sleep_arrives``):
  from ``interrupt()`` to the interrupted result of a cell in a long sleep (the cases: at most 2 s).
* The ssh upload (``tests/regressions/test_an_ssh_upload_is_pipelined.py``): an 8 MiB ``upload()``
  (its bound when found: 4 s on loopback; unpipelined it took ~8 s).

Each timed cell follows an untimed one, so a cell that ended the kernel before it is not timed
with the next generation's start.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pytest_hermes_kernel import start_kernel

#: ``{case: (bound in seconds, [cell, ...])}``.
CASES: dict[str, tuple[float, list[str]]] = {
    "B17": (1.0, ['input("name? ")',
                  'import subprocess; subprocess.run(["cat"], capture_output=True).stdout',
                  "import sys; sys.stdin.read()",
                  'subprocess.run(["sh", "-c", "read line; echo got:$line"], capture_output=True, text=True).stdout']),
    "B07": (2.0, ["exit()", "import os; os._exit(5)"]),
}

#: The ssh upload case's size and the bound its test had when found.
UPLOAD_BYTES, UPLOAD_BOUND_S = 8 << 20, 4.0


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


def time_interrupts(transport: str, rounds: int) -> list[float]:
    """Seconds from ``interrupt()`` to the result of a cell sleeping 600 s, ``rounds`` times, once the cell
    said it runs (a tool call).

    :raises RuntimeError: if a cell did not come back interrupted."""
    running = threading.Event()
    took: list[float] = []
    with start_kernel(transport, tools={"running": lambda: running.set()}) as kernel:
        for _ in range(rounds):
            running.clear()
            with ThreadPoolExecutor(1) as pool:
                cell = pool.submit(kernel.execute, "import hermes_tools, time\nhermes_tools.running()\ntime.sleep(600)")
                if not running.wait(60.0):
                    raise RuntimeError(f"the cell did not start on {transport}")
                sent = time.monotonic()
                kernel.interrupt()
                result = cell.result(timeout=60.0)
                took.append(time.monotonic() - sent)
            if result.status != "interrupted":
                raise RuntimeError(f"not interrupted on {transport}: {result.summary()}")
    return took


def time_uploads(transport: str, rounds: int, tmp: Path) -> list[float]:
    """Seconds each of ``rounds`` uploads of :data:`UPLOAD_BYTES` random bytes takes, on one kernel."""
    src = tmp / "big"
    src.write_bytes(os.urandom(UPLOAD_BYTES))
    took: list[float] = []
    with start_kernel(transport) as kernel:
        for _ in range(rounds):
            started = time.monotonic()
            kernel.upload(src, "big")
            took.append(time.monotonic() - started)
    return took


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
        took = time_interrupts(transport, args.rounds)
        print(f"{transport:8} B03  p50 {statistics.median(took) * 1e3:7.1f} ms  max {max(took) * 1e3:7.1f} ms  "
              f"bound 2000 ms{'  over' if max(took) > 2.0 else ''}  interrupt() of time.sleep(600)")
        with tempfile.TemporaryDirectory() as tmp:
            took = time_uploads(transport, args.rounds, Path(tmp))
        print(f"{transport:8} up   p50 {statistics.median(took) * 1e3:7.1f} ms  max {max(took) * 1e3:7.1f} ms  "
              f"bound {UPLOAD_BOUND_S * 1e3:.0f} ms{'  over' if max(took) > UPLOAD_BOUND_S else ''}  upload() of 8 MiB")


if __name__ == "__main__":
    main()
