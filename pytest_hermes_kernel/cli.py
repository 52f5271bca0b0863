"""The ``hermes-kernel`` command: ``doctor``, ``build-image``, ``sweep``, ``ls``, ``attach``, ``exec``.

* ``doctor``: which transports work on this machine, and for each one that does not, why and
  what to do. Exit code 0 when every transport asked for works (default: all), 1 otherwise.
  ``doctor --image NAME`` checks a kernel host image instead (python3, sh, init, user, sshd).
* ``build-image``: build the kernel host image (offline, from Debian packages when needed).
* ``sweep``: remove what runs nobody uses any more left behind (found by labels, member lists
  and markers): run files (:mod:`~pytest_hermes_kernel.containers.rundir`), labelled
  containers, local kernel dirs, local kernel processes (or only the kinds named). Never
  anything else. ``--dry-run`` lists the same things and removes nothing. Kept kernels
  (``--hermes-keep-failed``) are left alone until their TTL ends; ``sweep --kept`` ends them now.
* ``ls``, ``attach ID``, ``exec ID CODE``: the kernels kept for post-mortem: list them, open a
  console on one (each line a cell), run one cell (exit status 0 when it ended ``ok``).
  Attaching re-attaches to the kept runner (its locator and token in its record, :mod:`~pytest_hermes_kernel.containers.kept`); leaving keeps it, its TTL starting again.
  Containers kept between runs (``--hermes-reuse``) stay until their idle expiry; ``sweep --reused`` removes every one no live run has claimed (with its record and sshd key).
* ``--version``: the installed package's version (from its metadata).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib.util
import os
import shutil
import signal
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

from .postmortem import POSTMORTEM_COMMANDS, add_postmortem_commands, run_postmortem_command
from .errors import ConfigError
from .containers.images import docker_status, pip_install_extra, too_old, too_old_of
from .containers.rundir import run_files_problem
from .transports.leftovers import sweep_summary
from .transports import TRANSPORT_NAMES

if TYPE_CHECKING:
    from .containers.kept import KeptKernel

#: What ``hermes-kernel sweep`` can remove, in the order it does.
SweepKind = Literal["run-files", "containers", "kernel-dirs", "kernel-processes", "kept"]
SWEEP_KINDS: tuple[SweepKind, ...] = get_args(SweepKind)


@dataclass(frozen=True)
class Check:
    """One transport's verdict: ``ok``, and when not, ``why`` and ``hint``."""

    transport: str
    ok: bool
    detail: str
    hint: str = ""


def _check_local() -> Check:
    from .errors import KernelStartError
    from .faults.cgroup import writable_parent
    from .transports.kernel_dirs import discard_kernel_dir, new_kernel_dir

    try:  # a kernel dir as each local start makes one: under PYTEST_HERMES_KERNEL_DIR, else the temp dir
        discard_kernel_dir(new_kernel_dir())
    except KernelStartError as exc:  # it said `ok`, and every local start then failed so
        return Check("local", False, *str(exc).partition("\nHint: ")[::2])
    cgroup = "memory cgroups available for hermes_oom" if writable_parent() else "no writable memory cgroup: hermes_oom skips"
    return Check("local", True, f"{sys.executable} (Python {sys.version.split()[0]}); {cgroup}")


#: Environment variable naming the docker engines (a comma list) the doctor and the sweep look at.
ENGINES_ENV = "PYTEST_HERMES_DOCKER_HOSTS"
#: One engine: its URL, or ``None`` for the environment's (``DOCKER_HOST``).
Engines = Sequence["str | None"]


def engines_of(text: str | None) -> tuple[str | None, ...]:
    """The engines named by ``text`` (a comma list, ``default`` for the environment's), else by
    :data:`ENGINES_ENV`, else the environment's engine alone.

    :raises ConfigError: if an entry is not an engine URL, or the list names none (it was the default).
    """
    from .containers.engines import DEFAULT_ENGINE, parse_engine_list

    source = "--docker-hosts" if text is not None else ENGINES_ENV
    text = os.environ.get(ENGINES_ENV) if text is None else text
    if text is not None and not text.replace(",", "").strip():  # `--docker-hosts "$HOSTS"`, HOSTS unset
        raise ConfigError(f"{source} names no docker engine (an unset variable?): give URLs, or leave it out")
    return tuple(None if u == DEFAULT_ENGINE else u for u in parse_engine_list(text)) if text is not None else (None,)


