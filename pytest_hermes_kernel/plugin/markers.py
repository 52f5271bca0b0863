"""Every ``hermes_*`` marker is checked before its test runs: no marker silently does nothing.

At collection each test's markers are validated; a problem is kept on the item and the test
errors at setup with one message (printed once), before any fixture runs:

* a marker that needs a kernel fixture on a test that uses none names the marker and the
  fixtures that would honour it (a fault marker on a test without ``hermes_kernel`` is a test
  that passes without its fault);
* an unknown transport name in ``hermes_transports(...)`` or ``hermes_kernel(transport=...)``
  is an error listing the known names, with a did-you-mean;
* an unknown keyword of ``hermes_kernel(...)`` is reported as that: an unknown keyword of that
  marker (with a did-you-mean), not as a failure of the transport;
* bad arguments of a fault marker are reported with the marker's signature, and fault markers that
  cannot all apply (two ``hermes_oom``, two ``hermes_host_sigkill``, one fault twice) are an error;
* a ``hermes_*`` marker name this plugin does not define is an error with a did-you-mean;
* on a ``pytest.param(..., marks=...)`` (applied after the matrix's legs are made),
  ``hermes_transports(...)`` skips the parameter's other legs, and ``hermes_kernel(transport=...)``,
  which cannot pick a leg there, is an error.

Turn this plugin off with ``-p no:pytest_hermes_kernel.plugin.markers`` (not recommended).
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
from collections.abc import Callable, Iterable

import pytest

from ..errors import ConfigError
from ..faults.spec import MARKERS as FAULT_MARKERS, FaultSpec, conflicts, plain_signature
from ..transports import transport_factory, transport_names

_problem_key = pytest.StashKey[str]()

KERNEL_FIXTURES = ("hermes_kernel", "hermes_kernel_factory")
"""Fixtures that start kernels with the test's fault markers applied."""
OPTION_FIXTURES = ("hermes_kernel", "hermes_kernel_factory", "hermes_registry")
"""Fixtures that start kernels with ``hermes_kernel(...)``'s kernel options."""
MARKER_ONLY_KEYS = ("transport", "tools")


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest of ``choices``, or ``""``."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def transport_option_names() -> dict[str, set[str]]:
    """Keyword options each known transport accepts (from its factory's signature)."""
    names: dict[str, set[str]] = {}
    for name in transport_names():
        try:
            factory = transport_factory(name)
            params = inspect.signature(factory).parameters.values()
        except (ConfigError, ImportError, TypeError, ValueError):
            continue
        names[name] = {p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    return names


def options_lacking(transport: str, options: Iterable[str]) -> dict[str, list[str]]:
    """``{option: [transports that take it]}`` for each marker transport option that
    ``transport`` does not take (``{}`` for a transport whose options cannot be read)."""
    by_transport = transport_option_names()
    takes = by_transport.get(transport)
    if takes is None:
        return {}
    return {key: sorted(t for t, keys in by_transport.items() if key in keys) for key in options if key not in takes}


def _unknown_transport(name: object, where: str) -> str | None:
    known = transport_names()
    if isinstance(name, str) and name in known:
        return None
    return (f"{where}: unknown transport {name!r}{did_you_mean(str(name), known)} "
            f"(known: {', '.join(known)}; a backend registers its own with register_transport())")


def _check_transports_marker(item: pytest.Item) -> list[str]:
    problems = []
    for mark in item.iter_markers("hermes_transports"):
        if mark.kwargs or not mark.args:
            problems.append("@pytest.mark.hermes_transports(*names) takes transport names, e.g. "
                            "hermes_transports('docker', 'ssh')")
        problems += [p for n in mark.args if (p := _unknown_transport(n, "@pytest.mark.hermes_transports"))]
        if "hermes_transport" not in item.fixturenames:
            problems.append("@pytest.mark.hermes_transports(...) on a test that uses no hermes_* kernel fixture "
                            "does nothing; use hermes_transport, hermes_kernel, hermes_kernel_factory or "
                            "hermes_registry")
    return problems


def _check_kernel_marker(item: pytest.Item) -> list[str]:
    marks = list(item.iter_markers("hermes_kernel"))
    if not marks:
        return []
    from ..kernel.options import KernelOptions

    fields = {f.name for f in dataclasses.fields(KernelOptions)}
    by_transport = transport_option_names()
    transport_keys = set().union(*by_transport.values()) if by_transport else set()
    problems, kernel_keys = [], set()
    for mark in marks:
        if mark.args:
            problems.append(f"@pytest.mark.hermes_kernel(...) takes keyword arguments only, got positional {mark.args!r}")
        for key, value in mark.kwargs.items():
            if key == "transport":
                problems += [p for p in [_unknown_transport(value, "@pytest.mark.hermes_kernel(transport=...)")] if p]
            elif key in fields or key == "tools":
                kernel_keys.add(key)
            elif key not in transport_keys:
                known = sorted(fields | transport_keys | set(MARKER_ONLY_KEYS))
                problems.append(f"unknown keyword {key!r} of @pytest.mark.hermes_kernel{did_you_mean(key, known)} "
                                "(it takes KernelOptions fields, tools=, transport= and transport options)")
    if kernel_keys and not set(OPTION_FIXTURES) & set(item.fixturenames):
        problems.append(f"@pytest.mark.hermes_kernel({', '.join(sorted(kernel_keys))}=...) sets kernel options, but "
                        f"the test uses none of the fixtures that honour them ({', '.join(OPTION_FIXTURES)})")
    elif marks and "hermes_transport" not in item.fixturenames:
        problems.append("@pytest.mark.hermes_kernel(...) on a test that uses no hermes_* kernel fixture does nothing; "
                        f"use one of {', '.join(OPTION_FIXTURES)} or hermes_transport")
    return problems


#: How a test fires each marker's fault itself (the ``hermes_faults`` fixture), for the hint of one without a kernel fixture.
BY_HAND = {"hermes_kernel_sigkill": "hermes_faults.kernel_sigkill(k)",
           "hermes_transport_drop": "hermes_faults.transport_drop(k, mode)",
           "hermes_host_sigkill": "h = hermes_faults.harness(); ...; hermes_faults.host_sigkill(h)",
           "hermes_oom": "a kernel started with the cgroup of hermes_faults.memory_cgroup(limit_bytes)"}


def _check_fault_markers(item: pytest.Item) -> list[str]:
    problems, specs = [], []
    for name, parse in FAULT_MARKERS.items():
        for mark in item.iter_markers(name):
            try:
                spec = parse(*mark.args, **mark.kwargs)
            except (TypeError, ConfigError) as exc:
                problems.append(f"bad @pytest.mark.{name}{plain_signature(parse)}: {exc}")
            else:
                specs.append(spec)
                problems += [p for p in [_untriggered(name, spec, item)] if p]
            if not set(KERNEL_FIXTURES) & set(item.fixturenames):
                problems.append(f"@pytest.mark.{name} needs a kernel to fault, but the test uses none of the "
                                f"fixtures that apply it ({', '.join(KERNEL_FIXTURES)}); without one the test "
                                "would pass without its fault. Hint: take one of them, or drop the marker and fire "
                                "the fault on a kernel of your own (a registry's: registry.get_or_start(key)) with the "
                                f"hermes_faults fixture: {BY_HAND[name]}")
    return problems + conflicts(specs, "@pytest.mark.hermes_") + _oom_overridden(item, specs) + _tools_of_a_harness(item, specs)


TOOLS_IN_HARNESS = ("tools cannot cross into the host harness: hermes_host_sigkill runs the kernel under a host "
                    "process of its own, and a tool runs in the test process. Hint: test the tools in a test without "
                    "hermes_host_sigkill")
"""Why a ``hermes_host_sigkill`` kernel takes no tools (the marker check and the factory say it)."""


def _tools_of_a_harness(item: pytest.Item, specs: list[FaultSpec]) -> list[str]:
    """``hermes_kernel(tools=...)`` beside ``hermes_host_sigkill``: known before the test runs (it
    errored in the fixture, with a traceback through the plugin)."""
    if not any(s.kind == "host_sigkill" for s in specs):
        return []
    if not any(m.kwargs.get("tools") for m in item.iter_markers("hermes_kernel")):
        return []
    return [f"@pytest.mark.hermes_kernel(tools=...) beside @pytest.mark.hermes_host_sigkill: {TOOLS_IN_HARNESS}"]


def _oom_overridden(item: pytest.Item, specs: list[FaultSpec]) -> list[str]:
    """A ``hermes_kernel`` marker's memory limit or shared container beside ``hermes_oom``: on docker
    and ssh the marker's option won over the fault's (the limit held depended on the transport, and
    a hog in a shared container could OOM-kill other tests' kernels)."""
    oom = next((s for s in specs if s.kind == "oom"), None)
    if oom is None:
        return []
    given = {k: v for m in item.iter_markers("hermes_kernel") for k, v in m.kwargs.items()}
    clash = [f"{key}={given[key]!r}" for key, fine in (("mem_limit_bytes", oom.limit_bytes), ("container", "fresh"))
             if key in given and given[key] != fine]
    if not clash:
        return []
    return [f"@pytest.mark.hermes_oom(limit_bytes={oom.limit_bytes}) runs the kernel under that limit, in a container "
            f"of its own on docker and ssh; the hermes_kernel marker's {', '.join(clash)} would override it there (the "
            "limit held would depend on the transport). Hint: leave it out of hermes_kernel(...)"]


def _untriggered(name: str, spec: FaultSpec, item: pytest.Item) -> str | None:
    """A fault that fires at a trigger point, with none given, in a test that cannot fire it
    itself (no ``hermes_faults``): it would never fire, and the test would pass without it."""
    if not spec.fires or spec.after_cell is not None or spec.during_cell is not None:
        return None
    if "hermes_faults" in item.fixturenames:
        return None
    return (f"@pytest.mark.{name} has no trigger, so it never fires: give after_cell=N or during_cell=N, "
            "or fire it from the test with the hermes_faults fixture")


def _parameter_marks(item: pytest.Item, name: str) -> list[pytest.Mark]:
    """The ``name`` marks of ``item``'s ``pytest.param(..., marks=...)``: pytest applies them after
    the matrix's legs are made (``pytest_generate_tests`` cannot see them)."""
    callspec = getattr(item, "callspec", None)
    return [m for m in getattr(callspec, "marks", ()) if m.name == name]


def _check_parameter_pin(item: pytest.Item) -> list[str]:
    """A ``hermes_kernel(transport=...)`` on a parameter: it cannot pick the legs (it ran the test on
    whichever leg the matrix gave, the pin unread)."""
    return [f"@pytest.mark.hermes_kernel(transport=...) on a pytest.param(...) cannot pin its transport "
            f"({m.kwargs['transport']!r}): pytest applies a parameter's marks after the matrix's legs are made. Hint: "
            "put it on the test function, or mark the parameter @pytest.mark.hermes_transports(...) (its other legs "
            "are skipped)" for m in _parameter_marks(item, "hermes_kernel") if "transport" in m.kwargs]


def leg_left_out(item: pytest.Item) -> str | None:
    """Why ``item``'s leg of the matrix is not one its parameter's ``hermes_transports`` marker
    selects (it ran there before), or ``None``."""
    leg = getattr(getattr(item, "callspec", None), "params", {}).get("hermes_transport")
    for mark in _parameter_marks(item, "hermes_transports"):
        if isinstance(leg, str) and leg != "<none>" and leg not in mark.args:
            return (f"the {leg} leg is not one of this parameter's @pytest.mark.hermes_transports"
                    f"({', '.join(map(repr, mark.args))}): this leg is skipped")
    return None


def no_leg_selected(item: pytest.Item, run: Iterable[str]) -> str:
    """Why a test whose ``hermes_transports(...)`` names none of the run's legs skips, and how to run
    it (it said only "no transport of --hermes-transport is selected for this test")."""
    only = [n for m in item.iter_markers("hermes_transports") for n in m.args]
    return (f"no transport of --hermes-transport={','.join(run)} is selected for this test: its hermes_transports "
            f"marker names {', '.join(only)}. Hint: run it with --hermes-transport={','.join(only)}")


def _check_marker_names(item: pytest.Item) -> list[str]:
    """A ``hermes_*`` marker this plugin does not define (a typo of a fault marker would
    otherwise get only pytest's unknown-mark warning, and the test would pass without its fault)."""
    known = {line.split(":")[0].split("(")[0].strip() for line in item.config.getini("markers")}
    return [f"unknown marker @pytest.mark.{m.name}{did_you_mean(m.name, (k for k in known if k.startswith('hermes_')))}"
            for m in item.iter_markers() if m.name.startswith("hermes_") and m.name not in known]


def _check_allow_leaks(item: pytest.Item) -> list[str]:
    """``hermes_allow_leaks`` turns the leak check off for its test: it must say why."""
    problems = []
    for m in item.iter_markers("hermes_allow_leaks"):
        reason = m.args[0] if m.args else m.kwargs.get("reason")
        if not isinstance(reason, str) or not reason.strip():  # "", "  ", 123: no reason a reader could use
            given = "" if reason in (None, "") else f", not {reason!r}"
            problems.append(f"@pytest.mark.{m.name} needs a reason: @pytest.mark.hermes_allow_leaks('why this test "
                            f"leaves something'){given}")
    return problems


CHECKS: tuple[Callable[[pytest.Item], list[str]], ...] = (
    _check_marker_names, _check_transports_marker, _check_kernel_marker, _check_fault_markers, _check_allow_leaks,
    _check_parameter_pin)


def marker_problems(item: pytest.Item) -> list[str]:
    """Every problem with ``item``'s ``hermes_*`` markers (empty when they are fine)."""
    return [p for check in CHECKS for p in check(item)]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        problems = list(dict.fromkeys(marker_problems(item)))
        if problems:
            item.stash[_problem_key] = "\n".join(problems)
        left_out = leg_left_out(item)
        if left_out is not None:
            item.add_marker(pytest.mark.skip(reason=left_out))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    problem = item.stash.get(_problem_key, None)
    if problem is not None:
        pytest.fail(f"{item.nodeid}: {problem}", pytrace=False)
