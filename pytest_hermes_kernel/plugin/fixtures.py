"""Fixtures that hand a test real kernels: ``hermes_transport``, ``hermes_kernel_factory``,
``hermes_kernel`` and ``hermes_registry``, configured by the ``hermes_kernel(...)`` marker.

``hermes_transport`` is parametrized over ``--hermes-transport`` (the matrix). A backend
author overrides it in a conftest to return their own :class:`Transport` and gets every test
that uses these fixtures, the contract suite included, against their backend.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import ConfigError, HermesKernelError, KernelShutdownError, TransportUnavailableError
from ..transports import close_transport, get_transport, registered, transport_names
from . import faults, keep, prompt, story
from .report import phase_report_key, stats_key
from .markers import did_you_mean, no_leg_selected, options_lacking
from .module_transports import transport_for
from .settings import settings_key, transport_defaults

if TYPE_CHECKING:  # the kernel core is imported by the fixtures, when a test asks for a kernel
    from ..kernel.contract import Transport
    from ..kernel.interface import Kernel
    from ..kernel.options import KernelOptions
    from ..kernel.registry import KernelRegistry

_MARKER_ONLY = {"transport", "tools"}


@functools.cache
def _field_types() -> dict[str, str]:
    """Each :class:`KernelOptions` field's annotation, as text, by field name."""
    from ..kernel.options import KernelOptions

    return {f.name: str(f.type) for f in dataclasses.fields(KernelOptions)}


@dataclasses.dataclass(frozen=True)
class KernelMarker:
    """The parsed ``hermes_kernel(...)`` marker: kernel options, tools, transport pin and options."""

    kernel: dict[str, Any]
    tools: dict[str, Callable[..., Any]]
    transport: str | None
    transport_options: dict[str, Any]


def _parse_marker(**kwargs: Any) -> KernelMarker:
    fields = _field_types()
    kernel = {k: v for k, v in kwargs.items() if k in fields}
    rest = {k: v for k, v in kwargs.items() if k not in fields and k not in _MARKER_ONLY}
    problems = []
    tools = kwargs.get("tools") or {}
    if not isinstance(tools, Mapping) or not all(isinstance(n, str) and callable(f) for n, f in tools.items()):
        problems.append(f"tools must be a dict of name -> callable, not {tools!r}")
    transport = kwargs.get("transport")
    if transport is not None and not isinstance(transport, str):
        problems.append(f"transport must be a transport name, not {transport!r}")
    if problems:
        raise ConfigError("; ".join(problems))
    _kernel_options(kernel)  # what KernelOptions itself checks (e.g. max_output_bytes >= 1024)
    return KernelMarker(kernel=kernel, tools=dict(tools), transport=transport, transport_options=rest)


def _kernel_options(values: dict[str, Any]) -> KernelOptions:
    """:raises ConfigError: if :class:`KernelOptions` rejects ``values`` (the message names the option)."""
    from ..kernel.options import KernelOptions

    types = _field_types()
    problems = [p for p in (_bad_option(types[k], k, v) if k in types else f"unknown kernel option {k!r}"
                            for k, v in values.items()) if p]
    if problems:
        raise ConfigError("; ".join(problems))
    try:
        return KernelOptions(**values)
    except (TypeError, ValueError) as exc:
        raise ConfigError(str(exc)) from None


def _bad_option(annotation: str, name: str, value: Any) -> str | None:
    """Why ``value`` does not fit the :class:`KernelOptions` field ``name``, or ``None`` if it does.

    Checked by the field's annotation: numbers (durations in seconds, sizes in bytes) must be
    ``>= 0``, so that a typo fails at the test that has it and not deep in the watchdog.
    """
    from ..kernel.watchdog import WatchdogPolicy

    if value is None:
        return None if "None" in annotation else f"{name} must not be None"
    base = annotation.split("|")[0].strip()
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if base == "float" and not (number and value >= 0):
        return f"{name} must be a number of seconds >= 0{' or None' if 'None' in annotation else ''}, not {value!r}"
    if base == "int" and not (number and isinstance(value, int) and value >= 0):
        return f"{name} must be an integer >= 0, not {value!r}"
    if base == "bool" and not isinstance(value, bool):
        return f"{name} must be True or False, not {value!r}"
    if base == "WatchdogPolicy" and not isinstance(value, (WatchdogPolicy, Mapping)):
        return f"{name} must be a WatchdogPolicy(...) or a dict of its fields, not {value!r}"
    return None