def _check_docker_engine(url: str | None = None) -> tuple[bool, str]:
    try:
        import docker  # noqa: F401 - docker_status's reason would repeat the install the line's hint gives
    except ImportError:
        return False, "the docker SDK is not installed"
    try:
        return docker_status(url)
    except ImportError as exc:
        return False, f"docker-py is not installed ({exc})"


def _check_image(url: str | None = None) -> tuple[bool, str, str]:
    from .containers.image_check import doctor_image_line  # docker-py is there: the engine answered
    return doctor_image_line(url)


#: The docker line's hint when the docker SDK is missing (the engine cannot be asked without it).
SDK_HINT = "{pip} (the docker SDK), then run `hermes-kernel doctor` again"
#: The docker line's hint when an engine does not answer: what a user of the installed package does.
ENGINE_HINT = ("start a docker engine (`sudo systemctl start docker`, or `sudo dockerd &` where there is no "
               "systemd; install one first if there is none, e.g. `sudo apt-get install docker.io`) and check that "
               "`docker info` answers as this user (the `docker` group, or DOCKER_HOST naming the engine). The "
               "kernel host image needs no registry: it is built on this machine on first use (about 70 s), "
               "or now with `hermes-kernel build-image`")


def _check_docker(engines: Engines = (None,)) -> Check:
    """The docker transport on each engine (``None``: the environment's, ``DOCKER_HOST``)."""
    found = [(*_check_docker_engine(url), url) for url in engines]
    said = [why if not ok else f"{why} (this one answers)" for ok, why, _url in found]  # NO is for the list
    if not all(ok for ok, _why, _url in found):
        silent = [url or "default" for ok, _why, url in found if not ok]
        hint = ENGINE_HINT if importlib.util.find_spec("docker") else SDK_HINT.format(pip=pip_install_extra("docker"))
        if len(silent) < len(found):  # the others answer: it is that engine, not docker here
            hint = (f"start the engine that did not answer ({', '.join(silent)}), or leave it out of "
                    f"--docker-hosts ({ENGINES_ENV}): the others answer")
        elif None not in engines and importlib.util.find_spec("docker"):  # engines the user named, none answers
            hint = f"start the engine that did not answer ({', '.join(silent)}), or fix it in --docker-hosts ({ENGINES_ENV})"
        return Check("docker", False, "; ".join(said), hint)
    images = [_check_image(url) for _ok, _why, url in found]  # the run's PYTEST_HERMES_IMAGE, else the kit's
    return Check("docker", all(ok for ok, *_ in images), "; ".join(f"{why}; {img}" for (_ok, why, _url), (_, img, _h)
                 in zip(found, images)), next((hint for ok, _, hint in images if not ok), ""))


def _check_ssh() -> Check:
    try:
        import paramiko  # noqa: F401
        import testcontainers.core.container  # noqa: F401  # starts the default target, an sshd container
    except ImportError as exc:  # missing, or there and failing (a dependency too old for it): quoted then
        return Check("ssh", False, f"{(exc.name or 'paramiko').split('.')[0]} is not installed" if isinstance(
            exc, ModuleNotFoundError) else f"its packages cannot be imported: {exc}", pip_install_extra("ssh"))
    from .transports.ssh.targets import doctor_targets  # paramiko is there: imported above
    if (targets := doctor_targets()) is not None:  # PYTEST_HERMES_SSH_TARGETS: the leg's hosts, no sshd container
        return Check("ssh", *targets)
    ok, why = _check_docker_engine()
    if not ok:
        return Check("ssh", False, f"the default target is an sshd container, and docker is unavailable: {why}",
                     "start dockerd, or point the ssh transport at a host: --hermes-ssh-targets=user@host:port "
                     "(pytest), SshTransport(target='user@host:port') (the API)")
    version = "" if too_old("paramiko") else f"paramiko {paramiko.__version__}; "  # a NO names an old one already
    image_ok, image, hint = _check_image()  # the sshd container runs PYTEST_HERMES_IMAGE's image too
    return Check("ssh", image_ok, f"{version}sshd container via docker ({why})" + ("" if image_ok else f"; {image}"), hint)


