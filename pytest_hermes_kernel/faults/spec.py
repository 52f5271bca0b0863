"""Fault specifications: what to inject, and when.

Each marker is parsed by calling the function of the same name with ``*mark.args,
**mark.kwargs`` (pytest's own convention for markers with signatures), so a bad argument is
a ``TypeError`` with Python's own message, turned into a usage error naming the test.

Trigger points: ``after_cell=N`` fires once cell N (1-based) has returned, before the next
cell; ``during_cell=N`` fires ``delay`` seconds after cell N has started in the kernel's worker
(the kernel's ``running`` event, see ``KernelOptions.report_running``), not after ``execute()``
was called, while it runs. A cell that has not started within its timeout, or that ends before
the delay is over, ends its fault unfired (see :mod:`.injector`); a fault whose trigger the test
never met is reported at its end (``FaultingKernel.finish``). With neither, the fault fires when
the test asks (``hermes_faults``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Literal

from ..errors import ConfigError
from ..kernel.options import MAX_SECONDS, is_seconds

FaultKind = Literal["host_sigkill", "kernel_sigkill", "oom", "transport_drop"]
DropMode = Literal["reset", "blackhole", "latency"]


@dataclass(frozen=True)
class FaultSpec:
    """One fault of a test.

    :param bound: seconds within which the kernel must be seen gone (``host_sigkill`` only: no
        other marker takes it, so none accepts an option it would not check); ``None``: the
        transport's stated bound.
    :param duration: seconds a ``blackhole``/``latency`` lasts (``None``: until the test ends).
    :param latency: seconds added to every read in ``latency`` mode.
    :param delay: seconds after cell ``during_cell`` started in the kernel's worker (not after
        ``execute()`` was called) that the fault fires, if the cell still runs then.
    """

    kind: FaultKind
    after_cell: int | None = None
    during_cell: int | None = None
    delay: float = 0.5
    bound: float | None = None
    limit_bytes: int | None = None
    mode: DropMode = "reset"
    duration: float | None = None
    latency: float = 0.2

    def __post_init__(self) -> None:
        for name in ("after_cell", "during_cell"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise ConfigError(f"{self.kind}: {name} must be a cell number >= 1, not {value!r}")
        if self.after_cell is not None and self.during_cell is not None:
            raise ConfigError(f"{self.kind}: give after_cell or during_cell, not both")
        # a string or NaN passed here and broke later: bound="2" a TypeError at teardown, bound=-1 a
        # report that the kernel outlived its host "by more than -1 s", latency="x" a TypeError
        # from the test's next cell, duration=-1 a blackhole healed at once (the test passed)
        for name, optional in (("delay", False), ("bound", True), ("duration", True), ("latency", False)):
            value = getattr(self, name)
            if not (optional and value is None) and not is_seconds(value, positive=False):
                raise ConfigError(f"{self.kind}: {name} must be a finite number of seconds >= 0 (at most {MAX_SECONDS:g})"
                                  f"{' or None' if optional else ''}, not {value!r}")
        if self.bound == 0:  # read as "no bound given" (``bound or natural``): the 2 s default held
            raise ConfigError(f"{self.kind}: bound=0 leaves the kernel no time to end after its host; give seconds > 0, "
                              "or None for the transport's bound")
        if self.mode not in ("reset", "blackhole", "latency"):
            raise ConfigError(f"transport_drop: mode must be 'reset', 'blackhole' or 'latency', not {self.mode!r}")
        # an option its fault never reads was taken and ignored: latency=2 without mode="latency" ran
        # a reset, delay=3 beside after_cell fired at once, and the test passed without what it asked
        unread = [why for given, why in (
            (self.delay != 0.5 and self.during_cell is None,
             f"delay={self.delay!r} times a during_cell fault from the cell's start; this one has no during_cell"),
            (self.latency != 0.2 and self.mode != "latency",
             f"latency={self.latency!r} is added to reads in mode 'latency' only, not {self.mode!r}"),
            (self.duration is not None and self.mode == "reset",
             f"duration={self.duration!r} is how long a 'blackhole' or 'latency' lasts; a 'reset' is over at once"))
            if given]
        if unread:
            raise ConfigError(f"{self.kind}: {'; '.join(unread)}: it would be ignored. Hint: leave it out, or give "
                              "the trigger or mode it belongs to")
        if self.kind == "oom" and (not isinstance(self.limit_bytes, int) or self.limit_bytes < 16 * 2**20):
            raise ConfigError(f"oom: limit_bytes must be an int >= 16 MiB, not {self.limit_bytes!r}")

    @property
    def fires(self) -> bool:
        """Whether the fault is an event at a trigger point (``oom`` is a condition: a memory
        limit the kernel runs under from its start)."""
        return self.kind != "oom"

    def fires_after(self, cell: int) -> bool:
        """Whether the fault fires once cell ``cell`` (1-based) has returned, before the next."""
        return self.fires and self.after_cell == cell

    def fires_during(self, cell: int) -> bool:
        """Whether the fault fires ``delay`` seconds after cell ``cell`` (1-based) started in the worker."""
        return self.fires and self.during_cell == cell


def hermes_host_sigkill(*, after_cell: int | None = None, during_cell: int | None = None, delay: float = 0.5,
                        bound: float | None = None) -> FaultSpec:
    """SIGKILL the kernel's host process; the kernel must be gone within ``bound`` seconds."""
    return FaultSpec("host_sigkill", after_cell=after_cell, during_cell=during_cell, delay=delay, bound=bound)


