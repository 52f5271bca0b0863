"""Every pytest start where the package is installed loads the plugin, so loading it imports no
kernel core, fault path, catalog or post-mortem module: the fixtures and hooks that use them
import them (``benchmarks/pytest_start.py`` measures the start). Those deferred imports happen
under pytest's assertion rewriting, mid-run, and must not warn (``-W error``)."""

from __future__ import annotations

import subprocess
import sys

LOAD_THE_PLUGIN = """
import importlib, sys
import pytest_hermes_kernel.plugin as plugin
for name in plugin.pytest_plugins:
    importlib.import_module(name)
print(" ".join(sorted(sys.modules)))
"""

#: What a run that starts no kernel does not need: loading the plugin imports none of them, nor
#: does the leak check after a test that starts no kernel.
DEFERRED = ("api", "catalog", "containers.engines", "containers.kept", "faults.apply", "faults.harness",
            "faults.injector", "kernel.cell", "kernel.handle", "kernel.registry", "transports.detached",
            "transports.local")

USES_EVERY_DEFERRED_PATH = """
import pytest
from pytest_hermes_kernel import KernelKey


@pytest.mark.hermes_kernel(timeout=30)
def test_kernel(hermes_kernel):
    assert hermes_kernel.execute("1 + 1").value == "2"


@pytest.mark.hermes_kernel_sigkill(after_cell=1)
def test_fault_marker(hermes_kernel):
    hermes_kernel.execute("1")
    assert hermes_kernel.execute("1").kernel.state_lost


def test_faults_fixture(hermes_kernel, hermes_faults):
    hermes_faults.kernel_sigkill(hermes_kernel)


def test_registry(hermes_registry):
    assert hermes_registry.execute(KernelKey(owner="a"), "2 * 3").value == "6"
"""

SCENARIO = """
[scenario]
name = "one-cell"
source = "test"

[[cell]]
code = "6 * 7"
expect = { status = "ok", value = "42" }
"""


def test_loading_the_plugin_imports_no_kernel_core() -> None:
    loaded = set(subprocess.run([sys.executable, "-c", LOAD_THE_PLUGIN], capture_output=True, text=True,
                                check=True, timeout=60).stdout.split())
    assert not {f"pytest_hermes_kernel.{name}" for name in DEFERRED} & loaded, sorted(loaded)


def test_the_deferred_imports_do_not_warn(pytester, run) -> None:
    pytester.makepyfile(test_paths=USES_EVERY_DEFERRED_PATH)
    pytester.mkdir("fixtures")
    pytester.path.joinpath("fixtures", "one_cell.toml").write_text(SCENARIO)
    result = run("-W", "error", "--hermes-transport=local")
    result.assert_outcomes(passed=5)


NO_KERNEL = """
import sys

def test_nothing_towards_kernels():
    pass

def test_zz_what_the_first_check_imported():
    print("LOADED", " ".join(sorted(sys.modules)))
"""


def test_a_run_that_starts_no_kernel_imports_none_of_it_for_its_leak_check(pytester, run) -> None:
    pytester.makepyfile(test_plain=NO_KERNEL)
    result = run("-s", "--hermes-leak-check=error")
    result.assert_outcomes(passed=2)
    loaded = set(next(line for line in result.stdout.lines if "LOADED " in line).split("LOADED ", 1)[1].split())
    assert not {f"pytest_hermes_kernel.{name}" for name in DEFERRED} & loaded, sorted(loaded)


def test_each_plugin_module_is_listed_after_the_plugin_modules_it_imports() -> None:
    """pytest rewrites a plugin module's asserts only if it marks the module before its first
    import. ``ini_keys`` imports ``markers`` at its top and was listed before it: on pytest 8.0
    every run warned ``PytestAssertRewriteWarning: Module already imported so cannot be rewritten:
    pytest_hermes_kernel.plugin.markers``, and a project with ``filterwarnings = error`` (this
    repo's own) ended with that traceback before collecting a test. Newer pytest stays quiet, so
    the order is checked here, on any pytest."""
    import ast
    import importlib.util

    import pytest_hermes_kernel.plugin as plugin

    listed = list(plugin.pytest_plugins)
    late = []
    for position, name in enumerate(listed):
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin is not None, name
        with open(spec.origin, encoding="utf-8") as source:
            tree = ast.parse(source.read())
        for node in tree.body:  # module level only: an import inside a function runs later
            if isinstance(node, ast.ImportFrom):
                base = ("pytest_hermes_kernel.plugin." if node.level == 1 else "") + (node.module or "")
                if base in listed and listed.index(base) > position:
                    late.append(f"{name} imports {base}, listed after it")
    assert not late, late