def _check_filecell() -> Check:
    if (sh := shutil.which("sh")) is None:
        return Check("filecell", False, "no `sh` for the local shell reference backend", "install a POSIX shell")
    return Check("filecell", True, f"local shell backend ({sh}); docker exec backend " + (f"needs the docker SDK: {pip_install_extra('docker')}" if not
                 importlib.util.find_spec("docker") else f"cannot run: {o[0]}: {o[1]}" if (o := too_old_of("docker", core=False)) else "when docker is up"))


CHECKS: dict[str, Callable[[], Check]] = {"local": _check_local, "docker": _check_docker, "ssh": _check_ssh,
                                          "filecell": _check_filecell}


def doctor(names: list[str] | None = None, engines: Engines = (None,)) -> list[Check]:
    """Check each transport (default: all built-in ones); docker on each of ``engines``."""
    return [_with_too_old(_check_docker(engines) if n == "docker" else CHECKS[n]())
            for n in (names or list(TRANSPORT_NAMES))]


def _with_too_old(check: Check) -> Check:
    """``check``, a NO naming each package it needs that is older than this package declares, or (docker, ssh) a temp dir unfit for their run files."""
    old = too_old_of(check.transport) or (check.ok and check.transport in ("docker", "ssh") and run_files_problem() or None)
    return Check(check.transport, False, f"{old[0]}; {check.detail.removeprefix(old[0] + ': ')}", old[1]) if old else check


def sweep(progress: Callable[[str], None] = print, *, dry_run: bool = False, kinds: Sequence[SweepKind] = SWEEP_KINDS,
          reused: bool = False, engines: Engines = (None,), raced: list[str] | None = None) -> dict[str, int]:
    """Remove leftovers of dead runs: run files, containers (by label), kernel dirs, kernel processes.

    Run files go first: a shared container whose files went is then judged unheld as well.

    :param progress: called with one line per thing removed (``removed ...``/``killed ...``;
        ``would remove ...``/``would kill ...`` in a dry run).
    :param dry_run: only list what would be removed; nothing is removed or killed.
    :param kinds: which of :data:`SWEEP_KINDS` to sweep (default: all).
    :param reused: containers kept between runs go too (unless a live run has claimed one).
    :param engines: the docker engines whose containers are swept (``None``: the environment's).
    :param raced: gets the id of each container another process removed first (not counted).
    :returns: how many of each kind were removed (or would be), by kind.
    """
    from .transports.leftovers import kill_orphan_kernels, spared_by_kept, sweep_containers, sweep_kernel_dirs, sweep_run_files
    from .postmortem import sweep_kept

    listed: list[KeptKernel] = []  # kept kernels the kept sweep ends: a dry run lists their dirs, processes once
    sweeps: dict[SweepKind, Callable[[Callable[[str], None], bool], int]] = {
        "run-files": sweep_run_files,
        "containers": lambda p, d: sum(sweep_containers(p, d, reused=reused, engine=e, raced=raced) for e in engines),
        "kernel-dirs": lambda p, d: sweep_kernel_dirs(p, d, spared=spared_by_kept(listed)[0] if d else ()),
        "kernel-processes": lambda p, d: kill_orphan_kernels(p, d, spared=spared_by_kept(listed)[1] if d else ()),
        "kept": lambda progress, dry_run: sweep_kept(progress, dry_run=dry_run, expired_only=True, listed=listed)}
    # kept kernels first: one found gone (its TTL ran out) frees its container for the container sweep
    order = ("run-files", "kept", "containers", "kernel-dirs", "kernel-processes")
    return {kind: sweeps[kind](progress, dry_run) for kind in order if kind in kinds}


def doctor_image(image: str, out: Callable[[str], None] = print, engine: str | None = None) -> int:
    """``hermes-kernel doctor --image NAME``: print each need of a kernel host image
    (:mod:`~pytest_hermes_kernel.containers.image_check`); exit code 0 when the docker
    transport can use it (``sshd`` is needed by the ssh transport only), 1 otherwise. ``engine``:
    the docker engine to look on (``None``: the environment's)."""
    from .containers.engines import engine_client
    from .containers.image_check import REQUIRED, check_image
    from .errors import ContainerStartError

    ok, why = _check_docker_engine(engine)
    if not ok:
        out(f"image     NO  {why}")
        return 1
    client = engine_client(engine)
    try:
        checks = check_image(client, image)
    except ContainerStartError as exc:
        out(f"image     NO  {exc}")
        return 1
    finally:
        client.close()
    for c in checks:
        role = "" if c.need in REQUIRED else " (ssh transport only)"
        out(f"{c.need:9} {'ok ' if c.ok else 'NO '} {c.detail}{role}")
    return 0 if all(c.ok for c in checks if c.need in REQUIRED) else 1


