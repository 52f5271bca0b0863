"""Kernels kept for post-mortem, from a later process: ``hermes-kernel ls``, ``attach``, ``exec``, ``sweep --kept``.

A kept kernel (``--hermes-keep-failed``, :mod:`pytest_hermes_kernel.plugin.keep`) runs on after pytest exited,
listening where its record (:mod:`~pytest_hermes_kernel.containers.kept`) says. Each command here reads the record,
makes a transport of the record's name and re-attaches to the runner through it
(:meth:`~pytest_hermes_kernel.kernel.contract.Transport.attach_kept` and
:func:`~pytest_hermes_kernel.kernel.handle.attach_kept`: the ``attach`` frame with the kernel's token, as after a
dropped stream). Leaving keeps the kernel (its TTL starts again: the runner's orphan timer); ``sweep --kept`` ends
it through the same channel (request -> SIGTERM -> SIGKILL) and then removes the containers (docker) that no kept
kernel is left in. Cells run with no budget and ``auto_restart`` off: a command never starts a kernel of its own.
"""

from __future__ import annotations

import argparse
import io
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import IO, Any

from .containers.kept import (KeptKernel, find, in_use, in_use_by, load_all, remove, save, skipped_note,
                              time_left_words)
from .containers.rundir import kept_dir
from .errors import (ConfigError, FrameTooLargeError, HermesKernelError, KernelDiedError, KernelInUseError,
                     TransportLostError, TransportUnavailableError, UnsafeRunDirError)
from .kernel.contract import Transport
from .kernel.handle import KernelHandle, attach_kept
from .kernel.options import KernelOptions
from .kernel.results import CellResult
from .transports import make_transport

__all__ = ["POSTMORTEM_COMMANDS", "add_postmortem_commands", "attach_console", "exec_cell", "list_kept",
           "run_postmortem_command", "sweep_kept", "sweep_kept_command"]

POSTMORTEM_COMMANDS = ("ls", "attach", "exec")
CELL_OPTIONS = KernelOptions(timeout=None, auto_restart=False)  # how a command runs cells: no budget (a person
ALIVE_WORDS = {True: "yes", False: "no", None: "?"}  # waits), no kernel of its own; what `ls` says of alive()
UNREACHABLE = 2  # exit status when the kept kernel cannot be reached (gone, expired, unknown id)
INTERRUPTED = 128 + signal.SIGINT  # exit status of ``attach`` left by Ctrl-C at its prompt (the shell's convention)


@contextmanager
def attached(record: KeptKernel) -> Iterator[KernelHandle]:
    """A handle on the kept kernel of ``record``, held by this command alone (:func:`in_use`); on leaving, it stays kept (TTL restarted).

    :raises KernelInUseError: if another command holds it (it is left alone).
    :raises TransportLostError: if the kernel cannot be reached.
    """
    with in_use(record.kernel_id):
        yield from _attached_through(transport_for(record), record)


def _attached_through(transport: Transport, record: KeptKernel) -> Iterator[KernelHandle]:
    """The body of :func:`attached` once the kernel is held: attach, yield, keep it on leaving."""
    try:
        handle = attach_kept(transport, record.locator, kernel_id=record.kernel_id, token=record.token,
                             options=CELL_OPTIONS, env_secrets=record.secrets)
        try:
            yield handle
        finally:
            if handle.alive:
                handle.keep(record.ttl_s)
                save(record.detached_now())
            elif (link := handle._runtime.link) is not None:  # its worker had ended: left kept as it is, the
                link.detach()  # connection closed (it was left open: an unclosed socket at the command's exit)
    finally:
        transport.close()


def transport_for(record: KeptKernel) -> Transport:
    """A new transport to reach the kept kernel of ``record`` with: made with the options its locator's ``reach``
    names (an ssh kernel's host and key), else the transport's defaults.

    :raises ConfigError: if the record names an unknown transport or option.
    :raises TransportUnavailableError: if that transport cannot run here.
    """
    return make_transport(record.transport, **(r if isinstance(r := record.locator.get("reach"), dict) else {}))


def print_result(r: CellResult, out: IO[str], err: IO[str]) -> None:
    """Print a cell's result as the API returns it: stdout, stderr, the value, the error."""
    out.write(r.stdout)
    err.write(r.stderr)
    if r.value is not None:  # a repr (user code) may hold a lone surrogate: strict sys.stdout raised for it
        out.write(r.value.encode("utf-8", "backslashreplace").decode("utf-8") + "\n")
    if r.status == "error":
        err.write((r.traceback or f"{r.ename}: {r.evalue}").rstrip("\n") + "\n")
    elif r.status != "ok":
        err.write(f"[{r.summary()}]\n")
    out.flush()
    err.flush()


