"""Mutation testing of the lifecycle core with cosmic-ray, on the local transport (issue #13).

    pip install -e '.[dev,mutation]'
    python benchmarks/mutation.py                          # every file of the lifecycle core
    python benchmarks/mutation.py --file kernel/registry.py --file kernel/watchdog.py
    python benchmarks/mutation.py --file kernel/handle.py --only-survivors benchmarks/results/mutation/handle.json

Each file is mutated in a scratch copy of this checkout (never in place): cosmic-ray writes one
mutant at a time into the copy and runs that file's test selection (:data:`TESTS`) there with
``-x`` on the local transport; a non-zero exit kills the mutant, the per-mutant timeout (4x the
unmutated run, at least 60 s) counts as a timeout. The copy comes first on ``sys.path`` and
``PYTHONPATH`` (the plugin's inner pytest runs import it too), so the runner zipapp is built from
the mutated ``kernel/runner/`` of the copy: a preflight plants a runner that exits at once and
checks that the selection fails with it (the count would be false otherwise).

Mutants: cosmic-ray's operators, one replacement per operator as mutmut does (``+`` -> ``-``,
``<`` -> ``<=``, ``==`` -> ``!=``, ``is`` -> ``is not``, ...; the full cross product of
arithmetic and comparison operators is filtered out: :data:`EXCLUDED_OPERATORS`), and no mutant
inside an annotation (``from __future__ import annotations``: they are never evaluated).

Writes ``benchmarks/results/mutation/<stem>.json`` and ``.md`` per file (mutants, killed,
survived, timeouts; each survivor's file:line, operator and diff) and ``summary.md``.
``--only-survivors PREVIOUS.json`` runs only the survivors of an earlier report again (after
new tests: the rest were killed already).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
PACKAGE = "pytest_hermes_kernel"
OUT = REPO / "benchmarks" / "results" / "mutation"


def _command(name: str) -> str:
    """cosmic-ray's command ``name``: beside this interpreter (a virtualenv not activated), else on PATH."""
    beside = Path(sys.executable).with_name(name)
    return str(beside) if beside.exists() else name


COSMIC_RAY, FILTER_OPERATORS = _command("cosmic-ray"), _command("cr-filter-operators")
RUNNER_FILES = ("kernel/runner/supervisor.py", "kernel/runner/worker.py", "kernel/runner/worker_process.py",
                "kernel/runner/cells.py", "kernel/runner/serve.py")

_CONTRACT = "tests/contract/test_contract.py::test_"
#: The contract cases about a kernel's life and end (the whole suite takes ~90 s on a loaded 2-core machine).
_CONTRACT_LIFE = [f"{_CONTRACT}{name}[local]" for name in (
    "system_exit_ends_the_kernel_and_keeps_the_code", "os_exit_is_detected_quickly_with_its_code",
    "restart_loses_state_and_bumps_generation", "worker_killed_between_cells_is_never_reported_alive",
    "stack_overflow_is_died_with_sigsegv_and_a_note", "shutdown_reports_how_the_kernel_ended",
    "error_keeps_the_kernel_and_its_state", "interrupt_from_another_thread_keeps_state",
    "timeout_interrupt_keeps_state", "ignored_sigint_escalates_to_kill_and_restart",
    "reset_failed_when_restart_is_off", "tool_call_returns_the_host_value", "small_output_is_exact",
    "fd_level_output_is_attributed_to_its_cell_in_order", "unreachable_runner_is_killed_from_outside_and_replaced",
    "oversized_source_is_refused_kernel_untouched",
    "interrupt_while_idle_is_harmless")]
_REGISTRY_FAST = ["tests/unit/test_registry_guarantees.py", "tests/unit/test_registry_losses.py",
                  "tests/unit/test_public_methods_exercised.py", "tests/unit/test_lifecycle.py"]
_RUNNER_FAST = ["tests/unit/test_runner_lifecycle.py", "tests/unit/test_handle_guarantees.py",
                "tests/unit/test_worker_cells.py", "tests/unit/test_cell_book.py", "tests/unit/test_serve_listen.py"]
