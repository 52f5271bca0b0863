"""Collects the regression scenario catalog as test items: ``pytest fixtures/``.

Every ``*.toml`` file with a directory named ``fixtures`` on its path (or named
``scenario_*.toml`` anywhere) with a ``[scenario]`` table becomes one item per transport of the
run's matrix that the scenario lists, e.g. ``fixtures/b07_sys_exit.toml::sys-exit-ends-kernel[local]``
(:func:`is_scenario_file`). The leak checker runs after each like after any test. A ``.toml``
file with a ``[scenario]`` table that the rule leaves out, named on the command line, is a
collection error that says so (pytest's own answer was ``ERROR: not found``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import ConfigError, HermesKernelError, ScenarioFailure, TransportUnavailableError
from ..faults.spec import FaultSpec, conflicts, spec_from_table
from ..transports import close_transport, get_transport, make_transport
from .report import stats_key
from .settings import settings_key, transport_defaults

if TYPE_CHECKING:  # the catalog and the fault path are imported when a scenario file is collected or run
    from ..catalog import Scenario
    from ..faults.apply import FaultSetup
    from ..faults.proxy import ProxyRoute
    from ..kernel.contract import Transport


def is_scenario_file(path: Path) -> bool:
    """Whether the catalog collects ``path``: a ``.toml`` file with a directory named ``fixtures``
    on its path, or named ``scenario_*.toml`` (one without a ``[scenario]`` table is then left alone)."""
    return path.suffix == ".toml" and ("fixtures" in path.parts[:-1] or path.name.startswith("scenario_"))


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if is_scenario_file(file_path):
        return ScenarioFile.from_parent(parent, path=file_path)
    if file_path.suffix == ".toml" and parent.session.isinitpath(file_path) and _has_scenario_table(file_path):
        return NotAScenarioFile.from_parent(parent, path=file_path)
    return None


_HEADER = re.compile(r"^\s*\[\s*scenario\s*\]\s*(#.*)?$", re.MULTILINE)
"""A ``[scenario]`` header line as TOML allows it (``[ scenario ]``, a comment after it)."""


def _has_scenario_table(path: Path) -> bool:
    """Whether ``path`` has a ``[scenario]`` table (any way TOML writes one: ``[ scenario ]``,
    ``scenario.name = ...``), or, where it is not valid TOML, a ``[scenario]`` header line. Only
    ``[scenario]`` written exactly was seen: a bad scenario under ``[ scenario ]`` was dropped."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        text = path.read_text("utf-8", "replace")
    except OSError:
        return False
    try:
        return "scenario" in tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return _HEADER.search(text) is not None


class NotAScenarioFile(pytest.File):
    """A scenario named on the command line that the catalog's naming rule does not collect."""

    def collect(self) -> Any:
        raise self.CollectError(
            f"{self.path.name} is not collected as a scenario: the catalog collects .toml files with a directory "
            f"named 'fixtures' on their path, or named scenario_*.toml. Hint: rename it scenario_{self.path.name} "
            "or move it under a fixtures/ directory (docs/catalog.md, 'Which files are scenarios')")


def scenario_faults(scenario: Scenario) -> tuple[FaultSpec, ...]:
    """The scenario's ``[[fault]]`` tables as fault specs (the markers' arguments).

    :raises ConfigError: naming the file and the fault when a table is bad, or the faults cannot
        all apply (:func:`~pytest_hermes_kernel.faults.spec.conflicts`), or one asks for
        ``host_sigkill`` (a scenario's kernels live in this process's registry: their host is
        the test process itself; use the ``hermes_host_sigkill`` marker).
    """
    specs = []
    for i, table in enumerate(scenario.faults, 1):
        try:
            spec = spec_from_table(table)
        except ConfigError as exc:
            raise ConfigError(f"{scenario.path}: fault {i}: {exc}") from None
        if spec.kind == "host_sigkill":
            raise ConfigError(f"{scenario.path}: fault {i}: host_sigkill is not available in scenarios (their "
                              "kernels' host is the test process); use the hermes_host_sigkill marker")
        n = spec.during_cell
        step = scenario.steps[n - 1] if n is not None and n <= len(scenario.steps) else {}
        if step.get("action", "cell") != "cell":  # never armed: "its step ended before the delay" blamed a cell
            raise ConfigError(f"{scenario.path}: fault {i}: during_cell = {n} is a {step['action']} step, which runs "
                              f"no cell to fault during. Hint: after_cell = {n}, or fault a cell step")
        specs.append(spec)
    for problem in conflicts(specs):
        raise ConfigError(f"{scenario.path}: {problem}")
    return tuple(specs)


#: The leg of a scenario whose ``transports`` names none of the run's (as the ``hermes_transports`` marker's).
NO_LEG = "<none>"


