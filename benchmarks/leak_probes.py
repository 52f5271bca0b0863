"""What the leak check costs per test: one snapshot of every probe, per transport, in one run.

The leak checker snapshots before each test and after its teardown, and the transport probe asks
every live transport of the session, so each test pays every live transport's snapshot twice.
On docker and ssh the scan of the far side's processes and kernel dirs runs in a fork of the
kernel server when one runs there; the anchor is the same scan by one exec (``docker exec`` /
ssh exec), measured in the same run by hiding the server from the probe.

    python benchmarks/leak_probes.py [--rounds 20] [--transports local,docker,ssh,filecell]

Prints, per transport, the median snapshot time in ms by server and by exec, and the median of a
whole ``LeakChecker.before()`` with all the named transports live (what one test pays, twice).

The host's own kernel-process probe reads every process's environment on the machine: its scan
(a byte search of each ``/proc/<pid>/environ`` for the host's marker) is measured against the
anchor it replaced, ``psutil.process_iter`` parsing every environment into a dict, as CPU ms per
snapshot with the process count of the moment (a parallel suite run has 300-500 processes). The
child-process probe of a process with no child asks the kernel (``has_children``) before psutil's
walk over every process's parent, the anchor.

What a test that starts no kernel pays for the plugin: ``pytest`` over N empty tests in a
temporary directory, CPU seconds of the whole run, with the leak check on (the default, ``warn``),
off, and without the plugin (``-p no:hermes_kernel``, the anchor); ``--empty-tests 0`` skips it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable

from pytest_start import pytest_cost

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.leaks.checker import LeakChecker
from pytest_hermes_kernel.leaks.probes import kernel_processes
from pytest_hermes_kernel.procs import has_children
from pytest_hermes_kernel.transports import make_transport


def _median_ms(fn: Callable[[], object], rounds: int, clock: Callable[[], float] = time.perf_counter) -> float:
    """Median time per call of ``fn`` in ms, by ``clock`` (wall by default; ``time.process_time``: this process's CPU)."""
    times = []
    for _ in range(rounds):
        started = clock()
        fn()
        times.append(clock() - started)
    return statistics.median(times) * 1000


def _parsed_scan() -> list[int]:
    """The anchor: every process's environment parsed by psutil (the host probe before it searched bytes)."""
    import psutil

    me = str(os.getpid())
    found = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if proc.environ().get("HERMES_KERNEL_HOST_PID") == me:
                found.append(proc.pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied, OSError):
            continue
    return found


def empty_tests(count: int, rounds: int = 3) -> None:
    """Print the CPU seconds of ``count`` empty tests: leak check on, off, and no plugin."""
    with tempfile.TemporaryDirectory() as directory:
        with open(os.path.join(directory, "test_empty.py"), "w", encoding="ascii") as fh:
            fh.write(f"import pytest\n\n\n@pytest.mark.parametrize('i', range({count}))\ndef test_empty(i):\n    pass\n")
        legs = {"leak check warn (default)": (), "leak check off": ("--hermes-leak-check=off",),
                "no plugin (anchor)": ("-p", "no:hermes_kernel")}
        for name, options in legs.items():
            cpu = statistics.median(pytest_cost(directory, options)[0] for _ in range(rounds))
            print(f"pytest, {count} empty tests, {name}: {cpu:.2f} CPU s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--transports", type=lambda s: s.split(","), default=["local", "docker", "ssh", "filecell"])
    ap.add_argument("--empty-tests", type=int, default=500)
    args = ap.parse_args()
    if args.empty_tests:
        empty_tests(args.empty_tests)
    import psutil

    walk = lambda: psutil.Process().children(recursive=True)  # noqa: E731
    print(f"child-process probe, no child: has_children {_median_ms(lambda: has_children(os.getpid()), args.rounds, time.process_time):.3f} "
          f"CPU ms, psutil children walk {_median_ms(walk, args.rounds, time.process_time):.3f} CPU ms (anchor)")
    transports = [make_transport(name) for name in args.transports]
    try:
        for transport in transports:
            with start_kernel(transport) as kernel:  # a kernel server runs from now on, where there is one
                kernel.execute("1")
        print(f"{'transport':10} {'by server ms':>13} {'by exec ms':>11}")
        for transport in transports:
            snap = lambda t=transport: t.leak_snapshot(os.getpid())  # noqa: E731
            by_server = _median_ms(snap, args.rounds)
            servers = getattr(transport, "servers", None)
            by_exec = None
            if servers is not None:
                running = servers.running
                servers.running = lambda where: None
                try:
                    by_exec = _median_ms(snap, args.rounds)
                finally:
                    servers.running = running
            print(f"{transport.name:10} {by_server:13.2f} {'-' if by_exec is None else f'{by_exec:.2f}':>11}")
        count = sum(1 for name in os.listdir("/proc") if name.isdigit())
        print(f"host kernel-process probe, {count} processes: byte search {_median_ms(kernel_processes, args.rounds, time.process_time):.2f} "
              f"CPU ms, psutil environ() parse {_median_ms(_parsed_scan, args.rounds, time.process_time):.2f} CPU ms (anchor)")
        checker = LeakChecker()
        print(f"LeakChecker.before() with {','.join(args.transports)} live: "
              f"{_median_ms(checker.before, args.rounds):.2f} ms (once per clean test: its look after teardown is the next test's before)")
    finally:
        for transport in transports:
            transport.close()


if __name__ == "__main__":
    main()