#: A kept local kernel (attach token, orphan timer); last: a kept spawned runner that ended is a
#: zombie child of the test process until its next subprocess, which B30's zombie check would see.
_RUNNER_KEPT = ["tests/unit/test_keep_attach.py"]
_RUNNER_REGRESSIONS = ["tests/regressions/test_handed_b07_system_exit_policy.py",
                       "tests/regressions/test_handed_b15_shutdown_not_blocked_by_threads.py",
                       "tests/regressions/test_handed_b30_zombie_is_not_alive.py",
                       "tests/regressions/test_handed_b02_grandchildren_die_with_kernel.py",
                       "tests/regressions/test_handed_b17_stdin_is_dev_null.py",
                       "tests/faults/test_fault_markers.py::test_oom_is_reported_as_oom",
                       "tests/faults/test_fault_markers.py::test_a_childs_oom_kill_is_not_blamed_for_the_next_cells_death",
                       "tests/regressions/test_worker_that_left_its_process_group.py",
                       "tests/regressions/test_worker_sigkill_cannot_end.py",
                       "tests/regressions/test_tool_call_from_earlier_cell_thread_refused.py",
                       "tests/regressions/test_handed_b20_restart_races.py",
                       "tests/regressions/test_handed_b31_fds_return_to_baseline.py"]
#: The test selection per mutated file (pytest arguments from the repo root), fast tests first
#: (``-x`` stops at the first failure); test files the checkout lacks are left out.
TESTS: dict[str, list[str]] = {
    "kernel/registry.py": [*_REGISTRY_FAST,
                           "tests/regressions/test_spawn_race_one_kernel_per_key.py",
                           "tests/regressions/test_owner_isolation.py",
                           "tests/regressions/test_idle_kernel_reaped_without_acquire.py",
                           "tests/regressions/test_delegated_children_pinned_under_cap.py",
                           "tests/regressions/test_reap_and_evict_skip_leased_kernel.py",
                           "tests/regressions/test_idle_reaped_on_time.py"],
    "kernel/watchdog.py": ["tests/unit/test_budget.py", "tests/unit/test_handle_guarantees.py",
                           *(f"{_CONTRACT}{n}[local]" for n in (
                               "timeout_interrupt_keeps_state", "timeout_interrupt_raises_when_asked",
                               "ignored_sigint_escalates_to_kill_and_restart", "reset_raises_when_asked",
                               "reset_failed_when_restart_is_off", "options_timeout_is_the_default_budget",
                               "tool_budget_per_cell")),
                           "tests/regressions/test_handed_b04_ignored_interrupt_escalates.py"],
    "kernel/output.py": ["tests/unit/test_output.py", "tests/regressions/test_output_cap_and_short_secrets.py",
                         "tests/regressions/test_handed_b09_fd_output_attributed_to_cell.py",
                         "tests/regressions/test_handed_b11_binary_output_and_real_stdout.py",
                         "tests/regressions/test_handed_b13_output_flood_bounded.py"],
    "kernel/rpc.py": ["tests/unit/test_tool_rpc.py", "tests/regressions/test_tool_call_from_earlier_cell_thread_refused.py",
                      *(f"{_CONTRACT}{n}[local]" for n in (
                          "tool_call_returns_the_host_value", "failing_tool_is_the_cells_error_not_the_hosts",
                          "unknown_tool_is_refused_inside_the_cell", "tool_call_with_no_tools_registered_is_refused",
                          "tool_budget_per_cell", "fork_child_tool_call_is_refused",
                          "tool_callable_captured_in_one_cell_runs_under_the_current_cell"))],
    "kernel/handle.py": ["tests/unit/test_handle_guarantees.py", "tests/unit/test_runner_lifecycle.py",
                         *_REGISTRY_FAST, *_CONTRACT_LIFE,
                         "tests/regressions/test_handed_b19_shutdown_while_starting.py",
                         "tests/regressions/test_handed_b20_restart_races.py"],
    **{f: [*_RUNNER_FAST, *_CONTRACT_LIFE, *_RUNNER_REGRESSIONS, *_RUNNER_KEPT] for f in RUNNER_FILES},
}

#: Operators filtered out: the cross product beyond one replacement per operator.
_KEEP_BINARY = {"Add_Sub", "Sub_Add", "Mul_Div", "Div_Mul", "FloorDiv_Div", "Mod_FloorDiv", "Pow_Mul",
                "BitOr_BitAnd", "BitAnd_BitOr", "BitXor_BitAnd", "LShift_RShift", "RShift_LShift"}
