"""A second run's first docker kernel, with and without ``--hermes-reuse`` (issue 12, point 5).

Each round runs a tiny pytest suite twice in subprocesses (a first run, then the measured second
run) on the docker transport, with or without ``--hermes-reuse``, and takes from the second run
the time from the subprocess's start, and from its ``pytest_configure``, to its first docker
kernel's first result (the inner test writes the wall-clock time it got the result). Medians of
``--rounds`` rounds per mode. The measured run's kernel must have run in the first run's container
with ``--hermes-reuse`` and in another without it (the inner test writes its container's id): a
reuse that fell back to a new container ends the run, not a reuse figure. The runs get their own ``TMPDIR`` (their reuse store), and the
containers kept by the reuse rounds are removed at the end (``sweep --reused`` of that store).

    python benchmarks/reuse.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CONFTEST = """
import os, time

def pytest_configure(config):
    with open(os.environ["REUSE_BENCH_OUT"], "a") as fh:
        fh.write(f"configured {time.time()}\\n")
"""

SUITE = """
import os, time

def test_first_kernel(hermes_kernel):
    assert hermes_kernel.execute("1").value == "1"
    got = time.time()
    with open(os.environ["REUSE_BENCH_OUT"], "a") as fh:
        fh.write(f"first-result {got}\\ncontainer {hermes_kernel.launched.label.split()[1]}\\n")
"""


def one_run(suite: Path, env: dict[str, str], reuse: bool) -> tuple[float, float, str]:
    """One pytest run of the suite: seconds from its start and from its configure to the first
    result, and the (short) id of the container its kernel ran in."""
    out = Path(env["REUSE_BENCH_OUT"])
    out.unlink(missing_ok=True)
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:benchmark",
            "--hermes-transport=docker", "--hermes-require-transports", *(["--hermes-reuse"] if reuse else []), "."]
    started = time.time()
    done = subprocess.run(args, cwd=suite, env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise SystemExit(f"the inner run failed:\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
    marks = dict(line.split() for line in out.read_text().splitlines())
    first = float(marks["first-result"])
    return first - started, first - float(marks["configured"]), marks["container"]


def check_reuse(first: str, second: str, reuse: bool) -> None:
    """Raise unless the measured run's kernel ran in the first run's container exactly when
    ``reuse``: a reuse that silently fell back to a new container was reported as reuse's figure.

    :raises SystemExit: if it did not."""
    if (first == second) != reuse:
        raise SystemExit(f"the second run {'with' if reuse else 'without'} --hermes-reuse ran its kernel in "
                         f"container {second}, the first run's was {first}: "
                         f"{'not reused' if reuse else 'reused'}, so no figure of that mode")


def measure(rounds: int) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory(prefix="hermes-reuse-bench-") as work:
        suite, tmp = Path(work, "suite"), Path(work, "tmp")
        suite.mkdir()
        tmp.mkdir(mode=0o700)
        (suite / "conftest.py").write_text(CONFTEST)
        (suite / "test_first.py").write_text(SUITE)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_HERMES_")}
        env.update(TMPDIR=str(tmp), REUSE_BENCH_OUT=str(Path(work, "marks.txt")))
        modes = {"without --hermes-reuse": False, "with --hermes-reuse": True}
        seconds: dict[str, list[tuple[float, float]]] = {mode: [] for mode in modes}
        try:
            for _ in range(rounds):  # the modes take turns: a machine's load drifts
                for mode, reuse in modes.items():
                    first = one_run(suite, env, reuse)   # the first run (keeps its container with reuse)
                    second = one_run(suite, env, reuse)  # the measured second run
                    check_reuse(first[2], second[2], reuse)
                    seconds[mode].append(second[:2])
        finally:
            subprocess.run([sys.executable, "-m", "pytest_hermes_kernel.cli", "sweep", "--reused", "containers",
                            "run-files"], env=env, capture_output=True, timeout=300)
    return {mode: {"from_start_s": statistics.median(s for s, _ in runs), "from_configure_s":
                   statistics.median(c for _, c in runs), "rounds": float(rounds)} for mode, runs in seconds.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds per mode (median)")
    args = parser.parse_args(argv)
    results = measure(args.rounds)
    print(f"second run, first docker kernel's first result (median of {args.rounds}):")
    for mode, r in results.items():
        print(f"  {mode:24} {r['from_start_s'] * 1000:8.0f} ms from the run's start, "
              f"{r['from_configure_s'] * 1000:8.0f} ms from pytest_configure")
    off, on = (results[m]["from_configure_s"] for m in ("without --hermes-reuse", "with --hermes-reuse"))
    print(f"  reuse saves {(off - on) * 1000:.0f} ms ({off / on:.1f}x faster from pytest_configure)")
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