def kernel_marker(node: pytest.Item) -> KernelMarker:
    """Merge every ``hermes_kernel`` marker on ``node`` (closest wins).

    :raises pytest.fail.Exception: naming the test when an argument is bad (the test errors).
    """
    merged: dict[str, Any] = {}
    for mark in reversed(list(node.iter_markers("hermes_kernel"))):
        if mark.args:
            pytest.fail(f"{node.nodeid}: hermes_kernel(...) takes keyword arguments only, "
                        f"got positional {mark.args!r}", pytrace=False)
        merged.update(mark.kwargs)
    try:
        return _parse_marker(**merged)
    except ConfigError as exc:
        problem = str(exc)
    pytest.fail(f"{node.nodeid}: bad hermes_kernel marker: {problem}", pytrace=False)  # outside `except`: no chained traceback


def _pinned_transport(definition: pytest.Item) -> Any:
    """The closest ``hermes_kernel(transport=...)``, unchecked (the fixtures check the marker)."""
    for mark in definition.iter_markers("hermes_kernel"):
        if "transport" in mark.kwargs:
            return mark.kwargs["transport"]
    return None


def _our_transport_fixture_used(metafunc: pytest.Metafunc) -> bool:
    defs = getattr(metafunc, "_arg2fixturedefs", {}).get("hermes_transport")
    return bool(defs) and getattr(defs[-1], "func", None) is hermes_transport.__wrapped__  # type: ignore[attr-defined]


_unknown_key = pytest.StashKey[set[str]]()
_unknown_message_key = pytest.StashKey[str]()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "hermes_transport" not in metafunc.fixturenames or not _our_transport_fixture_used(metafunc):
        return
    names = list(metafunc.config.stash[settings_key].transport)
    only = [n for m in metafunc.definition.iter_markers("hermes_transports") for n in m.args]
    pinned = _pinned_transport(metafunc.definition)
    if isinstance(pinned, str) and pinned:
        names = [pinned]
    elif only:
        names = [n for n in names if n in only]
    known = transport_names()  # conftests of this directory have registered theirs by now
    if not (isinstance(pinned, str) and pinned):  # a marker's typo errors its own test at setup
        metafunc.config.stash.setdefault(_unknown_key, set()).update(n for n in names if n not in known)
    if not names:
        names = ["<none>"]
    metafunc.parametrize("hermes_transport", names, indirect=True, ids=names)


_PACKAGE = __name__.partition(".")[0]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Any:
    """Keep this package's modules across a test's teardown. ``pytester`` puts ``sys.modules``
    back as it was before the test, dropping the modules first imported during it (most of this
    package loads on first use), and the next import would make a second copy of their
    process-wide state: the live registries, the local kernel dirs made, the kernel servers. The
    leak check (a wrapper around this one) and the summary read the first copy. Hidden from
    tracebacks: the last test's leak check raises inside it (among its module's finalizers), and
    its source stood above the report."""
    __tracebackhide__ = True
    mine = package_modules()
    try:
        return (yield)
    finally:
        put_back(mine)


def package_modules() -> dict[str, Any]:
    """This package's loaded modules by name (to :func:`put_back` after a ``pytester`` teardown)."""
    return {name: module for name, module in sys.modules.copy().items()  # one step: no finalizer in between
            if name == _PACKAGE or name.startswith(f"{_PACKAGE}.")}