_KEEP_COMPARE = {"Eq_NotEq", "NotEq_Eq", "Lt_LtE", "LtE_Lt", "Gt_GtE", "GtE_Gt", "Is_IsNot", "IsNot_Is"}
_KEEP_UNARY = {"USub_UAdd", "Delete_Not", "Invert_UAdd"}
EXCLUDED_OPERATORS = [
    rf"core/ReplaceBinaryOperator_(?!({'|'.join(sorted(_KEEP_BINARY))})$)",
    rf"core/ReplaceComparisonOperator_(?!({'|'.join(sorted(_KEEP_COMPARE))})$)",
    rf"core/ReplaceUnaryOperator_(?!({'|'.join(sorted(_KEEP_UNARY))})$)",
    r"core/VariableReplacer", r"core/VariableInserter",
]


@dataclass(frozen=True)
class Mutant:
    """One mutant's outcome as the report gives it."""

    file: str
    line: int
    operator: str
    occurrence: int
    outcome: str  # killed | survived | timeout | incompetent
    diff: str


def scratch_copy(source: str | None) -> Path:
    """A copy to mutate: of the working tree (no venv, git or caches), or of git revision ``source``."""
    dest = Path(tempfile.mkdtemp(prefix="hermes-mutation-")) / "repo"
    if source is None:
        shutil.copytree(REPO, dest, ignore=shutil.ignore_patterns(".venv", ".git", "__pycache__", "results",
                                                                  "*.egg-info", ".pytest_cache"))
        return dest
    dest.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", source], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def write_config(root: Path, rel: str, timeout_s: float) -> Path:
    cmd = shlex.join(_test_command(root, rel))
    config = root / "cosmic-ray.toml"
    config.write_text(
        "[cosmic-ray]\n"
        f'module-path = "{PACKAGE}/{rel}"\n'
        f"timeout = {timeout_s:.0f}\n"
        "excluded-modules = []\n"
        f"test-command = {json.dumps(cmd)}\n"
        "[cosmic-ray.distributor]\nname = \"local\"\n"
        "[cosmic-ray.filters.operators-filter]\n"
        f"exclude-operators = {json.dumps(EXCLUDED_OPERATORS)}\n")
    return config


def _selection(root: Path, rel: str) -> list[str]:
    """The file's selection, less test files the copy does not have."""
    return [w for w in TESTS[rel] if (root / w.split("::")[0]).exists()]