#: Signals that interrupt the running cell of ``exec``/``attach``; SIGTERM and SIGHUP (a CI step's timeout, a closed
#: terminal) then end the command once its result is printed (ended at once, it left its cell running in the kernel).
INTERRUPTING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
ESCALATE_S = 5.0  # seconds a SIGTERM's or SIGHUP's interrupt may go unheeded before the timeout ladder ends the cell


def _run_cell(handle: KernelHandle, code: str, out: IO[str], err: IO[str]) -> bool:
    """Run one cell (Ctrl-C interrupts it, the namespace kept; Ctrl-C again, or a SIGTERM or SIGHUP unheeded for
    :data:`ESCALATE_S`, starts the timeout ladder, which kills a cell that ignores interrupts); True when it ended
    ``ok``. (A cell that swallowed ``KeyboardInterrupt`` held the command for good: each signal was one more interrupt.)

    :raises SystemExit: ``128 + N`` after the cell, if signal ``N`` (SIGTERM, SIGHUP) interrupted it.
    """
    ending: list[int] = []
    heard, ladder = [], threading.Timer(ESCALATE_S, handle.cancel)

    def interrupt(signum: int, _frame: object) -> None:
        heard.append(signum)
        ending.extend([signum] if signum != signal.SIGINT else [])
        if len(heard) > 1:
            return handle.cancel()
        handle.interrupt()
        if ending:
            ladder.start()

    previous = {sig: signal.signal(sig, interrupt) for sig in INTERRUPTING}
    try:
        r = handle.execute(code)
    except (ConfigError, FrameTooLargeError) as exc:  # a source with no UTF-8 form, or over the frame limit:
        err.write(f"hermes-kernel: {exc}\n")  # the cell failed; it was exit status 2 (unreachable), or a traceback
        return False
    except KernelDiedError as exc:  # the CLI never starts a worker of its own (auto_restart=False)
        why = (exc.info.note if exc.info is not None and exc.info.note else str(exc))
        err.write(f"[kernel {handle.kernel_id}: {why}; its state is gone and nothing was run (this command starts "
                  f"no new worker): end it with `hermes-kernel sweep --kept --kernel {handle.kernel_id}`]\n")
        return False
    finally:
        ladder.cancel()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print_result(r, out, err)
    if ending:
        raise SystemExit(128 + ending[0])
    return r.ok


def exec_cell(kernel_id: str, code: str, out: IO[str] | None = None, err: IO[str] | None = None) -> int:
    """``hermes-kernel exec ID CODE``: run one cell; 0 when it ended ``ok``, 1 otherwise, 2 unreachable.

    ``out``/``err``: where to write (``None``: ``sys.stdout``/``sys.stderr`` at the time of the call).
    """
    # a stream closed at the start (``>&-``: sys.stdout is None, an AttributeError traceback) is a sink
    out, err = out or sys.stdout or io.StringIO(), err or sys.stderr or io.StringIO()
    return _with_kernel(kernel_id, err, lambda handle: 0 if _run_cell(handle, code, out, err) else 1)


