"""Collects the regression scenario catalog as test items: ``pytest fixtures/``.

Every ``*.toml`` file under a directory named ``fixtures`` (or named ``scenario_*.toml``
anywhere) with a ``[scenario]`` table becomes one item per transport of the run's matrix that
the scenario lists, e.g. ``fixtures/b07_sys_exit.toml::sys-exit-ends-kernel[local]``.
The leak checker runs after each like after any test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ..errors import ConfigError, TransportUnavailableError
from ..faults import injector
from ..catalog import Scenario, ScenarioFailure, ScenarioRunner, load_scenario
from ..transports import get_transport, make_transport
from .settings import settings_key


def _is_scenario_file(path: Path) -> bool:
    return path.suffix == ".toml" and ("fixtures" in path.parts[:-1] or path.name.startswith("scenario_"))


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if _is_scenario_file(file_path):
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


class ScenarioFile(pytest.File):
    """A scenario file: one item per selected transport."""

    def collect(self) -> Any:
        try:
            scenario = load_scenario(self.path)
        except ConfigError as exc:
            if "[scenario]" in str(exc) and "[scenario]" not in self.path.read_text("utf-8", "replace"):
                return  # some other TOML file in a fixtures dir: not ours
            raise self.CollectError(str(exc)) from None
        selected = self.config.stash[settings_key].transport
        for name in selected:
            if scenario.transports is None or name in scenario.transports:
                yield ScenarioItem.from_parent(self, name=f"{scenario.name}[{name}]", scenario=scenario,
                                               transport_name=name)

    class CollectError(Exception):
        pass


class ScenarioItem(pytest.Item):
    """One scenario on one transport."""

    def __init__(self, *, scenario: Scenario, transport_name: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scenario = scenario
        self.transport_name = transport_name
        for spec in scenario.faults:
            self.add_marker(pytest.mark.hermes_scenario_fault(spec.get("kind")))

    def runtest(self) -> None:
        s = self.scenario
        oom = next((f for f in s.faults if f.get("kind") == "oom"), None)
        cgroup = None
        options = None
        try:
            if oom and self.transport_name in ("docker", "ssh"):
                transport = make_transport(self.transport_name, mem_limit_bytes=int(oom["limit_bytes"]),
                                           container="fresh")
            else:
                transport = get_transport(self.transport_name)
        except TransportUnavailableError as exc:
            if self.config.stash[settings_key].require_transports:
                raise
            pytest.skip(str(exc))
        if oom and transport.runs_on_this_host:
            from dataclasses import replace

            from ..faults.cgroup import create_memory_cgroup
            from ..kernel.handle import KernelOptions

            try:
                cgroup = create_memory_cgroup(int(oom["limit_bytes"]))
            except TransportUnavailableError as exc:
                pytest.skip(f"oom scenario on local needs a memory cgroup: {exc}")
            options = replace(KernelOptions(**s.kernel), cgroup_procs=cgroup.procs_file,
                              oom_counter_file=cgroup.oom_counter_file)
        if any(f.get("kind") == "transport_drop" for f in s.faults) and not transport.reattachable:
            pytest.skip(f"transport_drop does not apply to {transport.name}")
        try:
            from .report import stats_key

            ScenarioRunner(s, lambda key: transport, self.transport_name, on_fault=_fire, options=options,
                           listener=self.config.stash[stats_key].on_event).run()
        finally:
            if cgroup is not None:
                cgroup.remove()
            if oom and self.transport_name in ("docker", "ssh"):
                transport.close()

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, ScenarioFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"scenario {self.scenario.name} [{self.transport_name}]: {self.scenario.source}"


def _fire(spec: dict[str, Any], handle: Any) -> None:
    kind = spec.get("kind")
    if kind == "kernel_sigkill":
        injector.kernel_sigkill(handle)
    elif kind == "transport_drop":
        injector.transport_drop(handle, spec.get("mode", "reset"), spec.get("duration"), spec.get("latency", 0.2))
    elif kind != "oom":
        raise ScenarioFailure(f"fault kind {kind!r} is not available in scenarios (host_sigkill: use the marker)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "hermes_scenario_fault(kind): set on scenario items that inject a fault")
