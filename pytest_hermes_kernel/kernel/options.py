"""KernelOptions: how a kernel is started and run; every default lives here, once.

Durations are float seconds (``None``: no limit), sizes int bytes, counts ints. Other modules
take these values from a :class:`KernelOptions`; they do not keep defaults of their own. A
transport option of the same name set to ``None`` (``DockerTransport(orphan_timeout=None)``)
means "keep the kernel option"; that is every transport's default except filecell's
``orphan_timeout``, which is :data:`IDLE_ORPHAN_TIMEOUT_S` from here.

The registry's own settings (``max_kernels``, ``idle_timeout``) are not per kernel; their
defaults are the documented constants of :mod:`.registry`. The checks of a value live here
too, for every part that takes one: :func:`is_seconds` (bounded by :data:`MAX_SECONDS`),
:func:`check_registry_settings`, and :func:`check_options` for the transports' constructors.
"""

from __future__ import annotations

import difflib
import math
import os
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, TypeVar

from ..errors import ConfigError

__all__ = ["DEFAULT_MAX_OUTPUT_BYTES", "DEFAULT_MAX_TOOL_CALLS", "IDLE_ORPHAN_TIMEOUT_S", "KernelOptions",
           "MAX_SECONDS", "WatchdogPolicy", "built", "check_keep_ttl", "check_options", "check_registry_settings",
           "checked_options"]

_T = TypeVar("_T")

DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024
"""Bytes per stream per cell (DESIGN.md section 4)."""

MAX_OUTPUT_CAP_BYTES = 8 * 1024 * 1024
"""The largest ``max_output_bytes``: a cell's result (two streams, its value, its error text)
must fit in one 64 MiB frame."""

DEFAULT_MAX_TOOL_CALLS = 50
"""Tool calls per cell (the seed system's ``max_tool_calls``)."""

DEFAULT_MAX_TRANSFER_BYTES = 256 * 2**20
"""Bytes of file content one ``upload`` / ``download`` may move (issue #12 point 6)."""

MAX_SECONDS = 1e9
"""The longest duration any setting takes (about 31 years): no lock, event or ``select`` waits
longer than ``threading.TIMEOUT_MAX`` (about 9.2e9 s; ``start_timeout=1e10`` raised a bare
``OverflowError`` from the channel's wait), and a deadline may add a few durations together."""

IDLE_ORPHAN_TIMEOUT_S = 1800.0
"""The orphan timer, in seconds, of transports that attach to a runner only while a cell runs
(``filecell``): there no host is attached between cells, so the timer is the kernel's idle
lifetime, and the seed system's idle exit was 1800 s. Such a transport uses this value by
default instead of :attr:`KernelOptions.orphan_timeout` (60 s would end an idle agent's kernel
within a minute); its ``orphan_timeout=None`` keeps the kernel option instead. It also keeps
filecell out of host-death tests, whose bound is ``orphan_timeout + 3 s`` (60 s at most)."""


@dataclass(frozen=True)
class WatchdogPolicy:
    """Grace periods of the timeout ladder (see :mod:`.watchdog`).

    :param interrupt_grace: seconds a cell over its budget gets to end after SIGINT (state kept).
    :param kill_grace: seconds after the worker's SIGKILL for the kill to be seen.
    :param restart: start a fresh worker after a kill (``False``: the cell ends ``reset_failed``).

    Handed case B04: timeout + both graces <= 8 s, hence 2 s each.
    """

    interrupt_grace: float = 2.0
    kill_grace: float = 2.0
    restart: bool = True

    def __post_init__(self) -> None:
        """:raises ConfigError: if a grace is not seconds >= 0 or ``restart`` not a bool (a NaN grace
        hung a runaway cell's ``execute()``; ``"2"`` was a ``TypeError`` at the first timeout)."""
        for name in ("interrupt_grace", "kill_grace"):
            if not is_seconds(getattr(self, name), positive=False):
                raise ConfigError(f"watchdog {name} must be a finite number of seconds >= 0{_AT_MOST}, "
                                  f"got {getattr(self, name)!r}")
        if not isinstance(self.restart, bool):  # "no" would be true
            raise ConfigError(f"watchdog restart must be True or False, got {self.restart!r}")