def attach_console(kernel_id: str, stdin: IO[str] | None = None, out: IO[str] | None = None,
                   err: IO[str] | None = None) -> int:
    """``hermes-kernel attach ID``: each line of ``stdin`` is a cell, until EOF (Ctrl-D) or Ctrl-C
    at the prompt (the kernel stays kept either way; Ctrl-C in a cell interrupts that cell).

    ``stdin``/``out``/``err``: ``None`` is the ``sys`` stream at the time of the call.

    :returns: 0 when every cell ended ``ok``, 1 otherwise, 2 when the kernel cannot be reached,
        :data:`INTERRUPTED` after Ctrl-C at the prompt.
    """
    # a stream closed at the start (``<&-``: sys.stdin is None, a traceback) is empty: the console leaves at once
    stdin, out, err = stdin or sys.stdin or io.StringIO(), out or sys.stdout or io.StringIO(), \
        err or sys.stderr or io.StringIO()
    def console(handle: KernelHandle) -> int:
        tty, ending = stdin.isatty(), [signal.SIGINT]
        if tty:
            err.write(f"kernel {handle.kernel_id} ({handle.transport.name}): each line is a cell; "
                      "Ctrl-C interrupts it, Ctrl-D leaves the kernel kept\n")

        def leave(signum: int, _frame: object) -> None:  # SIGTERM, SIGHUP at the prompt: as Ctrl-C there (they
            ending[0] = signum  # killed it, and its record kept the attach's time: ls called the kernel expired)
            raise KeyboardInterrupt

        previous = {sig: signal.signal(sig, leave) for sig in INTERRUPTING[1:]}  # a cell's run sets its own
        try:
            return _prompt_loop(handle, stdin, out, err, tty)
        except KeyboardInterrupt:  # at the prompt (a cell's Ctrl-C interrupts the cell): a traceback said nothing
            how = "interrupted" if ending[0] == signal.SIGINT else f"ended by {signal.Signals(ending[0]).name}"
            with suppress(OSError):  # a terminal that hung up
                err.write(("\n" if tty else "") + f"hermes-kernel: {how} at the prompt; kernel {handle.kernel_id} "
                          "stays kept\n")
            return 128 + ending[0]
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    return _with_kernel(kernel_id, err, console)


def _prompt_loop(handle: KernelHandle, stdin: IO[str], out: IO[str], err: IO[str], tty: bool) -> int:
    """Run each line of ``stdin`` as a cell until EOF; 0 when every cell ended ``ok``, else 1."""
    failed = False
    while True:
        if tty:
            err.write(">>> ")
            err.flush()
        line = stdin.readline()
        if not line:
            return 1 if failed else 0
        if line.strip():
            failed = not _run_cell(handle, line.rstrip("\n"), out, err) or failed


def _with_kernel(kernel_id: str, err: IO[str], body: Callable[[KernelHandle], int]) -> int:
    try:
        record = find(kernel_id)
        with attached(record) as handle:
            return body(handle)
    except (ConfigError, KernelInUseError, TransportUnavailableError) as exc:  # its engine down
        err.write(f"hermes-kernel: {exc}\n")
    except TransportLostError as exc:  # from attached(): the record was found
        err.write(f"hermes-kernel: {record.gone_words() if record.expired() else ''}{exc}\nHint: `hermes-kernel ls` "
                  "says whether it is alive; `hermes-kernel sweep kept` removes the records of those gone\n")
    return UNREACHABLE


def alive(record: KeptKernel) -> bool | None:
    """Whether a process of the kept kernel still runs where it runs (through its transport);
    ``None`` when that place cannot be asked (its host or engine is down, its key file gone)."""
    try:
        transport = transport_for(record)
    except HermesKernelError:
        return None
    try:
        return bool(transport.kernel_processes(record.kernel_id, record.locator))
    except (HermesKernelError, OSError):
        return None
    finally:
        transport.close()


def _where(record: KeptKernel) -> str:
    """Where the kept kernel runs: its container, else its ssh host, else its runner's pid."""
    loc = record.locator
    if loc.get("container_id"):
        return f"container id {str(loc['container_id'])[:12]}"
    if loc.get("target"):
        return f"host {loc['target']}"
    return f"runner pid {loc['runner_pid']}" if loc.get("runner_pid") else "?"


def list_kept(out: IO[str] | None = None, *, ids_only: bool = False, test: str | None = None) -> int:
    """``hermes-kernel ls``: one line per kept kernel (id, transport, where, age, expires, alive,
    the test that kept it), oldest first.

    When none is listed it says so in a sentence instead (where it looked, and how a kernel is
    kept); the exit status stays 0: an empty list is an answer, not a failure.

    :param out: where to write (``None``: ``sys.stdout`` at the time of the call).
    :param ids_only: only the ids, one a line, no header (``ls --ids``: for a script; nothing at
        all when none is listed).
    :param test: only kernels kept by this test (``ls --test``): a node id, or a prefix of one
        that ends where pytest's do (``test_x.py`` or ``test_x.py::test_load`` takes
        ``test_x.py::test_load[local]``, never ``test_x.py::test_load_many``).
    """
    out = sys.stdout if out is None else out
    now = time.time()
    skipped: list[str] = []
    every = load_all(skipped=skipped)
    if skipped:  # on stderr: ``ls --ids`` output stays ids alone
        print(f"hermes-kernel ls: {skipped_note(skipped)}", file=sys.stderr)
    records = [r for r in every if test is None or r.kept_by(test)]
    if ids_only:
        out.writelines(f"{r.kernel_id}\n" for r in records)
        return 0
    if not records:
        out.write(_none_listed(test, others=len(every)))
        return 0
    out.write(f"{'KERNEL ID':32}  {'TRANSPORT':9}  {'WHERE':30}  {'AGE':>7}  {'EXPIRES IN':>10}  ALIVE  TEST\n")
    for r in records:
        left = "in use" if in_use_by(r.kernel_id) else "expired" if r.expired(now) else time_left_words(r.expires_at - now)
        out.write(f"{r.kernel_id:32}  {r.transport:9}  {_where(r):30}  {now - r.kept_at:>5.0f} s  {left:>10}  "
                  f"{ALIVE_WORDS[alive(r)]:5}  {r.nodeid}\n")
    return 0


