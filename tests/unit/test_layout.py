"""The package's layout, checked from every module's imports (DESIGN.md section 3).

Dependency direction: ``kernel <- containers <- transports <- faults, leaks <- plugin, contract``
(``errors`` and ``procs`` below everything; ``cli`` and the package root on top). A module may
import its own room and rooms of a lower rank, never a room of its own rank or above; the kernel
runner imports nothing of the package at all (it runs where the package is not installed). Lazy
imports inside functions count: a wrong-way import is wrong wherever it is written.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = "pytest_hermes_kernel"
ROOT = Path(__file__).resolve().parents[2] / PACKAGE

RANKS: dict[str, int] = {
    "errors": 0, "procs": 0,
    "kernel": 1,
    "containers": 2,
    "transports": 3,
    "faults": 4, "leaks": 4, "catalog": 4,
    "api": 5, "postmortem": 5,
    "plugin": 6, "contract": 6,
    "cli": 7,
    "": 8,  # the package's own __init__: public re-exports
}
RUNNER = "kernel.runner"
MAX_MODULE_LINES = 450
MAX_CLASS_LINES = 300


@dataclass(frozen=True)
class Import:
    source: str  # module path inside the package, dotted, "" for the package itself
    target: str
    file: Path
    line: int
    typing_only: bool = False  # under ``if TYPE_CHECKING:``: no runtime edge (not a circle)

    def where(self) -> str:
        return f"{self.file.relative_to(ROOT.parent)}:{self.line}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_module(dotted: str) -> bool:
    base = ROOT.joinpath(*dotted.split(".")) if dotted else ROOT
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imports_of(path: Path, text: str | None = None) -> list[Import]:
    """Every import of the package in ``path`` (or in ``text``, read as if it were ``path``)."""
    source = module_name(path)
    package = source.split(".") if path.name == "__init__.py" else source.split(".")[:-1]
    package = [p for p in package if p]
    found: list[Import] = []
    text = path.read_text(encoding="utf-8") if text is None else text
    tree = ast.parse(text, str(path))
    typing_lines = {n.lineno for block in ast.walk(tree) if isinstance(block, ast.If)
                    and isinstance(block.test, ast.Name) and block.test.id == "TYPE_CHECKING"
                    for stmt in block.body for n in ast.walk(stmt) if hasattr(n, "lineno")}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == PACKAGE or alias.name.startswith(PACKAGE + "."):
                    found.append(Import(source, alias.name[len(PACKAGE) + 1:], path, node.lineno,
                                        node.lineno in typing_lines))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)] if node.level > 1 else package
                target = ".".join(base + ([node.module] if node.module else []))
            elif node.module == PACKAGE or (node.module or "").startswith(PACKAGE + "."):
                target = node.module[len(PACKAGE) + 1:]
            else:
                continue
            # ``from .pkg import module`` imports the module itself
            names = [f"{target}.{a.name}" if target else a.name for a in node.names]
            sub = [n for n in names if is_module(n)]
            for t in sub or [target]:
                found.append(Import(source, t, path, node.lineno, node.lineno in typing_lines))
    return found


def room(module: str) -> str:
    return module.split(".", 1)[0]


def all_imports() -> list[Import]:
    return [imp for path in sorted(ROOT.rglob("*.py")) for imp in imports_of(path)]


def direction_violations(imports: list[Import]) -> list[str]:
    bad = []
    for imp in imports:
        src, dst = room(imp.source), room(imp.target)
        in_runner = imp.source == RUNNER or imp.source.startswith(RUNNER + ".")
        if in_runner:
            if not (imp.target == RUNNER or imp.target.startswith(RUNNER + ".")):
                bad.append(f"{imp.where()}: the kernel runner imports {imp.target or PACKAGE} "
                           "(it must import nothing of the package)")
            continue
        if src == dst:
            continue
        if src not in RANKS or dst not in RANKS:
            bad.append(f"{imp.where()}: {imp.source or PACKAGE} -> {imp.target}: room not in the layout "
                       "(add it to RANKS in tests/unit/test_layout.py and to DESIGN.md section 3)")
        elif RANKS[dst] >= RANKS[src]:
            bad.append(f"{imp.where()}: {imp.source or PACKAGE} imports {imp.target} "
                       f"({src or 'package root'} rank {RANKS[src]} -> {dst} rank {RANKS[dst]}: against "
                       "kernel <- containers <- transports <- faults, leaks <- plugin, contract)")
    return bad


def import_cycles(imports: list[Import]) -> list[list[str]]:
    graph: dict[str, set[str]] = {}
    for imp in imports:
        if imp.source != imp.target and not imp.typing_only:
            graph.setdefault(imp.source, set()).add(imp.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def test_every_import_follows_the_dependency_direction() -> None:
    bad = direction_violations(all_imports())
    assert not bad, "imports against the layout:\n" + "\n".join(bad)


def test_no_import_circle_inside_the_package() -> None:
    imports = all_imports()
    cycles = import_cycles(imports)
    lines = []
    for cycle in cycles:
        members = set(cycle)
        edges = [i.where() + f": {i.source} -> {i.target}" for i in imports
                 if i.source in members and i.target in members]
        lines.append(" <-> ".join(cycle) + "\n    " + "\n    ".join(edges))
    assert not cycles, "import circles:\n" + "\n".join(lines)


@pytest.mark.parametrize("line, expected", [
    ("from ..transports import get_transport", "kernel.registry imports transports"),
    ("from ..leaks.probes import live_registries", "kernel.registry imports leaks.probes"),
    ("from pytest_hermes_kernel.plugin import settings", "kernel.registry imports plugin.settings"),
    ("from ..containers.lifecycle import run_labels", "kernel.registry imports containers.lifecycle"),
])
def test_the_check_names_a_wrong_way_import(line: str, expected: str) -> None:
    """The checker itself: today's registry with one of the old wrong-way imports put back
    (inside a function, as they were) is reported with its file and line."""
    path = ROOT / "kernel" / "registry.py"
    text = path.read_text(encoding="utf-8")
    assert not direction_violations(imports_of(path))
    bad = direction_violations(imports_of(path, text + f"\n\ndef _wrong_way():\n    {line}\n"))
    n = text.count("\n") + 4
    assert bad and all(expected in b and f"kernel/registry.py:{n}" in b for b in bad), bad


def test_the_runner_may_not_import_the_package() -> None:
    runner = ROOT / "kernel" / "runner" / "worker.py"
    bad = direction_violations(imports_of(runner, "from ..output import clean\n"))
    assert bad and "the kernel runner imports kernel.output" in bad[0], bad


def test_the_check_finds_a_circle() -> None:
    imports = [Import("faults.injector", "transports", ROOT, 1), Import("transports", "transports.ssh", ROOT, 2),
               Import("transports.ssh", "faults.proxy", ROOT, 3), Import("faults.proxy", "faults.injector", ROOT, 4)]
    assert import_cycles(imports) == [["faults.injector", "faults.proxy", "transports", "transports.ssh"]]


def _class_spans(tree: ast.AST) -> list[tuple[str, int]]:
    return [(node.name, (node.end_lineno or node.lineno) - node.lineno + 1)
            for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]


def test_modules_and_classes_stay_small() -> None:
    """STYLE.md: modules of 100-400 lines; issue #8: none over ~450, no class over ~300."""
    big = []
    for path in sorted(ROOT.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.count("\n") + 1
        rel = path.relative_to(ROOT.parent)
        if lines > MAX_MODULE_LINES:
            big.append(f"{rel}: {lines} lines (max {MAX_MODULE_LINES})")
        for name, span in _class_spans(ast.parse(text)):
            if span > MAX_CLASS_LINES:
                big.append(f"{rel}: class {name} spans {span} lines (max {MAX_CLASS_LINES})")
    assert not big, "\n".join(big)


def test_the_readme_lists_every_module_of_the_layout() -> None:
    """README's package layout names every module and package (docs that cannot drift)."""
    readme = (ROOT.parent / "README.md").read_text(encoding="utf-8")
    block = readme.split("<!-- layout:begin -->", 1)[1].split("<!-- layout:end -->", 1)[0]
    listed = {line.split()[0] for line in block.splitlines() if line.strip() and not line.startswith("```")}
    missing = [str(path.relative_to(ROOT)) for path in sorted(ROOT.rglob("*.py"))
               if path.name != "__init__.py" and path.name not in listed]
    missing += [f"{d.relative_to(ROOT)}/" for d in sorted(ROOT.rglob("*")) if d.is_dir()
                and (d / "__init__.py").exists() and f"{d.name}/" not in listed]
    assert not missing, "README's package layout lacks: " + ", ".join(missing)