@dataclass
class KernelOptions:
    """How a kernel is started and run. Durations in seconds, sizes in bytes.

    :param timeout: default per-cell budget in seconds; ``None`` is no limit.
    :param start_timeout: seconds the runner may take to say hello (and a fresh worker to start).
    :param max_output_bytes: cap per stream per cell in bytes, 1024..8 MiB (head 40 % + tail 60 %
        kept); the cell's value, error message and traceback are capped at as many characters.
    :param auto_restart: run the next cell on a fresh worker after a death (reported as
        ``state_lost``); when false, the next cell raises :class:`KernelDiedError` instead.
    :param cwd: working directory of cells, where the kernel runs; ``None``: the kernel's own
        kernel dir (a fresh 0700 directory the transport makes and removes).
    :param python: interpreter that runs the kernel; ``None``: the transport's ``python``
        option (local: the host's ``sys.executable``; docker, ssh, filecell: ``python3``).
    :param env: extra environment variables for the kernel (str -> str).
    :param env_allow: host variable names passed through even if they look secret.
    :param inherit_env: pass all non-secret host variables (default); else only the safe list.
    :param watchdog: the timeout ladder's grace periods (:class:`WatchdogPolicy`, or a dict of
        its fields from TOML or a marker).
    :param max_tool_calls: tool calls one cell may make; more are refused (count, >= 0).
    :param keepalive_interval: seconds; on re-attachable transports a silent channel is pinged
        after this long without any frame.
    :param keepalive_missed: unanswered pings (count, >= 1) after which a silent channel is declared
        lost: a dead peer is seen within ``keepalive_interval * (keepalive_missed + 1)`` s.
    :param reconnect_timeout: seconds a broken channel may take to re-attach before the loss
        is reported (``transport_lost``).
    :param orphan_timeout: seconds a detached runner (docker, ssh) lives with no host attached
        before it kills its worker and exits: how long a kernel outlives a dead host. A
        transport's own ``orphan_timeout`` replaces it when set; filecell sets
        :data:`IDLE_ORPHAN_TIMEOUT_S` by default (its timer is an idle timer). Local kernels end
        with their host at once (parent-death pipe).
    :param shutdown_grace: seconds each step of request -> SIGTERM -> SIGKILL waits.
    :param exit_grace: seconds a cell that raised SystemExit gets for the worker to really exit
        before it is killed.
    :param oom_counter_file: path, where the kernel runs, of a memory cgroup's ``memory.events``
        (v1: ``memory.oom_control``) whose ``oom_kill`` counter tells an OOM kill from a plain
        SIGKILL; ``None``: the one beside ``cgroup_procs``, else none. One without an ``oom_kill``
        count fails the start (:class:`KernelStartError`).
    :param cgroup_procs: path, where the kernel runs, of a cgroup's ``cgroup.procs`` the worker
        joins (a memory limit for local kernels); ``None``: none.
    :param max_transfer_bytes: bytes one ``upload`` / ``download`` may move (file contents), > 0.
    :param report_running: ask the runner to say when each cell has started in the worker (a
        ``running`` frame, the kernel's ``running`` event); ``during_cell`` faults time
        themselves from it. Off by default: it costs a frame per cell (and an execute per cell
        on ``filecell``).
    """

    timeout: float | None = None
    start_timeout: float = 30.0
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    auto_restart: bool = True
    cwd: str | None = None
    python: str | None = None
    env: dict[str, str] = field(default_factory=dict, repr=False)  # values may be secrets (B43)
    env_allow: tuple[str, ...] = ()
    inherit_env: bool = True
    watchdog: WatchdogPolicy = field(default_factory=WatchdogPolicy)
    max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS
    keepalive_interval: float = 3.0
    keepalive_missed: int = 3
    reconnect_timeout: float = 10.0
    orphan_timeout: float = 60.0
    shutdown_grace: float = 2.0
    exit_grace: float = 2.0
    oom_counter_file: str | None = None
    cgroup_procs: str | None = None
    max_transfer_bytes: int = DEFAULT_MAX_TRANSFER_BYTES
    report_running: bool = False

    def __post_init__(self) -> None:
        """Check every field.

        :raises ConfigError: if a field is out of range or of the wrong type; the message names it.
        """
        if isinstance(self.watchdog, Mapping):  # from TOML scenarios and marker kwargs
            self.watchdog = built(WatchdogPolicy, self.watchdog)
        if not isinstance(self.watchdog, WatchdogPolicy):  # "x" failed at the first timeout (AttributeError)
            raise ConfigError(f"watchdog must be a WatchdogPolicy(...) or a dict of its fields, got {self.watchdog!r}")
        if isinstance(self.env_allow, str):
            raise ConfigError(f"env_allow must be a list of variable names (a str is no list: "
                              f"env_allow=[{self.env_allow!r}]), got {self.env_allow!r}")
        try:  # None or 5 raised a bare TypeError; a generator was read up by the check and kept none
            names = tuple(self.env_allow)
        except TypeError:
            raise ConfigError(f"env_allow must be a list of variable names, got {self.env_allow!r}") from None
        not_names = [n for n in names if not isinstance(n, str)]
        if not_names:
            raise ConfigError(f"env_allow must be a list of variable names, each name a string, not "
                              f"{not_names[0]!r}; got {self.env_allow!r}")
        self.env_allow = names
        if not isinstance(self.max_output_bytes, int) or not 1024 <= self.max_output_bytes <= MAX_OUTPUT_CAP_BYTES:
            raise ConfigError(f"max_output_bytes must be an int in 1024..{MAX_OUTPUT_CAP_BYTES}, got {self.max_output_bytes!r}")
        if self.timeout is not None and not is_seconds(self.timeout, positive=True):
            raise ConfigError(f"timeout must be a finite number of seconds > 0{_AT_MOST} or None, got {self.timeout!r}")
        if not is_seconds(self.start_timeout, positive=True):  # 0: no runner could ever say hello in time
            raise ConfigError(f"start_timeout must be a finite number of seconds > 0{_AT_MOST}, got {self.start_timeout!r}")
        for name in ("keepalive_interval", "reconnect_timeout", "orphan_timeout", "shutdown_grace", "exit_grace"):
            value = getattr(self, name)
            if not is_seconds(value, positive=False):
                raise ConfigError(f"{name} must be a finite number of seconds >= 0{_AT_MOST}, got {value!r}")
        if not isinstance(self.max_transfer_bytes, int) or isinstance(self.max_transfer_bytes, bool) \
                or self.max_transfer_bytes <= 0:
            raise ConfigError(f"max_transfer_bytes must be an int > 0, got {self.max_transfer_bytes!r}")
        for name, least in (("max_tool_calls", 0), ("keepalive_missed", 1)):  # 0 missed: lost without a ping
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise ConfigError(f"{name} must be an int >= {least}, got {value!r}")
        check_env(self.env)
        for name in ("cwd", "python", "oom_counter_file", "cgroup_procs"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or "\0" in value or not value):  # "": as if not given
                raise ConfigError(f"{name} must be a non-empty path string (no NUL) or None, got {value!r}")
        for name in ("auto_restart", "inherit_env", "report_running"):  # "no" would be true
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name} must be True or False, got {getattr(self, name)!r}")