def _none_listed(test: str | None, *, others: int) -> str:
    """What ``ls`` says when it lists no kernel: none kept at all (where it looked), or none by ``test``."""
    if test is not None and others:
        return (f"no kernel kept for post-mortem by {test} ({others} kept by other tests: "
                "`hermes-kernel ls` lists them)\n")
    return (f"no kernel is kept for post-mortem: no record in {kept_dir(create=False)}\n"
            "(`pytest --hermes-keep-failed` keeps a failed test's kernels; their records are under the temp dir "
            "of the run that kept them, so run `hermes-kernel ls` with the same TMPDIR)\n")


def sweep_kept(progress: Callable[[str], None] = print, *, dry_run: bool = False, expired_only: bool = False,
               kernel_ids: Sequence[str] = (), not_ended: list[str] | None = None,
               listed: list[KeptKernel] | None = None) -> int:
    """End kept kernels and remove their records: all of them, those named (ids or prefixes), or
    (``expired_only``) those whose TTL ran out or that are gone.

    :param not_ended: if given, gets the id of each kept kernel that could not be ended (its
        record is kept, and ``progress`` says why).
    :param listed: if given, gets each record removed (or, in a dry run, that would be).
    :raises ConfigError: if a name matches no kept kernel or several, or is empty (then nothing
        is ended: an empty ``--kernel`` from a script whose lookup found nothing must not end all).
    :returns: how many were removed (or would be).
    """
    wanted = {find(k).kernel_id for k in kernel_ids}  # each names one kept kernel, or nothing is ended
    skipped: list[str] = []
    try:
        records = load_all(skipped=skipped)
    except UnsafeRunDirError as exc:
        if not expired_only:  # asked to end kept kernels: an error; the plain sweep goes on with its other kinds
            raise
        progress(f"kept: skipped ({exc})")
        return 0
    if skipped:
        progress(f"kept: {skipped_note(skipped)}")
    removed, listed = 0, [] if listed is None else listed
    containers: dict[str | None, set[str]] = {}  # docker engine (None: the environment's) -> container ids
    for record in records:
        if kernel_ids and record.kernel_id not in wanted:
            continue
        if expired_only and ((not record.expired() and alive(record) is not False)  # alive, or cannot tell
                             or in_use_by(record.kernel_id)):  # a command holds it: its TTL waits for that client
            continue
        why = None if dry_run else end_kept(record)
        if why is not None:
            progress(f"could not end kept kernel {record.kernel_id} ({record.transport}): {why}; its record is "
                     f"kept (the kernel still ends by itself {record.ttl_s:g} s after its last client)")
            if not_ended is not None:
                not_ended.append(record.kernel_id)
            continue
        removed += 1
        listed.append(record)
        cid, engine = record.locator.get("container_id"), record.locator.get("docker_host")
        if isinstance(cid, str):
            containers.setdefault(engine if isinstance(engine, str) else None, set()).add(cid)
        progress(f"{'would remove' if dry_run else 'removed'} kept kernel {record.kernel_id} "
                 f"({record.transport}, kept by {record.nodeid})")
    from .containers.sweep import sweep_containers_of_kept

    for engine, ids in containers.items():
        sweep_containers_of_kept(ids, [r.kernel_id for r in listed], progress, dry_run, engine)
    return removed


