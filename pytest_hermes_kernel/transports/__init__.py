"""Transports: where and how a kernel runs (``local``, ``docker``, ``ssh``, ``filecell``).

:func:`get_transport` returns the process-wide shared instance for a name, so that kernels on
one transport share its resources (the docker transport's container, the ssh connection). Its
first call makes it with that call's options; a later call with other options raises
:class:`~pytest_hermes_kernel.errors.ConfigError` instead of silently getting an instance that
ignores them (:mod:`.shared_options`). User backends register with :func:`register_transport`.

A process that makes a shared transport closes it when it exits normally, without being asked
(a script that calls ``start_kernel("docker")`` and ends leaves no container, run file or key):
the first :func:`get_transport` registers an :mod:`atexit` hook that shuts down the process's
registries (kernels before their transports, whatever order the hooks were registered in) and
then calls :func:`close_shared_transports`, which leaves each shared container (the last member
removes it and the run's files), and then each transport :func:`make_transport` made in this
process that is still referenced (closing is idempotent: an unclosed docker or ssh transport's
container outlived the script). The pytest plugin closes shared ones earlier, at session end. A forked
child never uses or closes its parent's shared transports (their connections, threads and
memberships are the parent's): its first :func:`get_transport` makes its own, and its own hook.

Owns: the name -> factory table, the shared instances, and one module or folder per transport
(:mod:`.local`, :mod:`.docker`, :mod:`.ssh`, :mod:`.filecell`), plus what the stream transports
share (:mod:`.detached`: the detached-runner flow's scripts, config and parsing;
:mod:`.runner_zipapp`: the runner as one file; :mod:`.shared_options`: what each shared
instance was made with).

May import: the kernel core (its port, :mod:`~pytest_hermes_kernel.kernel.contract`),
:mod:`pytest_hermes_kernel.containers`, ``errors`` and ``procs``; never faults, leaks, the
plugin or the contract suite (whoever must sit on a transport's path comes in through a seam,
e.g. the ssh transport's ``connect_via``). docker-py and paramiko are imported only when
their transport is used.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import ConfigError, TransportUnavailableError
from ..kernel.contract import Launched, LaunchSpec, Transport, note_activity, watch_launches
from .shared_options import SharedTransport, check_flags

__all__ = ["Transport", "Launched", "LaunchSpec", "get_transport", "register_transport", "shared_transports",
           "TRANSPORT_NAMES", "close_shared_transports", "close_transport", "forget_closed_transports",
           "watch_closed_transports",
           "live_transports", "make_transport", "registered", "transport_factory", "transport_names"]

TRANSPORT_NAMES = ("local", "docker", "ssh", "filecell")

class _ForkSafeLock:
    """A lock a forked child gets free (fork hook registered at first use): a child forked while a thread held
    it got it held by a thread it does not have, and its first ``get_transport`` waited forever."""

    def __init__(self) -> None:
        self._lock, self._hooked = threading.Lock(), False

    def __enter__(self) -> None:
        if not self._hooked:
            self._hooked = True
            os.register_at_fork(after_in_child=self._free)
        self._lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()

    def _free(self) -> None:
        self._lock = threading.Lock()  # the child's shared transports are its own (_forget_a_parents_transports)


_factories: dict[str, Callable[..., Transport]] = {}
_shared: dict[str, SharedTransport] = {}
_making: dict[str, tuple[tuple[int, int], threading.Event]] = {}  # shared ones being made: by (pid, thread)
_retired: list[Transport] = []  # shared instances register_transport replaced: closed with the shared ones
_made: weakref.WeakSet[Transport] = weakref.WeakSet()  # every transport made here, for the leak probes
_unclosed: weakref.WeakKeyDictionary[Transport, int] = weakref.WeakKeyDictionary()  # each one's maker (a pid)
_closed: weakref.WeakSet[Transport] = weakref.WeakSet()  # closed by close_transport, probed once more
_closed_held: list[Transport] = []  # the same, held until probed while a leak check watches
_watching_closed = False
_lock = _ForkSafeLock()
_exit_hook_pid: int | None = None  # the process whose atexit hook is registered
_shared_pid: int | None = None  # the process the instances in _shared belong to


_LAZY = {
    "LocalTransport": ".local", "DockerTransport": ".docker.transport", "SshTransport": ".ssh.transport",
    "FileCellTransport": ".filecell.transport", "ExecuteBackend": ".filecell.backends",
    "LocalShellBackend": ".filecell.backends", "DockerExecBackend": ".filecell.backends",
}


def __dir__() -> list[str]:
    """The module's names with the lazy transport classes of :data:`_LAZY` (a completion listed none)."""
    return sorted({*globals(), *_LAZY})