def built(cls: type[_T], values: Mapping[str, Any]) -> _T:
    """``cls(**values)`` for a dataclass of options (:class:`KernelOptions`, :class:`WatchdogPolicy`),
    a name it does not have refused with the closest one (a dict's typo was a bare ``TypeError``).

    :raises ConfigError: for an unknown name, or a value its checks refuse.
    """
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    for name in values:
        if name not in names:
            close = difflib.get_close_matches(str(name), names, n=1)
            raise ConfigError(f"unknown field {name!r} of {cls.__name__}{f'; did you mean {close[0]!r}?' if close else ''} "
                              f"(known: {', '.join(names)})")
    return cls(**values)


_AT_MOST = f" (at most {MAX_SECONDS:g})"


def is_seconds(value: object, *, positive: bool) -> bool:
    """Whether ``value`` is a finite number of seconds, ``> 0`` (``positive``) or ``>= 0``, and at
    most :data:`MAX_SECONDS`. A bool is none (``True`` would be 1 s)."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            and (value > 0 if positive else value >= 0) and value <= MAX_SECONDS)


def check_env(env: Mapping[str, str]) -> None:
    """Refuse what no OS environment can hold; every other name and value passes as it is.

    A kernel's environment is applied to the kernel only (it travels in the runner's config,
    never in a command line), so names a shell would choke on (``A;B``, ``$(id)``, spaces,
    non-ASCII, an undecodable byte as ``os.environ`` holds it) are fine; only an empty name, a
    name with ``=`` or NUL, a value with NUL, and a lone surrogate outside U+DC80..U+DCFF (it
    stands for no byte) cannot be put into an environment at all.

    :param env: the ``env`` option (variable name -> value).
    :raises ConfigError: if a name or value is not a str or cannot be held; it names the variable.
    """
    if not isinstance(env, Mapping):
        raise ConfigError(f"env must be a dict of variable name -> value, got a {type(env).__name__}")
    for name, value in env.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise ConfigError(f"env names and values must be str, got {name!r}: a {type(value).__name__}")
        if not name or "=" in name or "\0" in name:
            raise ConfigError(f"env variable {name!r}: a name must be non-empty and hold no '=' or NUL")
        if "\0" in value:
            raise ConfigError(f"env variable {name!r}: its value holds a NUL character")
        for text in (name, value):
            try:
                text.encode("utf-8", "surrogateescape")  # U+DC80..U+DCFF: an undecodable byte, as os.environ has it
            except UnicodeEncodeError as exc:
                raise ConfigError(f"env variable {name!r}: {text[exc.start]!r} is a lone surrogate that stands for no "
                                  "byte; no environment can hold it") from None


def check_registry_settings(max_kernels: object, idle_timeout: object, reap_interval: object = None,
                            stale_dir_age: object = 0.0, transport_factory: object = callable,
                            clock: object = callable, transport: object = "local") -> None:
    """Check the settings of a :class:`~.registry.KernelRegistry`.

    :raises ConfigError: if ``max_kernels`` is not an int >= 1, ``idle_timeout`` not seconds >= 0 /
        None, ``reap_interval`` not seconds > 0 / None (``-1`` and ``nan`` made the idle reaper wake
        without a pause: a core's worth of CPU), ``stale_dir_age`` not seconds >= 0, or ``transport`` not a
        non-empty str (``None`` was taken, and the first cell raised "a transport name is a str").
    :raises TypeError: if ``transport_factory`` or ``clock`` cannot be called (a transport's name or
        instance was taken, and the first cell raised ``'str' object is not callable``).
    """
    if not isinstance(max_kernels, int) or isinstance(max_kernels, bool) or max_kernels < 1:
        raise ConfigError(f"max_kernels must be an int >= 1, got {max_kernels!r}")
    if idle_timeout is not None and not is_seconds(idle_timeout, positive=False):  # True was 1 s, inf no reap
        raise ConfigError(f"idle_timeout must be a finite number of seconds >= 0 or None, got {idle_timeout!r}")
    if reap_interval is not None and reap_interval != 0 and not is_seconds(reap_interval, positive=True):
        raise ConfigError(f"reap_interval must be a finite number of seconds > 0{_AT_MOST} or None, got {reap_interval!r}")
    if not is_seconds(stale_dir_age, positive=False):
        raise ConfigError(f"stale_dir_age must be a finite number of seconds >= 0{_AT_MOST}, got {stale_dir_age!r}")
    if not isinstance(transport, str) or not transport:
        raise ConfigError(f"transport must be a transport's name (a non-empty str, such as 'local'), got {transport!r}")
    if not callable(transport_factory):
        hint = (f"; a transport's name goes in KernelRegistry(transport={transport_factory!r}) or "
                f"KernelKey(transport={transport_factory!r})" if isinstance(transport_factory, str) else
                "; to run every key on one transport: transport_factory=lambda key: transport"
                if hasattr(transport_factory, "launch") else "")
        raise TypeError(f"transport_factory must be a callable key -> Transport, got "
                        f"{type(transport_factory).__name__} {transport_factory!r}{hint}")
    if not callable(clock):
        raise TypeError(f"clock must be a callable giving monotonic seconds (time.monotonic), got {clock!r}")


def check_keep_ttl(orphan_timeout: object, transport: object = None) -> None:
    """Check the TTL of :meth:`~.handle.KernelHandle.keep`: a finite number of seconds > 0, with no
    bound of :data:`MAX_SECONDS` (the runner holds any: ``1e300`` keeps a kernel until it is swept),
    and that ``transport`` (when given) can keep a kernel.

    :raises ConfigError: if it is none (``nan``, ``0`` or a negative one ended the kept kernel at once,
        ``"60"`` kept it and then raised a bare ``ValueError``), or the transport is not ``keepable``
        (filecell kept a runner no one could reach again, for the whole TTL).
    """
    if transport is not None and not getattr(transport, "keepable", False):
        raise ConfigError(f"keep(): the {getattr(transport, 'name', transport)} transport cannot keep a kernel for "
                          "post-mortem (nothing could reach it again); nothing was done, the kernel is still this "
                          "handle's. Hint: keep kernels on local, docker or ssh")
    if not (isinstance(orphan_timeout, (int, float)) and not isinstance(orphan_timeout, bool)
            and math.isfinite(orphan_timeout) and orphan_timeout > 0):
        raise ConfigError(f"keep(): orphan_timeout must be a finite number of seconds > 0, got {orphan_timeout!r}; "
                          "nothing was done, the kernel is still this handle's")


def checked_options(options: object) -> KernelOptions:
    """``options`` as given, or the defaults for ``None``.

    :raises TypeError: if it is no :class:`KernelOptions` (a dict of its fields, say), showing the right form.
    """
    if options is None:
        return KernelOptions()
    if not isinstance(options, KernelOptions):
        raise TypeError(f"options must be a KernelOptions, e.g. KernelOptions(timeout=5.0) (start_kernel takes "
                        f"its fields as keywords); got {type(options).__name__} {options!r}")
    return options


def cwd_resolved(options: KernelOptions, here: bool) -> KernelOptions:
    """``options`` with a relative ``cwd`` made absolute against the caller's working directory now
    (as ``subprocess`` reads it), for a kernel that runs on this machine (``here``): every launch
    of the kernel, and its file transfers, then mean the same directory. A kernel elsewhere keeps
    it as given (its launch refuses it: :func:`~pytest_hermes_kernel.kernel.runtime.kernel_cwd`)."""
    if not here or not options.cwd or os.path.isabs(options.cwd):
        return options
    return replace(options, cwd=os.path.abspath(options.cwd))


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _amount(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def _command(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip()) and "\0" not in value


#: Each kind: the test a value passes, and what the message says it must be.
_KINDS: dict[str, tuple[Callable[[object], bool], str]] = {
    "seconds": (lambda v: is_seconds(v, positive=False), f"a finite number of seconds >= 0 (at most {MAX_SECONDS:g})"),
    "positive_seconds": (lambda v: is_seconds(v, positive=True),
                         f"a finite number of seconds > 0 (at most {MAX_SECONDS:g})"),
    "counts": (_count, "an int >= 1"),
    "amounts": (_amount, "a finite number > 0"),
    "commands": (_command, "a non-empty interpreter path or command (no NUL)"),
}


def check_options(owner: str, *, optional: Collection[str] = (), **kinds: Mapping[str, object]) -> None:
    """Check the options of ``owner`` (a transport's constructor's: ``connect_timeout=nan``,
    ``mem_limit_bytes=1.5``, ``python=""`` were taken and failed later, or never) by their kind: ``seconds``, ``positive_seconds``, ``counts`` (an int >= 1:
    sizes in bytes too), ``amounts`` (a finite number > 0, such as ``cpus``), ``commands`` (an
    interpreter), each a mapping of option name to value.

    :param owner: what the message names first (``"ssh transport"``).
    :param optional: the options that take ``None`` too (the default, or off).
    :raises ConfigError: naming the first option whose value is not of its kind.
    """
    for kind, values in kinds.items():
        test, what = _KINDS[kind]
        for name, value in values.items():
            if value is None and name in optional:
                continue
            if not test(value):
                none = " or None" if name in optional else ""
                raise ConfigError(f"{owner}: {name} must be {what}{none}, got {value!r}")