def sweep_kept_command(*, dry_run: bool = False, kernel_ids: Sequence[str] = ()) -> int:
    """``hermes-kernel sweep --kept [--kernel ID ...]``: end the kept kernels (:func:`sweep_kept`),
    print a line for each and a summary; with none found, where it looked.

    :returns: 0, or 1 when a kernel asked to end could not be ended (one that still runs is no
        success) or the kept dir is not to be trusted.
    :raises ConfigError: if an id names no kept kernel or several (nothing is ended).
    """
    from .transports.leftovers import kill_orphan_kernels

    not_ended: list[str] = []
    swept: list[KeptKernel] = []
    try:
        n = sweep_kept(print, dry_run=dry_run, kernel_ids=kernel_ids, not_ended=not_ended, listed=swept)
    except UnsafeRunDirError as exc:
        return _refused("sweep", exc)
    if not dry_run:  # what a cell started in a session of its own outlived the shutdown (a plain sweep's
        kill_orphan_kernels(print, False, only={r.kernel_id for r in swept})  # kernel-processes kind got it)
    print(f"sweep{' (dry run, nothing removed)' if dry_run else ''}: {n} kept kernel{'' if n == 1 else 's'}"
          + (f"; {len(not_ended)} could not be ended" if not_ended else ""))
    if not n and not not_ended:  # none found: say where it looked (a run kept them under its own TMPDIR)
        print(f"(no record in {kept_dir(create=False)}: records are under the temp dir of the run that kept "
              "them; run `hermes-kernel sweep --kept` with the same TMPDIR)")
    return 1 if not_ended else 0


def end_kept(record: KeptKernel) -> str | None:
    """End a kept kernel (attach, then shut it down) and remove its record. One gone already (the
    runner is gone for good, or its TTL ran out) loses its record and what it left where it ran
    (:meth:`~pytest_hermes_kernel.kernel.contract.Transport.cleanup_kept`: a killed local runner
    left its kernel dir).

    :returns: ``None`` when done; else why it could not be reached (its record is kept then:
        the kernel may still run, and its TTL still ends it).
    """
    try:
        transport = transport_for(record)
    except HermesKernelError as exc:
        return str(exc)
    try:
        handle = attach_kept(transport, record.locator, kernel_id=record.kernel_id, token=record.token,
                             options=CELL_OPTIONS, env_secrets=record.secrets)
        handle.shutdown()
    except TransportLostError as exc:
        if not (exc.permanent or record.expired()):
            return str(exc)
        transport.cleanup_kept(record.locator)  # gone: nothing else removes its kernel dir (it was left behind)
    except (HermesKernelError, OSError) as exc:  # e.g. an ssh key or known_hosts file gone
        if not record.expired():
            return f"{type(exc).__name__}: {exc}"
    finally:
        transport.close()
    remove(record.kernel_id)
    return None


def _nonempty(text: str) -> str:
    if not text:
        raise argparse.ArgumentTypeError("must not be empty")
    return text


def add_postmortem_commands(sub: Any) -> None:
    """Add ``ls``, ``attach`` and ``exec`` to the ``hermes-kernel`` subcommands ``sub``."""
    ls = sub.add_parser("ls", help="list the kernels kept for post-mortem (--hermes-keep-failed), oldest first")
    ls.add_argument("--ids", action="store_true", help="only their ids, one a line (for scripts)")
    ls.add_argument("--test", metavar="NODEID", type=_nonempty, help="only kernels kept by this test (a node id; "
                    "without its [leg]: every leg; a file or class: every test in it)")
    a = sub.add_parser("attach", help="a console on a kept kernel: each line of input is a cell")
    a.add_argument("kernel_id", metavar="ID", help="a kept kernel's id, or a unique prefix of it")
    e = sub.add_parser("exec", help="run one cell in a kept kernel (exit status 0 when it ends ok)")
    e.add_argument("kernel_id", metavar="ID", help="a kept kernel's id, or a unique prefix of it")
    e.add_argument("code", metavar="CODE", help="the cell's source")


def run_postmortem_command(args: argparse.Namespace) -> int:
    """Run ``ls``, ``attach`` or ``exec`` as parsed; its exit status."""
    try:
        if args.cmd == "ls":
            return list_kept(ids_only=args.ids, test=args.test)
        if args.cmd == "attach":
            return attach_console(args.kernel_id)
        return exec_cell(args.kernel_id, args.code)
    except UnsafeRunDirError as exc:
        return _refused(args.cmd, exc)


def _refused(command: str, exc: UnsafeRunDirError) -> int:
    """Say on stderr why the kept dir is not read (it was a traceback); exit status 1."""
    print(f"hermes-kernel {command}: {exc}\nHint: kept kernels' records are trusted only in a 0700 directory of "
          f"yours: fix or remove {exc.path}, or run with another TMPDIR", file=sys.stderr)
    return 1