def _env(root: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"}


def _run(root: Path, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(list(argv), cwd=root, env=_env(root), text=True, capture_output=True)
    if check and proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return proc


def _test_command(root: Path, rel: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "--hermes-transport=local",
            *_selection(root, rel)]


def preflight(root: Path, rel: str) -> float:
    """Run the selection unmutated (seconds it took); for runner files, check a mutant reaches the kernel.

    :raises SystemExit: if the selection fails unmutated, imports the package from elsewhere, or
        passes with a runner that cannot run a cell.
    """
    where = _run(root, sys.executable, "-c", f"import {PACKAGE}.transports.runner_zipapp as z; "
                                             "print(z.RUNNER_SOURCE_DIR)").stdout.strip()
    if not Path(where).is_relative_to(root):
        raise SystemExit(f"the runner would be built from {where}, not from the mutated copy {root}")
    start = time.monotonic()
    if _run(root, *_test_command(root, rel), check=False).returncode != 0:  # a loaded machine: once more
        start = time.monotonic()
        _run(root, *_test_command(root, rel))
    took = time.monotonic() - start
    if rel.startswith("kernel/runner/"):
        main = root / PACKAGE / "kernel" / "runner" / "__main__.py"
        original = main.read_text()
        main.write_text(original.replace("def main(", "def main(*_a, **_k):\n    return 97\n\n\ndef _main(", 1))
        try:
            if _run(root, *_test_command(root, rel), check=False).returncode == 0:
                raise SystemExit("a runner that exits at once passed the selection: mutants would not reach the kernel")
        finally:
            main.write_text(original)
    return took


def annotation_spans(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Where the annotations are: mutants there change nothing (they are never evaluated)."""
    spans = []
    for node in ast.walk(ast.parse(source)):
        found: list[ast.expr | None] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append(node.returns)
            args = node.args
            found += [a.annotation for a in [*args.posonlyargs, *args.args, *args.kwonlyargs,
                                               *(x for x in (args.vararg, args.kwarg) if x)]]
        elif isinstance(node, ast.AnnAssign):
            found.append(node.annotation)
        spans += [((n.lineno, n.col_offset), (n.end_lineno or n.lineno, n.end_col_offset or 0))
                  for n in found if n is not None]
    return spans


def skip_annotations(root: Path, rel: str, session: Path) -> int:
    """Mark the mutants inside annotations as skipped; how many."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    spans = annotation_spans((root / PACKAGE / rel).read_text())
    skipped = 0
    with use_db(str(session), WorkDB.Mode.open) as db:
        for item in list(db.pending_work_items):
            m = item.mutations[0]
            if any(a <= tuple(m.start_pos) and tuple(m.end_pos) <= b for a, b in spans):
                db.set_result(item.job_id, WorkResult(worker_outcome=WorkerOutcome.SKIPPED,
                                                      output="annotation"))
                skipped += 1
    return skipped


def keep_only(root: Path, rel: str, session: Path, previous: Path) -> list[str]:
    """Skip every mutant that is not a survivor of ``previous`` (a report of this script).

    The file may have changed since ``previous`` ran (lines moved, code added): a survivor is
    matched by its operator, its change (the diff's lines, stripped) and its line carried over to
    the current file (``difflib`` over the report's ``source_text`` and the file now), not by
    occurrence number.

    :returns: the survivors of ``previous`` that no mutant of the file makes any more (their line changed).
    """
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    report = json.loads(previous.read_text())
    source = (root / PACKAGE / rel).read_text()
    moved = _line_map(report.get("source_text", source), source)
    wanted = {(m["operator"], _change(m["diff"]), moved.get(m["line"])): m for m in report["mutants"]
              if m["outcome"] == "survived"}
    found = set()
    with use_db(str(session), WorkDB.Mode.open) as db:
        for item in list(db.pending_work_items):
            m = item.mutations[0]
            key = (m.operator_name.split("/")[-1], _change(_mutant_diff(source, m)), m.start_pos[0])
            if key in wanted:
                found.add(key)
            else:
                db.set_result(item.job_id, WorkResult(worker_outcome=WorkerOutcome.SKIPPED, output="not a survivor"))
    return [f"{m['file']}:{m['line']} {m['operator']}" for key, m in wanted.items() if key not in found]


def _line_map(old: str, new: str) -> dict[int, int]:
    """Line numbers (1-based) of ``old`` that ``new`` holds unchanged -> their number in ``new``."""
    import difflib

    moved: dict[int, int] = {}
    matcher = difflib.SequenceMatcher(None, old.splitlines(), new.splitlines(), autojunk=False)
    for a, b, size in matcher.get_matching_blocks():
        moved.update((a + i + 1, b + i + 1) for i in range(size))
    return moved


def _change(diff: str) -> tuple[str, ...]:
    return tuple(line[0] + line[1:].strip() for line in diff.splitlines() if line.strip())


def _mutant_diff(source: str, mutation: Any) -> str:
    """The short diff (:func:`_short_diff`) mutant ``mutation`` makes of ``source``."""
    import difflib

    import cosmic_ray.plugins
    from cosmic_ray.mutating import mutate_code

    operator = cosmic_ray.plugins.get_operator(mutation.operator_name)(**(getattr(mutation, "operator_args", None) or {}))
    mutated = mutate_code(source, operator, mutation.occurrence) or source
    return _short_diff("\n".join(difflib.unified_diff(source.split("\n"), mutated.split("\n"), lineterm="")))


def collect(rel: str, session: Path) -> list[Mutant]:
    from cosmic_ray.work_db import WorkDB, use_db

    out = []
    with use_db(str(session), WorkDB.Mode.open) as db:
        for item, result in db.completed_work_items:
            if result.worker_outcome == "skipped":
                continue
            m = item.mutations[0]
            outcome = str(result.test_outcome.value) if result.test_outcome else str(result.worker_outcome.value)
            if outcome == "killed" and (result.output or "") == "timeout":
                outcome = "timeout"
            out.append(Mutant(file=f"{PACKAGE}/{rel}", line=m.start_pos[0], operator=m.operator_name.split("/")[-1],
                              occurrence=m.occurrence, outcome=outcome, diff=_short_diff(result.diff or "")))
    return sorted(out, key=lambda m: (m.line, m.operator, m.occurrence))


def _short_diff(diff: str) -> str:
    return "\n".join(line for line in diff.splitlines() if re.match(r"[-+](?![-+])", line))


def prepare(root: Path, rel: str, timeout_s: float, previous: Path | None) -> tuple[Path, Path, int, list[str]]:
    """Config and session of ``rel``'s mutants, filters applied: (config, session, annotation
    mutants skipped, survivors of ``previous`` whose code is gone)."""
    config = write_config(root, rel, timeout_s)
    session = root / f"{Path(rel).stem}.sqlite"
    session.unlink(missing_ok=True)
    _run(root, COSMIC_RAY, "init", str(config), str(session))
    _run(root, FILTER_OPERATORS, str(session), str(config))
    skipped = skip_annotations(root, rel, session)
    vanished = keep_only(root, rel, session, previous) if previous is not None else []
    return config, session, skipped, vanished


def pending(session: Path) -> int:
    from cosmic_ray.work_db import WorkDB, use_db

    with use_db(str(session), WorkDB.Mode.open) as db:
        return sum(1 for _ in db.pending_work_items)


def execute(root: Path, config: Path, session: Path, budget_s: float | None) -> bool:
    """Run the pending mutants (cosmic-ray takes them in random order); stop after ``budget_s``.

    :returns: whether every mutant ran (``False``: the budget ended it; what ran is a random sample).
    """
    proc = subprocess.Popen([COSMIC_RAY, "exec", str(config), str(session)], cwd=root, env=_env(root),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        proc.wait(timeout=budget_s)
        return True
    except subprocess.TimeoutExpired:
        _stop(proc)
        return False


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """End cosmic-ray and the test run it started (in its own session, with its kernels)."""
    import psutil

    children = psutil.Process(proc.pid).children()
    proc.kill()
    proc.wait()
    for child in children:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def mutate_file(root: Path, rel: str, previous: Path | None, budget_s: float | None = None) -> dict[str, object]:
    baseline = preflight(root, rel)
    timeout = max(60.0, 4 * baseline)
    config, session, skipped, vanished = prepare(root, rel, timeout, previous)
    total = pending(session)
    start = time.monotonic()
    complete = execute(root, config, session, budget_s)
    wall = time.monotonic() - start
    mutants = collect(rel, session)
    counts = {k: sum(m.outcome == k for m in mutants) for k in ("killed", "survived", "timeout", "incompetent")}
    return {"file": f"{PACKAGE}/{rel}", "tests": _selection(root, rel), "baseline_s": round(baseline, 1),
            "timeout_s": timeout, "wall_s": round(wall, 1), "mutants": [asdict(m) for m in mutants],
            "count": len(mutants), "selected": total, "complete": complete, **counts,
            "annotation_mutants_skipped": skipped, "vanished_survivors": vanished,
            "source_text": (root / PACKAGE / rel).read_text(),
            "only_survivors_of": str(previous) if previous else None}


def markdown(report: dict[str, object]) -> str:
    sample = "" if report["complete"] else f" (a random sample: the budget ran out; {report['selected']} selected)"
    lines = [f"# Mutation report: `{report['file']}`", "",
             f"mutants {report['count']}{sample}, killed {report['killed']}, survived {report['survived']}, "
             f"timeouts {report['timeout']}, incompetent {report['incompetent']}; "
             f"wall {report['wall_s']} s (unmutated selection {report['baseline_s']} s, timeout {report['timeout_s']} s)",
             "", "Tests: " + ", ".join(f"`{t}`" for t in report["tests"]), "", "## Survivors", ""]
    for m in report["mutants"]:
        if m["outcome"] == "survived":
            lines += [f"- `{m['file']}:{m['line']}` {m['operator']} #{m['occurrence']}", "  ```diff",
                      *("  " + d for d in m["diff"].splitlines()), "  ```"]
    return "\n".join(lines) + "\n"


def run_one(rel: str, args: argparse.Namespace) -> str:
    """Mutate ``rel`` in its own copy; write its report; the one-line summary."""
    root = scratch_copy(args.source)
    try:
        previous = args.only_survivors / f"{Path(rel).stem}.json" if args.only_survivors else None
        if args.count:
            _, session, _, vanished = prepare(root, rel, 60.0, previous)
            return f"{rel}: {pending(session)} mutants" + (f" (survivors whose line changed: {vanished})" if vanished else "")
        report = mutate_file(root, rel, previous, args.budget_s)
        report["source"] = args.source or "working tree"
        (args.out / f"{Path(rel).stem}.json").write_text(json.dumps(report, indent=1))
        (args.out / f"{Path(rel).stem}.md").write_text(markdown(report))
        return (f"{rel}: {report['count']} of {report['selected']} mutants, {report['killed']} killed, {report['survived']} survived, "
                f"{report['timeout']} timeouts in {report['wall_s']} s")
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)


def equivalents(path: Path = REPO / "tests" / "mutation-equivalents.md",
                kind: str = "equivalent") -> set[tuple[str, int, str]]:
    """``(file, line, operator)`` of the entries ``- **LINE Operator**`` under a ``## `file` ``
    heading of ``tests/mutation-equivalents.md``: those argued equivalent (``kind="equivalent"``),
    or those under the ``# Killed on another transport`` part (``kind="elsewhere"``: a named test
    kills them on docker or ssh, which the local command does not run)."""
    found: set[tuple[str, int, str]] = set()
    current, part = "", "equivalent"
    for line in path.read_text().splitlines():
        if line.startswith("# "):
            part = "elsewhere" if "another transport" in line else "equivalent"
        elif line.startswith("## `"):
            current = line.strip("#` ")
        elif line.startswith("## "):
            current = ""
        elif (m := re.match(r"- \*\*(\d+) (\w+)\*\*", line)) and current and part == kind:
            found.add((current, int(m.group(1)), m.group(2)))
    return found


def _survivors(reports: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """The mutants still alive after the reruns, and the survivors gone (their line changed).

    A rerun cut short by ``--budget-s`` leaves some survivors unrun: they stay alive.
    """
    alive = [m for m in reports[0]["mutants"] if m["outcome"] == "survived"]
    gone: list[str] = []
    for rerun in reports[1:]:
        ran = {(m["operator"], _change(m["diff"])) for m in rerun["mutants"]}
        vanished = set(rerun.get("vanished_survivors", ()))
        gone += [name for m in alive if (name := f"{m['file']}:{m['line']} {m['operator']}") in vanished]
        unrun = [m for m in alive if (m["operator"], _change(m["diff"])) not in ran
                 and f"{m['file']}:{m['line']} {m['operator']}" not in vanished]
        alive = [m for m in rerun["mutants"] if m["outcome"] == "survived"] + unrun
    return alive, gone


def _file_row(reports: list[dict[str, Any]], equivalent: set[tuple[str, int, str]],
              elsewhere: set[tuple[str, int, str]] = frozenset()) -> dict[str, Any]:
    """One file's row from its reports in run order: the first ran the mutants ("before"), each
    later one reran the survivors of the one before it; the last says which survive now."""
    report = reports[0]
    still, gone = _survivors(reports)
    other = [m for m in still if (m["file"], m["line"], m["operator"]) in elsewhere]
    still = [m for m in still if m not in other]  # killed, by a test of another transport
    left = [m for m in still if (m["file"], m["line"], m["operator"]) not in equivalent]
    incompetent = report.get("incompetent", 0)  # mutants that could not run: neither killed nor alive
    return {"file": report["file"], "mutants": report["count"], "selected": report["selected"],
            "wall_s": sum(r["wall_s"] for r in reports),
            "killed_before": report["killed"] + report["timeout"], "survived_before": report["survived"],
            "timeouts": report["timeout"], "killed_after": report["count"] - incompetent - len(still) - len(gone),
            "incompetent": incompetent,
            "equivalent": len(still) - len(left), "gone": gone, "survivors": left, "rerun": len(reports) > 1,
            "killed_elsewhere": len(other),
            "runs": len(reports)}


def summarize(dirs: list[Path], out: Path) -> str:
    """Before/after counts per file over the runs in ``dirs`` (in run order: a file's first report
    is its mutant run, later ones its survivors' reruns); writes summary.md/.json into ``out``."""
    equivalent, elsewhere = equivalents(), equivalents(kind="elsewhere")
    by_file: dict[str, list[dict[str, Any]]] = {}
    for d in dirs:
        for path in sorted(d.glob("*.json")):
            if path.name != "summary.json":
                report = json.loads(path.read_text())
                by_file.setdefault(report["file"], []).append(report)
    rows = [_file_row(by_file[f], equivalent, elsewhere) for f in sorted(by_file)]
    total = {k: sum(r[k] for r in rows)
             for k in ("mutants", "killed_before", "killed_after", "equivalent", "timeouts", "killed_elsewhere",
                       "incompetent")}
    total["gone"] = sum(len(r["gone"]) for r in rows)
    ratio = total["killed_after"] / max(1, total["mutants"] - total["equivalent"] - total["gone"] - total["incompetent"])
    lines = ["# Mutation summary", "", "| file | mutants run (of selected) | killed before (timeouts) | killed after "
             "| equivalent | gone | survivors left | killed of non-equivalent | wall s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        share = r["killed_after"] / max(1, r["mutants"] - r["equivalent"] - len(r["gone"]) - r["incompetent"])
        lines.append(f"| `{r['file']}` | {r['mutants']} ({r['selected']}) | {r['killed_before']} ({r['timeouts']}) "
                     f"| {r['killed_after'] if r['rerun'] else 'not rerun'} | {r['equivalent']} | {len(r['gone'])} "
                     f"| {len(r['survivors'])} | {share:.0%} | {r['wall_s']:.0f} |")
    lines += ["", f"All: {total['mutants']} mutants run, {total['killed_before']} killed before "
                  f"({total['timeouts']} by timeout), {total['killed_after']} after, {total['equivalent']} equivalent, "
                  f"{total['gone']} gone (the line they mutated changed before their rerun), {total['incompetent']} incompetent "
                  f"(could not run: neither killed nor counted): {ratio:.1%} of the "
                  f"non-equivalent mutants killed ({total['killed_elsewhere']} of them by a test of another transport: "
                  "tests/mutation-equivalents.md).", "", "## Survivors left", ""]
    lines += [f"- `{m['file']}:{m['line']}` {m['operator']}: " + " / ".join(d.strip() for d in m["diff"].splitlines())
              for r in rows for m in r["survivors"]] or ["(none)"]
    if total["gone"]:
        lines += ["", "## Gone (survivors whose line changed before their rerun)", ""]
        lines += [f"- `{g}`" for r in rows for g in r["gone"]]
    (out / "summary.json").write_text(json.dumps({"files": rows, **total, "ratio": ratio}, indent=1))
    text = "\n".join(lines) + "\n"
    (out / "summary.md").write_text(text)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--file", action="append", choices=sorted(TESTS), help="a file to mutate (repeatable)")
    parser.add_argument("--source", help="mutate this git revision instead of the working tree (e.g. main)")
    parser.add_argument("--only-survivors", type=Path, metavar="DIR",
                        help="a previous run's output dir: run each file's survivors only")
    parser.add_argument("--parallel", type=int, default=1, help="files mutated at once, each in its own copy")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--budget-s", type=float, help="seconds of mutants per file; what ran is a random sample")
    parser.add_argument("--count", action="store_true", help="only count each file's mutants (no test runs)")
    parser.add_argument("--summarize", type=Path, nargs="+", metavar="DIR",
                        help="BEFORE [AFTER ...]: runs' report dirs in run order (a file's first report is its "
                             "mutant run, later ones reruns of its survivors); writes summary.md/.json into --out")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.summarize:
        print(summarize(args.summarize, args.out))
        return 0
    failed = 0
    with ThreadPoolExecutor(max_workers=args.parallel) as pool:
        runs = {pool.submit(run_one, rel, args): rel for rel in args.file or sorted(TESTS)}
        for done in as_completed(runs):
            try:
                print(done.result(), flush=True)
            except (Exception, SystemExit) as exc:  # noqa: BLE001 - one file's failure is reported, the rest go on
                failed += 1
                print(f"{runs[done]}: FAILED: {exc}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