class ScenarioFile(pytest.File):
    """A scenario file: one item per selected transport."""

    def collect(self) -> Any:
        from ..catalog import load_scenario

        try:
            scenario = load_scenario(self.path)
            faults = scenario_faults(scenario)
        except ConfigError as exc:
            if "[scenario]" in str(exc) and not _has_scenario_table(self.path):
                return  # some other TOML file in a fixtures dir: not ours
            raise self.CollectError(str(exc)) from None
        selected = self.config.stash[settings_key].transport
        names = [n for n in selected if scenario.transports is None or n in scenario.transports]
        for name in names or [NO_LEG]:  # none: one item that skips saying so (it was collected as nothing)
            yield ScenarioItem.from_parent(self, name=f"{scenario.name}[{name}]", scenario=scenario,
                                           faults=faults, transport_name=name)


class ScenarioItem(pytest.Item):
    """One scenario on one transport; its faults go through the same apply step and injector as
    the fault markers'."""

    def __init__(self, *, scenario: Scenario, faults: tuple[FaultSpec, ...], transport_name: str,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scenario = scenario
        self.faults = faults
        self.transport_name = transport_name
        for spec in faults:
            self.add_marker(pytest.mark.hermes_scenario_fault(spec.kind))

    def setup(self) -> None:
        """The scenario's transport, made before it runs: one that cannot run here skips it, or
        errors it at setup under ``--hermes-require-transports``, as a test's kernel fixture does
        (it was a failure of the run, or a skip located in this module)."""
        from ..faults.apply import transport_options

        self.options: dict[str, Any] = {}
        if self.transport_name == NO_LEG:
            raise pytest.skip.Exception(f"no transport of --hermes-transport is selected for this scenario (its "
                                        f"transports: {', '.join(self.scenario.transports or ())})",
                                        _use_item_location=True)
        self.options = transport_options(self.faults, self.transport_name)
        self.transport = self._transport(self.options)

    def teardown(self) -> None:
        transport, self.transport = getattr(self, "transport", None), None
        if transport is not None and self.options:  # one of its own (the shared one is the run's)
            close_transport(transport)

    def runtest(self) -> None:
        from ..catalog import ScenarioRunner
        from ..faults import injector

        setup = self._apply(self.transport, self.options.get("connect_via"))
        try:
            ScenarioRunner(self.scenario, lambda key: setup.transport, self.transport_name, on_fault=injector.fire,
                           options=setup.options, faults=setup.plan.firing,
                           listener=self.config.stash[stats_key].on_event).run()
        finally:
            setup.close()

    def _transport(self, options: dict[str, Any]) -> Transport:
        """The shared transport, or one of the scenario's own when its faults need options."""
        try:
            defaults = transport_defaults(self.config, self.transport_name)
            if options:
                return make_transport(self.transport_name, **{**defaults, **options})
            return get_transport(self.transport_name, **defaults)
        except TransportUnavailableError as exc:
            if self.config.stash[settings_key].require_transports:
                raise pytest.fail.Exception(f"required transport unavailable: {exc}", pytrace=False) from None
            raise pytest.skip.Exception(str(exc), _use_item_location=True) from None

    def _apply(self, transport: Transport, link: ProxyRoute | None) -> FaultSetup:
        """The faults' plan carried out on ``transport``; skips with the reason where they cannot apply."""
        from ..faults.apply import apply_faults, plan_faults
        from ..kernel.options import KernelOptions

        options = KernelOptions(**self.scenario.kernel)
        plan = plan_faults(self.faults, transport, options)
        if plan.skip is not None:  # at the scenario's file: at this module, -rs folded every scenario's into one line
            raise pytest.skip.Exception(plan.skip, _use_item_location=True)
        try:
            return apply_faults(plan, transport, options, link=link)
        except TransportUnavailableError as exc:
            raise pytest.skip.Exception(f"oom on the {transport.name} transport needs a memory cgroup: {exc}",
                                        _use_item_location=True) from None

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        """A step that differed, or an error of the kit's own (its message says what to do), as its
        text; anything else with a short traceback (the long one was ~900 lines of pytest and
        pluggy frames around one line of cause)."""
        if isinstance(excinfo.value, ScenarioFailure):
            return str(excinfo.value)
        if isinstance(excinfo.value, HermesKernelError):
            return (f"scenario {self.scenario.name} [{self.transport_name}] ({self.path.name}): "
                    f"{type(excinfo.value).__name__}: {excinfo.value}")
        return super().repr_failure(excinfo, style="short")

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"scenario {self.scenario.name} [{self.transport_name}]: {self.scenario.source}"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "hermes_scenario_fault(kind): set on scenario items that inject a fault")