def put_back(modules: dict[str, Any]) -> None:
    """Put back those of ``modules`` that are no longer in ``sys.modules``."""
    for name, module in modules.items():
        sys.modules.setdefault(name, module)


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest) -> Any:
    """The summary names a ``hermes_transport`` override (a conftest's: a backend author's) with
    its transport (the header's ``transports=`` is not what its tests ran on), and says so when the
    contract suite ran on a built-in transport for want of one (a conftest not picked up); an
    override that gives no :class:`Transport` fails the test here, saying what it gave."""
    value = yield
    if fixturedef.argname != "hermes_transport":
        return value
    if getattr(fixturedef.func, "__module__", None) == __name__:  # the plugin's own
        in_contract = getattr(getattr(request.node, "function", None), "__module__", "").startswith(f"{_PACKAGE}.contract.")
        if in_contract and not registered(getattr(request, "param", None) or value.name):  # registered: the author's
            request.config.stash[stats_key].contract_plain.add(value.name)
    else:
        from ..kernel.contract import Transport

        code = getattr(fixturedef.func, "__code__", None)
        place = (f"{os.path.relpath(code.co_filename, request.config.rootpath)}:{code.co_firstlineno}" if code is not None
                 else fixturedef.baseid or "a conftest")
        if isinstance(value, Transport):
            request.config.stash[stats_key].overrides[place] = value.name
        else:
            where = f" ({place})"
            what = (f"the class {value.__name__}" if isinstance(value, type) else
                    "None" if value is None else f"a {type(value).__name__}")
            hint = ("yield an instance of it" if isinstance(value, type) and issubclass(value, Transport) else
                    "wrap an execute backend in FileCellTransport(backend)" if hasattr(value, "execute") else
                    "yield an instance of a Transport subclass (or FileCellTransport(backend))")
            pytest.fail(f"{request.node.nodeid}: the hermes_transport fixture gave {what}, not a Transport"
                        f"{where}. Hint: {hint}", pytrace=False)
    return value


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config) -> None:
    """Stop the run with a usage error when a selected transport name is unknown (a typo), whether
    or not a test takes a kernel fixture (a CI leg ``dockr`` of a suite of its own registries ran green).

    Not on a pytest-xdist worker, where a usage error is an internal error of the controller:
    there each test errors at setup with the same message.
    """
    known = transport_names()  # every conftest has registered its own by now
    named = {n for n in config.stash[settings_key].transport if n not in known}
    unknown = sorted(config.stash.get(_unknown_key, set()) | named)
    if not unknown:
        return
    source = config.stash[settings_key].sources.get("transport", "--hermes-transport")
    close = did_you_mean(unknown[0], transport_names()) if len(unknown) == 1 else ""
    message = (f"pytest-hermes-kernel: unknown transport {', '.join(map(repr, unknown))}{close} (from {source}); "
               f"known: {', '.join(transport_names())}. Hint: a backend registers its name with register_transport() "
               "in a conftest.py this run reads (the rootdir's, or one at or above a test path given) or a -p module.")
    if not hasattr(config, "workerinput"):
        raise pytest.UsageError(message)
    config.stash[_unknown_message_key] = message


def pytest_runtest_setup(item: pytest.Item) -> None:
    """On an xdist worker: error each test when the run names an unknown transport (see above)."""
    message = item.config.stash.get(_unknown_message_key, None)
    if message is not None:
        pytest.fail(message, pytrace=False)


def _unavailable(request: pytest.FixtureRequest, why: str) -> None:
    """Skip the test, or fail it under ``--hermes-require-transports`` (called while handling the
    transport's error: ``from None`` keeps its traceback out of the report, the message has it all)."""
    if request.config.stash[settings_key].require_transports:
        raise pytest.fail.Exception(f"required transport unavailable: {why}", pytrace=False) from None
    raise pytest.skip.Exception(why) from None


