"""What a pytest start costs with the plugin installed, beside its anchors, in one run.

    python benchmarks/pytest_start.py [--starts 20] [--checkout DIR ...] [--importtime 12]

``pytest -q -p no:cacheprovider test_one.py`` (one passing test, in a temporary directory) is
started ``--starts`` times per leg; each round runs the legs back to back, in turn forwards and
backwards, so that all see the same machine load:

* no third-party plugin (``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1``: the floor);
* every installed plugin but this one (``-p no:hermes_kernel``: the anchor);
* with the plugin, and with the plugin and ``--hermes-leak-check=off`` (what the default leak
  check's first snapshot adds to a one-test run), once per ``--checkout``: that directory goes
  first on ``PYTHONPATH``, so a ``git archive`` of the commit before a change is measured beside
  the tree after it (default: the installed package).

Prints the median CPU seconds (user + system of the child, from ``os.wait4``), the least, and
the median wall seconds of each leg; with several checkouts, what each later one saves against
the first as the median of the rounds' differences (a busy minute of the machine falls on both
sides of a pair). Then, per checkout, the modules the plugin adds to the start (those a
``-X importtime`` run with the plugin imports and one with ``-p no:hermes_kernel`` does not):
their count, the sum of their own import times and the largest by cumulative time. Modules
that pytest imports with ``importlib.import_module`` (the entry point, ``pytest_plugins``) do
not appear in ``-X importtime``'s log; what they import with an ``import`` statement does.
The children run without ``PYTHONDONTWRITEBYTECODE``, as a user's pytest does (a warm-up round
writes the bytecode caches, assertion-rewritten ones included).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TEST_FILE = "test_one.py"
COMMAND = ("-m", "pytest", "-q", "-p", "no:cacheprovider")
#: The plugin's legs, measured once per checkout: kind -> pytest options.
PLUGIN_LEGS = {"plugin": (), "plugin, leak check off": ("--hermes-leak-check=off",)}


def child_env(checkout: Path | None = None, *, autoload: bool = True) -> dict[str, str]:
    """The environment of a measured start: bytecode written, ``checkout`` first on the path."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    if checkout is not None:
        env["PYTHONPATH"] = str(checkout)
    if not autoload:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return env


def pytest_cost(directory: str, options: tuple[str, ...] = (), env: dict[str, str] | None = None) -> tuple[float, float]:
    """CPU seconds (user + system, from ``os.wait4``) and wall seconds of one ``pytest -q`` run
    in ``directory`` (``options`` include the test files, if any: else pytest collects the directory).

    :raises subprocess.CalledProcessError: if the run fails.
    """
    args = [sys.executable, *COMMAND, *options]
    started = time.perf_counter()
    proc = subprocess.Popen(args, cwd=directory, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, args)
    return usage.ru_utime + usage.ru_stime, wall


def legs(checkouts: list[Path | None]) -> dict[str, tuple[tuple[str, ...], dict[str, str]]]:
    """Leg name -> (pytest options, environment)."""
    out = {"no third-party plugin": ((TEST_FILE,), child_env(autoload=False)),
           "-p no:hermes_kernel": (("-p", "no:hermes_kernel", TEST_FILE), child_env())}
    for checkout in checkouts:
        for kind, options in PLUGIN_LEGS.items():
            out[leg_name(kind, checkout)] = ((*options, TEST_FILE), child_env(checkout))
    return out


def leg_name(kind: str, checkout: Path | None) -> str:
    return kind + (f" [{checkout}]" if checkout is not None else "")


def print_paired(figures: dict[str, list[tuple[float, float]]], checkouts: list[Path | None]) -> None:
    """What each later checkout saves against the first, round by round (see module docstring)."""
    first = checkouts[0]
    for checkout in checkouts[1:]:
        for kind in PLUGIN_LEGS:
            saved = [b[0] - a[0] for b, a in zip(figures[leg_name(kind, first)], figures[leg_name(kind, checkout)])]
            print(f"{leg_name(kind, checkout)} against [{first}]: {statistics.median(saved) * 1e3:.0f} ms less CPU "
                  f"(median of {len(saved)} paired starts), less in {sum(s > 0 for s in saved)} of them")


def imported(directory: str, options: tuple[str, ...], env: dict[str, str]) -> dict[str, tuple[int, int, int]]:
    """``-X importtime`` of one start: module -> (own µs, cumulative µs, nesting depth)."""
    args = [sys.executable, "-X", "importtime", *COMMAND, *options, TEST_FILE]
    log = subprocess.run(args, cwd=directory, env=env, capture_output=True, text=True, check=True).stderr
    out = {}
    for line in log.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, cumulative, name = line[len("import time:"):].split("|")
        out[name.strip()] = (int(own), int(cumulative), (len(name) - len(name.lstrip()) - 1) // 2)
    return out


def print_added_imports(directory: str, checkout: Path | None, top: int) -> None:
    """The modules the plugin adds to a start (see module docstring), the largest first."""
    anchor = imported(directory, ("-p", "no:hermes_kernel"), child_env())
    ours = imported(directory, (), child_env(checkout))
    added = {name: times for name, times in ours.items() if name not in anchor}
    own_ms = sum(times[0] for times in added.values()) / 1e3
    print(f"\n-X importtime, plugin{f' [{checkout}]' if checkout else ''}: {len(added)} modules more than "
          f"-p no:hermes_kernel, {own_ms:.1f} ms of their own import time; the largest (cumulative ms):")
    for name, (_own, cumulative, depth) in sorted(added.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"  {cumulative / 1e3:7.1f}  {'  ' * depth}{name}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--starts", type=int, default=20, help="measured starts per leg")
    ap.add_argument("--checkout", type=Path, action="append", default=None,
                    help="a source tree to measure the plugin of (repeat to compare; default: the installed one)")
    ap.add_argument("--importtime", type=int, default=12, help="modules listed per checkout (0: no -X importtime)")
    args = ap.parse_args(argv)
    checkouts: list[Path | None] = [c.resolve() for c in args.checkout] if args.checkout else [None]
    with tempfile.TemporaryDirectory() as directory:
        Path(directory, TEST_FILE).write_text("def test_one():\n    assert 1 + 1 == 2\n", encoding="ascii")
        runs = legs(checkouts)
        figures: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
        for n in range(args.starts + 1):  # the first round warms the caches, untimed
            for name, (options, env) in list(runs.items())[::1 if n % 2 else -1]:  # no leg always first
                cost = pytest_cost(directory, options, env)
                if n:
                    figures[name].append(cost)
        print(f"pytest start, one test, median of {args.starts} ({sys.version.split()[0]}, {os.cpu_count()} cores)")
        print(f"{'leg':60} {'CPU s':>7} {'min':>7} {'wall s':>7}")
        for name, costs in figures.items():
            cpu, wall = (statistics.median(c[i] for c in costs) for i in (0, 1))
            print(f"{name:60} {cpu:7.3f} {min(c[0] for c in costs):7.3f} {wall:7.3f}")
        print_paired(figures, checkouts)
        for checkout in checkouts if args.importtime else []:
            print_added_imports(directory, checkout, args.importtime)
    return 0


if __name__ == "__main__":
    sys.exit(main())