def build_image(tag: str) -> int:
    """``hermes-kernel build-image``: build the kernel host image ``tag``; exit status 0 when it is
    ready, else 1 with the reason and a hint on one line of stderr (no engine was a traceback)."""
    from .containers.images import ensure_image
    from .errors import HermesKernelError

    try:
        print(ensure_image(tag=tag))
    except ImportError:
        print(f"hermes-kernel build-image: the docker SDK is not installed. Hint: {pip_install_extra('docker')}",
              file=sys.stderr)
        return 1
    except HermesKernelError as exc:
        print(f"hermes-kernel build-image: {exc}", file=sys.stderr)
        return 1
    return 0


_ENGINES_HELP = (f"docker engines to look at, a comma list of URLs (unix:///path, tcp://host:port; 'default' is "
                 f"the environment's, DOCKER_HOST) [env {ENGINES_ENV}; default: the environment's engine]")


def version() -> str:
    """The installed package's version (its metadata: what ``pip`` installed), or why there is none."""
    from importlib.metadata import PackageNotFoundError, version as installed

    try:
        return installed("pytest-hermes-kernel")
    except PackageNotFoundError:
        return "unknown (the package is not installed: no metadata)"


def main(argv: list[str] | None = None) -> int:
    """The command's exit status; Ctrl-C ends it: 130, one line, no traceback (a sweep's removals
    stay); a reader gone early (``ls | head -n 1``): 141, 128 + SIGPIPE, quietly (a traceback)."""
    stdout = sys.stdout
    if stdout is not None:
        sys.stdout = _Output(stdout)  # only its own writes' failures are "cannot write the output"
    try:
        try:
            status = _main(argv)
        except SystemExit:  # argparse's --help and usage errors: their output's failure is seen here too
            if sys.stdout is not None:
                sys.stdout.flush()
            raise
        if sys.stdout is not None:  # a closed pipe shows here, not as 'Exception ignored' at exit
            sys.stdout.flush()
        return status
    except KeyboardInterrupt:
        print("hermes-kernel: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), stdout.fileno())  # what is left buffered goes nowhere
        return 128 + signal.SIGPIPE
    except OSError as exc:
        if not getattr(exc, "hermes_output", False):
            raise
        os.dup2(os.open(os.devnull, os.O_WRONLY), stdout.fileno())
        with contextlib.suppress(OSError):  # (stderr may be full too: the exit status still says it)
            print(f"hermes-kernel: cannot write the output: {exc.strerror} (errno {exc.errno})", file=sys.stderr)
        return 1
    finally:
        if isinstance(sys.stdout, _Output):
            sys.stdout = stdout


_OUTPUT_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO)
"""What a write to a full or failing stdout raises (``> /dev/full``): one line and exit 1, no traceback."""