@pytest.fixture
def hermes_transport(request: pytest.FixtureRequest) -> Iterator[Transport]:
    """The :class:`Transport` this test's kernels run on (one per ``--hermes-transport`` entry).

    Skips with the reason (``hermes-kernel doctor`` says the same) when the transport cannot run
    here, or fails under ``--hermes-require-transports``. Marker transport options (e.g.
    ``server=False``) give the module's tests that name them an instance of their own, closed after
    its last test; ``container="fresh"`` or options its faults need, one of the test's own (:mod:`.module_transports`).
    """
    name = getattr(request, "param", None) or _leg_outside_the_matrix(request)
    if name == "<none>":
        pytest.skip(no_leg_selected(request.node, request.config.stash[settings_key].transport))
    marker = kernel_marker(request.node)
    _skip_where_options_do_not_apply(name, marker.transport_options)
    fault_options = faults.transport_options_for_faults(request, name)
    options = {**fault_options, **marker.transport_options}
    faults.note_transport_options(request.node, options)
    defaults = transport_defaults(request.config, name)
    _skip_where_targets_cannot(name, defaults, options)
    try:
        transport, own = transport_for(request, name, defaults, marker.transport_options, fault_options)
    except TransportUnavailableError as exc:
        _unavailable(request, str(exc))
        raise
    except ConfigError as exc:
        problem = f"bad hermes_kernel marker: {exc}" if options else str(exc)
    else:
        yield transport
        if own:
            close_transport(transport)
        return
    pytest.fail(f"{request.node.nodeid}: {problem}", pytrace=False)  # outside `except`: no chained traceback


def _leg_outside_the_matrix(request: pytest.FixtureRequest) -> str:
    """The transport of a test the matrix did not parametrize: one that asked for a kernel fixture
    while it ran (``request.getfixturevalue``), after collection. With one transport that is it;
    with several the test errors: it ran once, on the first, and passed for every leg."""
    names = request.config.stash[settings_key].transport
    if len(names) > 1:
        pytest.fail(f"{request.node.nodeid}: the --hermes-transport matrix ({', '.join(names)}) runs a test once per "
                    "transport, but this test asked for its kernel fixture while it ran (request.getfixturevalue), "
                    f"after the matrix was made: it would run on {names[0]} alone. Hint: name hermes_kernel (or "
                    "hermes_kernel_factory, hermes_registry, hermes_transport) in the arguments of the test or of "
                    "its fixture", pytrace=False)
    return names[0]


@pytest.fixture
def hermes_kernel_factory(request: pytest.FixtureRequest, hermes_transport: Transport) -> Iterator[Callable[..., Kernel]]:
    """``factory(**options) -> Kernel``: start kernels on this test's transport, with the test's
    fault markers applied (a :class:`~pytest_hermes_kernel.kernel.handle.KernelHandle`, or a
    host-harness or faulting kernel with the same :class:`Kernel` API).

    Options are :class:`KernelOptions` fields plus ``tools={name: callable}``; they override the
    marker's. Every kernel is shut down after the test (kept alive after pytest exits instead
    when the test failed and ``--hermes-keep-failed`` is on: :mod:`.keep`).
    """
    settings = request.config.stash[settings_key]
    marker = kernel_marker(request.node)
    stats = request.config.stash[stats_key]
    made: list[Kernel] = []
    ended: list[bool] = []

    def factory(**options: Any) -> Kernel:
        if ended:  # nobody would shut its kernel down: it leaked
            raise KernelShutdownError(f"{request.node.nodeid}: its hermes_kernel_factory was called after that test "
                                      "ended, when its kernels were shut down; nothing was started. Hint: use the "
                                      "factory of the test that runs now, or a module- or session-scoped fixture")
        tools = {**marker.tools, **(options.pop("tools", None) or {})}
        merged = {"timeout": settings.timeout, **marker.kernel, **options}
        try:
            opts = _kernel_options(merged)
        except ConfigError as exc:
            raise ConfigError(f"{request.node.nodeid}: bad hermes_kernel_factory option: {exc}") from None
        kernel = faults.make_kernel(request, hermes_transport, opts, tools)
        kernel.add_listener(stats.on_event)
        stats.on_event("started", kernel, None)  # started before the listener was added
        story.follow(request.node, kernel)
        made.append(kernel)
        return kernel

    yield factory
    ended.append(True)
    problems = [(f"hermes_kernel_factory's kernel {i} of {len(made)} ({kernel.kernel_id}): " if len(made) > 1 else "") + p
                for i, kernel in enumerate(made, 1) for p in faults.finish_kernel(kernel, request.node)]  # of several: which one
    if not made:
        problems += faults.never_applied(request.node, request.node.stash.get(phase_report_key, {}))
    kept = False
    try:
        kept = _finish_kernels(request, made)
    finally:
        if kept:  # a kept kernel in a fault's memory cgroup: removing the group would kill it now
            request.config.add_cleanup(functools.partial(faults.close_fault_setups, request.node))
        else:
            faults.close_fault_setups(request.node)
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