def __getattr__(name: str) -> Any:
    """Transport classes, imported on first use (docker and paramiko load only when asked for)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module, __name__), name)


def register_transport(name: str, factory: Callable[..., Transport]) -> None:
    """Make ``name`` usable in ``KernelKey(transport=name)`` and ``--hermes-transport``.

    A shared instance of ``name`` made before (or being made meanwhile) is no longer handed out; it is closed with the
    shared transports (:func:`close_shared_transports`, at exit), not dropped unclosed (its
    containers and connections outlived the process), nor closed now (its kernels may still run).

    :raises ConfigError: if ``name`` is no word of letters, digits, ``_``, ``-`` and ``.`` (``"my,box"``
        was taken, and no ``--hermes-transport`` could name it: the option splits at commas).
    :raises TypeError: if ``factory`` cannot be called (a start said "bad option for the transport").
    """
    if not isinstance(name, str) or not name or not all(c.isalnum() or c in "_-." for c in name):
        raise ConfigError(f"register_transport: a transport name is a word of letters, digits, '_', '-' and '.' "
                          f"(--hermes-transport lists names with commas), not {name!r}")
    if not callable(factory):
        raise TypeError(f"register_transport({name!r}, factory): factory must be a callable **options -> Transport "
                        f"(a Transport subclass will do), got {type(factory).__name__} {factory!r}")
    with _lock:
        _factories[name] = factory
        replaced = _shared.pop(name, None)
        if replaced is not None:
            _retired.append(replaced.transport)


def transport_names() -> tuple[str, ...]:
    """The built-in names and those registered so far with :func:`register_transport`."""
    with _lock:
        return TRANSPORT_NAMES + tuple(n for n in _factories if n not in TRANSPORT_NAMES)


def registered(name: str) -> bool:
    """Whether ``name`` is made by a factory given to :func:`register_transport` (a backend of the
    user's own, or one put over a built-in name), not by a built-in transport."""
    with _lock:
        return name in _factories


def _builtin(name: str) -> Callable[..., Transport]:
    if name == "local":
        from .local import LocalTransport

        return LocalTransport
    if name == "docker":
        from .docker.engines import docker_transport

        return docker_transport
    if name == "ssh":
        from .ssh.targets import ssh_transport

        return ssh_transport
    if name == "filecell":
        from .filecell.transport import FileCellTransport

        return FileCellTransport
    raise _unknown(name)


def _factory(name: object) -> Callable[..., Transport]:
    """The factory registered or built in for ``name`` (called under ``_lock``).

    :raises ConfigError: if ``name`` is not a str naming a known transport.
    """
    if not isinstance(name, str):
        raise _unknown(name)
    return _factories.get(name) or _builtin(name)


def _unknown(name: object) -> ConfigError:
    """The error for a name that is no transport's (called under ``_lock``): the known names, and
    the closest of them when there is one (``'Docker'``, ``' ssh'``, ``'file-cell'``, ``'filecell:'``).
    """
    import difflib

    known = TRANSPORT_NAMES + tuple(n for n in _factories if n not in TRANSPORT_NAMES)
    shown = repr(name) if len(repr(name)) <= 60 else f"{repr(name)[:57]}..."
    listed = f"known: {', '.join(known)}"
    if not isinstance(name, str):
        return ConfigError(f"a transport name is a str, not {type(name).__name__} {shown}; {listed}")
    by_lower = {n.lower(): n for n in known}
    close = difflib.get_close_matches(name.strip().lower(), list(by_lower), n=1, cutoff=0.6)
    hint = f"; did you mean {by_lower[close[0]]!r}?" if close else ""
    return ConfigError(f"unknown transport {shown}{hint} ({listed})")


def transport_factory(name: str) -> Callable[..., Transport]:
    """The factory (a class or callable) behind ``name``; imports that transport's module.

    :raises ConfigError: if ``name`` is unknown.
    """
    with _lock:
        return _factory(name)


def make_transport(name: str, **options: Any) -> Transport:
    """A new, unshared transport for ``name`` (the caller closes it; one still referenced at this
    process's normal exit is closed then, like the shared ones).

    :raises ConfigError: if ``name`` is unknown or an option is not accepted.
    :raises TransportUnavailableError: if it cannot run here.
    """
    with _lock:
        factory = _factory(name)
    transport = _make(name, factory, options)
    with _lock:  # closed at this process's exit if its maker did not: its containers outlived the script
        _unclosed[transport] = os.getpid()
        _close_at_exit_of_this_process()
    return transport


def get_transport(name: str, **options: Any) -> Transport:
    """The shared transport for ``name``: made by the first call, with its ``options``.

    A later call gets the same instance: without options always, with options only when they
    resolve to those it was made with (:mod:`.shared_options`; a default passed explicitly is the
    same option).

    :raises ConfigError: if ``name`` is not a known transport's (a str; the message lists the known
        ones and the closest), an option is not accepted, or
        ``options`` differ from those the shared instance was made with (the message names each
        one with both values, and where the instance was made).
    :raises TransportUnavailableError: if it cannot run here (the message says why).
    """
    mine = None  # made outside the lock: a slow one (a docker engine asked) held every other name's calls
    try:  # (a Ctrl-C as the lock is let go, too: a making left behind held the name's later calls for ever)
        while mine is None:
            with _lock:
                _forget_a_parents_transports()
                factory = _factory(name)
                shared = _shared.get(name)
                if shared is not None:
                    shared.check(name, factory, options)
                    return shared.transport
                making = _making.get(name)
                if making is None or making[0] == (os.getpid(), threading.get_ident()):  # (a handler in the making)
                    mine = _making[name] = ((os.getpid(), threading.get_ident()), threading.Event())
                    continue
            making[1].wait()  # another thread makes it: then it is checked against these options
        transport = _make(name, factory, options)
        with _lock:  # (re-registered meanwhile, or one made by a signal's handler in this making: retired)
            if _factory(name) is factory and name not in _shared:
                _shared[name] = SharedTransport.made(transport, factory, options)
            else:
                _retired.append(transport)
            _close_at_exit_of_this_process()
        return transport
    finally:
        if mine is not None:
            with _lock:
                if _making.get(name) is mine:
                    del _making[name]
            mine[1].set()


def _make(name: str, factory: Callable[..., Transport], options: dict[str, Any]) -> Transport:
    """``factory(**options)``, listed for the leak probes.

    :raises ConfigError: if an option is not accepted.
    :raises TransportUnavailableError: if the transport's package is not installed, or it cannot run here.
    """
    check_flags(name, factory, options)
    try:
        transport = factory(**options)
    except ImportError as exc:
        from ..containers.images import pip_install_extra

        hint = pip_install_extra(name) if name in ("docker", "ssh") else f"install what {factory!r} imports"
        raise TransportUnavailableError(
            f"the {name} transport needs a package that is not installed: {exc}. Hint: {hint}") from None
    except TypeError as exc:
        raise ConfigError(f"bad option for the {name} transport: {exc}") from None
    _made.add(transport)
    return transport


def shared_transports() -> dict[str, SharedTransport]:
    """This process's shared transports by name, each with what it was made with and where."""
    with _lock:
        _forget_a_parents_transports()
        return dict(_shared)


def live_transports() -> list[Transport]:
    """Every transport :func:`get_transport` or :func:`make_transport` made, or that started a
    kernel however it was made, that is not garbage yet, nor closed by :func:`close_transport` before the last :func:`forget_closed_transports`."""
    return list(_made) + [t for t in list(_closed) if t not in _made]


def _probed(transport: Transport, add: bool = False) -> bool:
    """Whether :func:`live_transports` lists ``transport``; ``add``: list it from now on (one
    built directly that starts a kernel: :func:`~..kernel.contract.watch_launches`)."""
    try:
        if add:
            _made.add(transport)
            # closed at exit if never closed, as make_transport's (a DockerTransport()'s container outlived its
            _unclosed.setdefault(transport, os.getpid())  # script); not under _lock: a launch may come from a
            _close_at_exit_of_this_process()  # signal handler landed in it (a hook registered twice closes once)
        return transport in _made or transport in _closed
    except TypeError:  # unhashable (a dataclass's __eq__): nothing lists it; its launch goes on
        return True


def close_transport(transport: Transport) -> None:
    """Close a transport :func:`make_transport` made, and stop listing it in
    :func:`live_transports` after the next leak snapshot (:func:`forget_closed_transports`).

    The snapshot right after the close (the leak check after the test that used it) still probes
    it, for what it left behind; later ones do not: each test's own transport (a marker option,
    a fault's) was probed by every later test while anything referenced it (a kernel handle in
    the run's summary), so a snapshot grew with the run (measured: 7-9 s setups and teardowns
    late in the full matrix).
    """
    note_activity()  # what the close left must be looked at, not read from the last look (a base close() is not counted)
    try:
        transport.close()
    finally:
        _closed_now(transport, listed_or_not=True)


def _closed_now(transport: Transport, listed_or_not: bool = False) -> None:
    """``transport`` was closed: :func:`live_transports` lists it until the next
    :func:`forget_closed_transports` (by its own ``close()``: only one it listed)."""
    try:
        _unclosed.pop(transport, None)  # closed: nothing left for the exit hook to close
        if listed_or_not or transport in _made:
            _closed.add(transport)
            if _watching_closed:
                _closed_held.append(transport)
            _made.discard(transport)
    except TypeError:  # unhashable (a dataclass's __eq__): nothing lists it
        pass


watch_launches(_probed, _closed_now)


def closed_unprobed() -> bool:
    """Whether :func:`close_transport` closed a transport that no leak snapshot has probed since."""
    return bool(_closed)


def forget_closed_transports() -> None:
    """Drop the transports :func:`close_transport` closed from :func:`live_transports` (after a
    leak snapshot probed them once more)."""
    _closed.clear()
    _closed_held.clear()


def watch_closed_transports() -> None:
    """From now on :func:`close_transport` holds each transport it closes until the next
    :func:`forget_closed_transports`, so the leak snapshot after the test that closed it still
    probes it when nothing else refers to it any more (it was garbage by then, and what it left
    on its host went unseen). Only a process whose leak check probes transports holds them."""
    global _watching_closed
    _watching_closed = True


def _forget_a_parents_transports() -> None:
    """In a forked child, drop the shared transports it inherited (called under ``_lock``): they
    are its parent's to use and close. A child that used them waited on its parent's kernel
    servers and ssh connection, whose threads did not survive the fork (docker: 16 s, then a
    spawn; ssh: failed after 25 s)."""
    global _shared_pid
    if _shared_pid != os.getpid():
        _shared.clear()
        _retired.clear()
        _making.clear()  # (a parent's thread that made one is not here to say it is made)
        _shared_pid = os.getpid()


def _close_at_exit_of_this_process() -> None:
    """Register :func:`_close_at_exit` once per process, a forked child included (called under
    ``_lock``): a child whose parent had registered it first inherited the hook but not the
    right to run it, and exited a member of the containers its own transports had joined."""
    global _exit_hook_pid
    if _exit_hook_pid != os.getpid():
        _exit_hook_pid = os.getpid()
        atexit.register(_close_at_exit, _exit_hook_pid)
        multiprocessing = sys.modules.get("multiprocessing")  # imported by whoever started this process, if anyone
        if multiprocessing is not None and multiprocessing.parent_process() is not None:
            # a multiprocessing child (fork, forkserver) ends by os._exit(): no atexit hook runs there,
            # only multiprocessing's own finalizers (a twice-run hook closes nothing the second time)
            from multiprocessing.util import Finalize

            Finalize(None, _close_at_exit, args=(_exit_hook_pid,), exitpriority=0)


def _close_at_exit(pid: int) -> None:
    """At interpreter exit of process ``pid``: shut down its registries' kernels, then close its
    shared transports.

    A forked child inherits its parent's hook but not the memberships: that hook closes nothing
    there (the parent's registries and transports are the parent's to close).
    """
    if os.getpid() != pid:
        return
    from ..kernel.registry import live_registries

    for registry in [r for r in live_registries() if r.host_pid == pid]:
        try:
            registry.close()
        except Exception:  # noqa: BLE001 - closing is best effort at exit; the transports still close
            pass
    # then make_transport's (or one built directly and launched on) never closed: their containers outlived a script
    close_shared_transports(also=[t for t, maker in list(_unclosed.items()) if maker == pid])


def close_shared_transports(keep: Sequence[Transport] = (), also: Sequence[Transport] = ()) -> None:
    """Close every shared transport (containers, connections), those :func:`register_transport`
    replaced too, each to its end however many Ctrl-C or SIGTERM come meanwhile
    (:func:`~.kernel.control.despite_signals`; the signal goes on once all are closed): one that
    landed while the run's first container was removed left every later transport unclosed,
    forgotten here and so by the exit hook too (an sshd container and its key outlived a run
    interrupted as its docker container went, 3 runs in 6). Those in ``keep`` stay (an outer run's,
    at the end of a pytest run inside it: pytester's in-process ``runpytest``); those in ``also`` close after them."""
    from ..kernel.control import despite_signals

    with _lock:
        _forget_a_parents_transports()
        making = [event for who, event in _making.values() if who != (os.getpid(), threading.get_ident())]
    for event in making:  # one made meanwhile is closed with the others (as when it was made under the lock)
        event.wait()
    with _lock:
        ended = [name for name, shared in _shared.items() if not any(shared.transport is t for t in keep)]
        transports = [_shared.pop(name).transport for name in ended]
        transports += [t for t in _retired if not any(t is k for k in keep)]
        _retired[:] = [t for t in _retired if any(t is k for k in keep)]
    transports += [t for t in also if not any(t is s for s in transports)]

    def close_each() -> None:
        for transport in transports:
            try:
                transport.close()
            except Exception:  # noqa: BLE001 - closing is best effort at exit
                pass

    despite_signals(close_each)