class _Output:
    """``sys.stdout`` while a command runs: its writes' :data:`_OUTPUT_FULL` failures are marked
    ``hermes_output`` (a full disk met elsewhere, in ``build-image``, stays the plain ``OSError`` it is)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._guarded(self._stream.write, text)
        except UnicodeEncodeError:  # an ASCII stdout (LC_ALL=C, PYTHONUTF8=0) and a cell's 'h\u00e9llo': a traceback
            if (buffer := getattr(self._stream, "buffer", None)) is None:
                raise
            self._guarded(self._stream.flush)
            self._guarded(buffer.write, text.encode("utf-8", "backslashreplace"))  # what the kernel printed, as UTF-8
            return len(text)

    def flush(self) -> None:
        self._guarded(self._stream.flush)

    def _guarded(self, call: Any, *args: Any) -> Any:
        try:
            return call(*args)
        except OSError as exc:
            exc.hermes_output = exc.errno in _OUTPUT_FULL  # type: ignore[attr-defined]
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _main(argv: list[str] | None) -> int:
    from .containers.image_check import image_name_argument as _image_name  # docker's 400 was a traceback
    ap = argparse.ArgumentParser(prog="hermes-kernel", description="pytest-hermes-kernel utilities")
    ap.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("doctor", help="which transports work here, and why not")
    d.add_argument("transports", nargs="*", metavar="TRANSPORT", help=f"any of {', '.join(TRANSPORT_NAMES)}")
    d.add_argument("--image", metavar="NAME", type=_image_name, help="check a kernel host image instead: what it has, lacks")
    d.add_argument("--docker-hosts", metavar="URLS", help=_ENGINES_HELP)
    b = sub.add_parser("build-image", help="build the kernel host image (offline)")
    b.add_argument("--tag", default="hermes-kernel-host:latest", type=_image_name, help="the image's name (default: "
                   "hermes-kernel-host:latest, the one the docker and ssh transports use unless told otherwise)")
    w = sub.add_parser("sweep", help="remove leftovers of runs nobody uses any more")
    w.add_argument("--dry-run", action="store_true", help="list what would be removed; remove nothing")
    w.add_argument("--docker-hosts", metavar="URLS", help=_ENGINES_HELP)
    w.add_argument("--reused", action="store_true", help="also remove the containers kept between runs by "
                   "--hermes-reuse (those no live run has claimed), their records and sshd keys")
    w.add_argument("kinds", nargs="*", metavar="KIND", help=f"only these: any of {', '.join(SWEEP_KINDS)} "
                   "(default: all; 'kept' removes only kept kernels whose TTL ran out, or that are gone)")
    w.add_argument("--kept", action="store_true", help="end every kernel kept for post-mortem now (or those "
                   "named by --kernel), expired or not; sweep nothing else")
    w.add_argument("--kernel", action="append", default=[], metavar="ID", help="with --kept: only this kept "
                   "kernel (an id or a unique prefix; repeatable)")
    add_postmortem_commands(sub)
    sub.metavar = "{" + ",".join(sub.choices) + "}"  # a bare `hermes-kernel` said `required: cmd`
    args, extra = ap.parse_known_args(argv)
    usage = sub.choices[args.cmd]  # a subcommand's usage error shows that subcommand's usage line
    if extra:  # argparse leaves them to the top-level parser, which printed its own usage
        usage.error(f"unrecognized arguments: {' '.join(extra)}")
    if args.cmd in POSTMORTEM_COMMANDS:
        return run_postmortem_command(args)
    try:
        engines = engines_of(getattr(args, "docker_hosts", None))
    except ConfigError as exc:
        usage.error(str(exc))
    if args.cmd == "doctor" and args.image is not None:  # `--image ""` checked the transports: a green of nothing
        return max(doctor_image(args.image, engine=e) for e in engines)
    if args.cmd == "doctor":
        unknown = [t for t in args.transports if t not in CHECKS]
        if unknown:
            from .plugin.markers import did_you_mean  # the plugin's, as for --hermes-transport

            close = did_you_mean(unknown[0], CHECKS) if len(unknown) == 1 else ""
            usage.error(f"unknown transport {', '.join(unknown)}{close or ';'} known: {', '.join(TRANSPORT_NAMES)}")
        checks = doctor(args.transports or None, engines)
        for c in checks:
            print(f"{c.transport:9} {'ok ' if c.ok else 'NO '} {c.detail}")
            if not c.ok and c.hint:
                print(f"{'':13}Hint: {c.hint}")
        return 0 if all(c.ok for c in checks) else 1
    if args.cmd == "build-image":
        return build_image(args.tag)
    unknown = [k for k in args.kinds if k not in SWEEP_KINDS]
    if unknown:
        from .plugin.markers import did_you_mean

        close = did_you_mean(unknown[0], SWEEP_KINDS) if len(unknown) == 1 else ""
        usage.error(f"unknown sweep kind {', '.join(unknown)}{close or ';'} known: {', '.join(SWEEP_KINDS)}")
    if args.kernel and not args.kept:
        usage.error("--kernel needs --kept")
    if args.kept:
        from .postmortem import sweep_kept_command
        try:
            return sweep_kept_command(dry_run=args.dry_run, kernel_ids=args.kernel)
        except ConfigError as exc:
            usage.error(f"--kernel: {exc}")
    raced: list[str] = []
    removed = sweep(dry_run=args.dry_run, kinds=args.kinds or SWEEP_KINDS, reused=args.reused, engines=engines, raced=raced)
    print(sweep_summary(removed, dry_run=args.dry_run, raced=len(raced)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