def _skip_where_options_do_not_apply(name: str, options: dict[str, Any]) -> None:
    """Skip this leg when the marker gives transport options its transport does not take (the
    test asked for e.g. ``container="fresh"``, which only docker and ssh honour)."""
    lacking = options_lacking(name, options)
    if lacking:
        what = ", ".join(f"{key}= (taken by {', '.join(takers)})" for key, takers in lacking.items())
        where = sorted(set().union(*map(set, lacking.values())))
        pytest.skip(f"the {name} transport cannot honour the hermes_kernel marker's {what}: this leg is skipped. "
                    f"Hint: @pytest.mark.hermes_transports({', '.join(map(repr, where))}) runs the test only there")


def _skip_where_targets_cannot(name: str, defaults: dict[str, Any], options: dict[str, Any]) -> None:
    """Skip this leg when the test needs the sshd container the kit starts (a memory limit, a fresh
    container: the OOM marker) but the run points the ssh transport at hosts of its own."""
    needs = sorted({"mem_limit_bytes", "container"} & set(options))
    if name == "ssh" and defaults.get("targets") and needs:
        pytest.skip(f"the ssh transport runs on --hermes-ssh-targets hosts, which cannot honour "
                    f"{', '.join(f'{k}=' for k in needs)} (a memory limit or a fresh container, e.g. for the "
                    "hermes_oom marker, needs the sshd container the kit starts): this leg is skipped")


def _finish_kernels(request: pytest.FixtureRequest, handles: list[Kernel]) -> bool:
    """Shut the test's kernels down, or keep them (a failed test under ``--hermes-keep-failed``):
    whether they were kept."""
    reports = request.node.stash.get(phase_report_key, {})
    failed = any(r.failed for r in reports.values())
    if failed and request.config.stash[settings_key].keep_failed:
        keep.keep_kernels(request.node, handles)
        return True
    errors = []
    for handle in handles:
        try:
            handle.shutdown()
        except HermesKernelError as exc:
            errors.append(f"{handle!r}: {exc}")
    if errors:
        raise HermesKernelError("kernel shutdown failed after the test: " + "; ".join(errors))
    return False


@pytest.fixture
def hermes_kernel(hermes_kernel_factory: Callable[..., Kernel]) -> Kernel:
    """One started kernel on this test's transport, configured by the ``hermes_kernel`` marker."""
    return hermes_kernel_factory()


@pytest.fixture
def hermes_registry(request: pytest.FixtureRequest, hermes_transport: Transport) -> Iterator[KernelRegistry]:
    """A :class:`KernelRegistry` whose kernels run on this test's transport; closed after the test.

    ``KernelKey(owner=...)`` (no transport named) runs on this leg's transport of the matrix;
    a key that names another transport explicitly gets the shared transport of that name.
    """
    from ..kernel.options import KernelOptions
    from ..kernel.registry import KernelRegistry

    settings = request.config.stash[settings_key]
    marker = kernel_marker(request.node)
    opts = KernelOptions(**{"timeout": settings.timeout, **marker.kernel})
    stats = request.config.stash[stats_key]
    own = hermes_transport.name

    def factory(key: Any) -> Transport:
        if key.transport == own:
            return hermes_transport
        return get_transport(key.transport, **transport_defaults(request.config, key.transport))

    registry = KernelRegistry(max_kernels=settings.max_kernels, idle_timeout=settings.idle_timeout, options=opts,
                              tools=marker.tools, transport_factory=factory, transport=own, clock=prompt.prompt_clock(request.config))
    followed: set[str] = set()
    lock = threading.Lock()  # (its kernels' events come from the threads that use them)

    def listener(event: str, kernel: Any, payload: Any) -> None:
        stats.on_event(event, kernel, payload)
        with lock:
            first = kernel.kernel_id not in followed
            followed.add(kernel.kernel_id)
        if first:  # each of its kernels has a story in a failing test's report too
            story.follow(request.node, kernel).on_event(event, kernel, payload)

    registry.listener = listener
    yield registry
    registry.close()