def hermes_kernel_sigkill(*, after_cell: int | None = None, during_cell: int | None = None,
                          delay: float = 0.5) -> FaultSpec:
    """SIGKILL the kernel's worker (the interpreter running cells) from outside."""
    return FaultSpec("kernel_sigkill", after_cell=after_cell, during_cell=during_cell, delay=delay)


def hermes_oom(limit_bytes: int) -> FaultSpec:
    """Run the kernel under a real memory limit of ``limit_bytes`` (a cgroup or the container's)."""
    return FaultSpec("oom", limit_bytes=limit_bytes)


def hermes_transport_drop(mode: DropMode = "reset", *, after_cell: int | None = None,
                          during_cell: int | None = None, delay: float = 0.5, duration: float | None = None,
                          latency: float = 0.2) -> FaultSpec:
    """Break the channel: ``reset`` (connection reset), ``blackhole`` (the peer goes silent),
    ``latency`` (``latency`` seconds added to every read)."""
    return FaultSpec("transport_drop", after_cell=after_cell, during_cell=during_cell, delay=delay, mode=mode,
                     duration=duration, latency=latency)


MARKERS = {
    "hermes_host_sigkill": hermes_host_sigkill,
    "hermes_kernel_sigkill": hermes_kernel_sigkill,
    "hermes_oom": hermes_oom,
    "hermes_transport_drop": hermes_transport_drop,
}
"""Marker name -> parser; the parsers' signatures are the markers' documented signatures."""


def conflicts(specs: Sequence[FaultSpec], prefix: str = "") -> list[str]:
    """Why ``specs`` cannot all apply to one kernel, one sentence each: two memory limits (one
    held, which one depended on the transport), two host kills (a host dies once), the same fault
    twice (the second met the worker the first had killed, and blamed a cell).

    :param prefix: put before the kind in each sentence (``"@pytest.mark.hermes_"`` for markers).
    """
    problems = []
    for kind, why in (("oom", "a kernel runs under one memory limit"), ("host_sigkill", "a kernel's host dies once")):
        same = [s for s in specs if s.kind == kind]
        if len(same) > 1:
            problems.append(f"{prefix}{kind} is given {len(same)} times ({', '.join(map(_arguments, same))}): {why}. "
                            "Hint: keep one")
    for spec in dict.fromkeys(s for s in specs if s.kind not in ("oom", "host_sigkill")):
        if specs.count(spec) > 1:
            problems.append(f"{prefix}{spec.kind}({_arguments(spec)}) is given {specs.count(spec)} times: the second "
                            "would meet what the first did. Hint: keep one")
    return problems


def _arguments(spec: FaultSpec) -> str:
    """``spec``'s arguments that differ from their defaults, as a marker's keywords."""
    return ", ".join(f"{f.name}={getattr(spec, f.name)!r}" for f in fields(spec)
                     if f.name != "kind" and getattr(spec, f.name) != f.default)


def spec_from_table(table: Mapping[str, Any]) -> FaultSpec:
    """Parse a scenario's ``[[fault]]`` table: ``kind`` plus the keyword arguments of the marker
    of that kind (``kind = "transport_drop"``, ``mode = "reset"``, ``after_cell = 1``).

    :raises ConfigError: if the kind is unknown or an argument is bad (the message names it).
    """
    args = dict(table)
    kind = args.pop("kind", None)
    parse = MARKERS.get(f"hermes_{kind}")
    if parse is None:
        raise ConfigError(f"fault kind must be one of {', '.join(m[len('hermes_'):] for m in MARKERS)}, not {kind!r}")
    try:
        return parse(**args)
    except TypeError as exc:
        raise ConfigError(f"{kind}: {exc}") from None


def marker_help() -> list[str]:
    """``name(signature): summary`` lines for ``config.addinivalue_line("markers", ...)``: the
    signature as written (no quoted annotations), the summary the docstring's first sentence."""
    lines = []
    for name, func in MARKERS.items():
        paragraph = " ".join(_docstring(func).split("\n\n")[0].split())
        lines.append(f"{name}{plain_signature(func)}: {paragraph.split('. ')[0].rstrip('.')}.")
    return lines


def _docstring(func: Callable[..., object]) -> str:
    """``func``'s docstring, read from its source when ``python -OO`` dropped ``__doc__``
    (``pytest --markers`` said only ``.`` for each fault marker)."""
    if func.__doc__:
        return func.__doc__
    import ast
    import inspect
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError):  # no source (a zipped install without it)
        return ""
    node = tree.body[0]
    return (ast.get_docstring(node) or "") if isinstance(node, ast.FunctionDef) else ""


class _Annotation(str):
    """An annotation's source text, shown as written (``int | None``, not ``'int | None'``)."""

    def __repr__(self) -> str:
        return str(self)


def plain_signature(func: Callable[..., object]) -> str:
    """``func``'s parameters as a user writes them: no return annotation, annotations unquoted."""
    import inspect

    sig = inspect.signature(func)
    params = [p.replace(annotation=_Annotation(p.annotation)) if isinstance(p.annotation, str) else p
              for p in sig.parameters.values()]
    return str(sig.replace(parameters=params, return_annotation=inspect.Signature.empty))
