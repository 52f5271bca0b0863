"""Build the kernel host image (python3 + sshd) locally, without any image registry.

The image is made in two layers, each built at most once per machine:

1. the *base*, ``hermes-kernel-base:bookworm``: a Debian bookworm ``minbase`` rootfs made by
   ``debootstrap`` from the Debian mirror this machine's apt already uses, turned into an image
   with ``docker import``. A local ``debian:bookworm-slim`` is used instead when present.
2. the *kernel host* image, ``hermes-kernel-host:latest``: ``containers/kernel-host`` built on
   that base. It carries a content-hash label (build context + base image id), so a rebuild is
   skipped while neither changed.

Both run under a :class:`filelock.FileLock`, so parallel pytest-xdist workers build once and
the others wait. ``docker`` (docker-py) is imported only inside the functions that need it.
Run ``python -m pytest_hermes_kernel.images`` to build from a shell (CI does).
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_hermes_kernel.errors import ImageBuildError

if TYPE_CHECKING:
    import docker

Progress = Callable[[str], object]

KERNEL_HOST_TAG = "hermes-kernel-host:latest"
BASE_TAG = "hermes-kernel-base:bookworm"
#: A real Debian image, used as base instead of the debootstrap one when it is already local.
SLIM_BASE_TAG = "debian:bookworm-slim"
SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
#: Installed into the debootstrap rootfs; tini is PID 1 of the kernel host (reaps orphans).
BASE_PACKAGES = ("python3", "openssh-server", "procps", "tini")
LABEL_IMAGE = "org.hermes-kernel.image"
LABEL_CONTENT_HASH = "org.hermes-kernel.content-hash"
LOCK_PATH = os.path.join(tempfile.gettempdir(), "pytest-hermes-kernel-image.lock")
#: A cold debootstrap + build takes about 1-3 minutes here; waiting workers allow much more.
LOCK_TIMEOUT = 1800.0
LOG_TAIL_LINES = 20
MIRROR_ENV = "PYTEST_HERMES_DEBIAN_MIRROR"
HINT = (
    "Hint: is dockerd running (`docker info`)? is debootstrap installed "
    "(`apt-get install -y debootstrap`)? is the Debian mirror reachable? "
    "Building the base needs root."
)


def docker_status() -> tuple[bool, str]:
    """Tell whether a docker engine is reachable from this process; changes nothing.

    :returns: ``(True, "docker engine <version> at <url>")`` or ``(False, reason + " Hint: ...")``.
    """
    try:
        import docker
    except ImportError:
        return False, (
            "the docker SDK is not installed. "
            "Hint: pip install 'pytest-hermes-kernel[docker]'"
        )
    try:
        client = docker.from_env(timeout=10)
    except docker.errors.DockerException as exc:
        return False, f"no docker engine: {exc}. Hint: is dockerd running? is DOCKER_HOST right?"
    try:
        version = client.version().get("Version", "?")
        return True, f"docker engine {version} at {client.api.base_url}"
    except Exception as exc:  # requests/urllib3 errors are not DockerException
        return False, (
            f"docker engine at {client.api.base_url} did not answer: {exc}. "
            "Hint: is dockerd running (`docker info`)? may this user use /var/run/docker.sock?"
        )
    finally:
        client.close()


def ensure_image(
    client: docker.DockerClient | None = None,
    *,
    tag: str = KERNEL_HOST_TAG,
    progress: Progress = print,
    lock_path: str = LOCK_PATH,
    lock_timeout: float = LOCK_TIMEOUT,
) -> str:
    """Build the kernel host image unless an image ``tag`` with the same content hash exists.

    Builds the base first when missing (debootstrap + ``docker import``). Holds ``lock_path``
    while checking and building, so concurrent callers build once.

    :param client: docker-py client; ``None`` opens one from the environment.
    :param tag: tag of the kernel host image.
    :param progress: called with one line per step (with elapsed seconds).
    :param lock_path: inter-process lock file.
    :param lock_timeout: seconds to wait for another process's build.
    :returns: ``tag``, ready to run.
    :raises ImageBuildError: if the engine, debootstrap, the import or the build fails, or the
        lock is not obtained within ``lock_timeout``; the message has the log tail and a hint.
    """
    import filelock

    owned = client is None
    client = _client() if client is None else client
    lock = filelock.FileLock(lock_path, timeout=lock_timeout)
    try:
        with _holding(lock, lambda: progress(f"[hermes-kernel image] waiting for {lock_path}")):
            return _ensure_locked(client, tag, progress)
    except filelock.Timeout as exc:
        raise ImageBuildError(
            f"another process held {lock_path} for more than {lock_timeout:g} s "
            f"while building {tag}.\nHint: is another pytest run or xdist worker stuck in "
            "`debootstrap` or `docker build`? (the lock is released when that process ends)"
        ) from exc
    finally:
        if owned:
            client.close()


@contextlib.contextmanager
def _holding(lock: Any, on_wait: Callable[[], object]) -> Iterator[None]:
    """Hold ``lock``, calling ``on_wait`` first if another process has it (a build runs)."""
    import filelock

    try:
        lock.acquire(timeout=0)
    except filelock.Timeout:
        on_wait()
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


def context_dir() -> Path:
    """Find the kernel host build context, from a checkout or from an installed wheel.

    :returns: the directory holding the ``Dockerfile``.
    :raises ImageBuildError: if neither ``<repo>/containers/kernel-host`` nor
        ``pytest_hermes_kernel/_containers/kernel-host`` exists.
    """
    package = Path(__file__).resolve().parent
    candidates = (
        package / "_containers" / "kernel-host",  # wheel: pyproject force-include
        package.parent / "containers" / "kernel-host",  # checkout / editable install
    )
    for candidate in candidates:
        if (candidate / "Dockerfile").is_file():
            return candidate
    raise ImageBuildError(
        "kernel host build context not found in: " + ", ".join(map(str, candidates))
        + "\nHint: reinstall pytest-hermes-kernel; the wheel ships containers/ as _containers/."
    )


def content_hash(context: Path, base_id: str) -> str:
    """Hash the build context (paths, exec bits, bytes) and the base image id.

    :param context: build context directory.
    :param base_id: image id of the base (a rebuilt base changes the hash).
    :returns: a sha256 hex digest.
    """
    digest = hashlib.sha256(f"base={base_id}\n".encode())
    for path in sorted(p for p in context.rglob("*") if p.is_file()):
        if "__pycache__" in path.parts:
            continue
        executable = os.access(path, os.X_OK)
        digest.update(f"{path.relative_to(context).as_posix()}:{executable:d}\n".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def debian_mirror(
    sources_dir: Path = Path("/etc/apt/sources.list.d"),
    sources_list: Path = Path("/etc/apt/sources.list"),
) -> str:
    """Find the Debian mirror that serves ``bookworm`` on this machine.

    Order: env ``PYTEST_HERMES_DEBIAN_MIRROR``; the ``URIs:`` of a deb822 stanza in
    ``sources_dir/*.sources`` whose ``Suites:`` has ``bookworm``; a ``deb URI bookworm ...`` line
    of ``sources_list``; else ``http://deb.debian.org/debian``. A mirror of another
    distribution (an Ubuntu host) never matches, because its suites are not ``bookworm``.

    :param sources_dir: apt's deb822 sources directory.
    :param sources_list: apt's one-line sources file.
    :returns: the mirror URL.
    """
    if os.environ.get(MIRROR_ENV):
        return os.environ[MIRROR_ENV]
    for path in sorted(sources_dir.glob("*.sources")) if sources_dir.is_dir() else ():
        for stanza in re.split(r"\n\s*\n", _read_text(path)):
            fields = _deb822_fields(stanza)
            types = fields.get("types", "").split()
            if "deb" in types and SUITE in fields.get("suites", "").split() and fields.get("uris"):
                return fields["uris"].split()[0]
    for line in _read_text(sources_list).splitlines():
        words = re.sub(r"\[[^]]*\]", " ", line.split("#", 1)[0]).split()
        if len(words) >= 3 and words[0] == "deb" and words[2] == SUITE:
            return words[1]
    return DEFAULT_MIRROR


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _deb822_fields(stanza: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in stanza.splitlines():
        if line.startswith("#") or ":" not in line or line[:1].isspace():
            continue
        key, _, value = line.partition(":")
        fields[key.strip().lower()] = value.strip()
    return fields


def _client() -> docker.DockerClient:
    import docker

    try:
        client = docker.from_env(timeout=600)
        client.ping()
    except Exception as exc:
        raise ImageBuildError(f"no docker engine: {exc}\n{HINT}") from exc
    return client


def _ensure_locked(client: docker.DockerClient, tag: str, progress: Progress) -> str:
    start = time.monotonic()
    base = _ensure_base(client, progress)
    base_id = client.images.get(base).id
    context = context_dir()
    wanted = content_hash(context, base_id)
    if _image_label(client, tag, LABEL_CONTENT_HASH) == wanted:
        progress(f"[hermes-kernel image] {tag} is up to date ({wanted[:12]})")
        return tag
    with _step(progress, f"docker build {tag} from {context} on {base}"):
        _build(client, context, tag, base, wanted)
    progress(f"[hermes-kernel image] {tag} ready after {time.monotonic() - start:.1f} s")
    return tag


def _image_label(client: docker.DockerClient, tag: str, label: str) -> str | None:
    import docker

    try:
        labels = client.images.get(tag).labels or {}
    except docker.errors.ImageNotFound:
        return None
    return labels.get(label)


def _ensure_base(client: docker.DockerClient, progress: Progress) -> str:
    import docker

    for candidate in (BASE_TAG, SLIM_BASE_TAG):
        try:
            client.images.get(candidate)
        except docker.errors.ImageNotFound:
            continue
        progress(f"[hermes-kernel image] base {candidate} present")
        return candidate
    build_base(client, progress=progress)
    return BASE_TAG


def build_base(
    client: docker.DockerClient,
    *,
    tag: str = BASE_TAG,
    mirror: str | None = None,
    progress: Progress = print,
) -> str:
    """Make the base image from Debian packages: debootstrap minbase, tar, ``docker import``.

    The rootfs lives in a temporary directory that is removed afterwards; downloaded packages
    are kept in ``$XDG_CACHE_HOME/pytest-hermes-kernel/debootstrap-bookworm`` for the next build.

    :param client: docker-py client.
    :param tag: tag of the imported image.
    :param mirror: Debian mirror URL; ``None`` uses :func:`debian_mirror`.
    :param progress: called with one line per step.
    :returns: ``tag``.
    :raises ImageBuildError: if debootstrap is missing or fails, or tar or the import fails.
    """
    mirror = mirror or debian_mirror()
    if shutil.which("debootstrap") is None:
        raise ImageBuildError(f"debootstrap is not installed; cannot build {tag}.\n{HINT}")
    workdir = Path(tempfile.mkdtemp(prefix="hermes-kernel-rootfs-"))
    rootfs = workdir / "rootfs"
    try:
        with _step(progress, f"debootstrap {SUITE} (minbase) from {mirror}"):
            _debootstrap(rootfs, mirror)
        tarball = workdir / "rootfs.tar"
        with _step(progress, f"tar the rootfs into {tarball}"):
            _run(_tar_command(rootfs, tarball), what="tar of the rootfs")
        with _step(progress, f"docker import -> {tag}"):
            _import(client, tarball, tag)
    finally:
        _remove_tree(workdir)
    return tag


def _debootstrap(rootfs: Path, mirror: str) -> None:
    cache = _cache_dir() / f"debootstrap-{SUITE}"
    cache.mkdir(parents=True, exist_ok=True)
    command = [
        "debootstrap",
        "--variant=minbase",
        f"--include={','.join(BASE_PACKAGES)}",
        f"--cache-dir={cache}",
        SUITE,
        str(rootfs),
        mirror,
    ]
    _run(command, what="debootstrap", inner_log=rootfs / "debootstrap" / "debootstrap.log")


def _cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pytest-hermes-kernel"


def _tar_command(rootfs: Path, tarball: Path) -> list[str]:
    # --one-file-system: never pack a /proc or /sys that is still mounted in the rootfs.
    excludes = ("./proc/*", "./sys/*", "./var/cache/apt/archives/*.deb", "./var/lib/apt/lists/*")
    return [
        "tar", "--numeric-owner", "--one-file-system", "-C", str(rootfs), "-cf", str(tarball),
        *(f"--exclude={pattern}" for pattern in excludes), ".",
    ]


def _import(client: docker.DockerClient, tarball: Path, tag: str) -> None:
    # docker-py's low-level import (POST /images/create?fromSrc=-) streams the file with no
    # timeout; the CLI (`tar | docker import -`) would add a dependency on a docker CLI whose
    # version may not match the engine (this machine has a newer static CLI than the daemon).
    repository, _, version = tag.rpartition(":")
    changes = [
        "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        'CMD ["/bin/bash"]',
        f'LABEL {LABEL_IMAGE}="kernel-base"',
    ]
    try:
        client.api.import_image(src=str(tarball), repository=repository, tag=version, changes=changes)
        client.images.get(tag)
    except Exception as exc:
        raise ImageBuildError(f"docker import of {tarball} as {tag} failed: {exc}\n{HINT}") from exc


def _build(client: docker.DockerClient, context: Path, tag: str, base: str, digest: str) -> None:
    log: collections.deque[str] = collections.deque(maxlen=LOG_TAIL_LINES)
    try:
        stream = client.api.build(
            path=str(context), tag=tag, buildargs={"BASE_IMAGE": base},
            labels={LABEL_IMAGE: "kernel-host", LABEL_CONTENT_HASH: digest},
            rm=True, forcerm=True, pull=False, decode=True,
        )
        for chunk in stream:
            _collect_build_chunk(chunk, log)
    except ImageBuildError:
        raise
    except Exception as exc:
        raise _build_error(f"docker build of {tag} failed: {exc}", log) from exc


def _collect_build_chunk(chunk: dict[str, Any], log: collections.deque[str]) -> None:
    for line in str(chunk.get("stream", "")).splitlines():
        if line.strip():
            log.append(line)
    if "error" in chunk:
        raise _build_error(f"docker build failed: {chunk['error']}", log)


def _build_error(message: str, log: Iterable[str]) -> ImageBuildError:
    tail = "\n".join(log)
    return ImageBuildError(f"{message}\n-- last build log lines --\n{tail}\n{HINT}", log_tail=tail)


def _run(command: list[str], *, what: str, inner_log: Path | None = None) -> None:
    """Run ``command``; on failure raise with the tail of its output (and of ``inner_log``)."""
    log: collections.deque[str] = collections.deque(maxlen=LOG_TAIL_LINES)
    try:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, errors="replace",
        )
    except OSError as exc:
        raise ImageBuildError(f"{what} could not start: {exc}\n{HINT}") from exc
    assert process.stdout is not None
    with process:
        for line in process.stdout:
            log.append(line.rstrip("\n"))
    if process.returncode != 0:
        tail = "\n".join(log)
        more = _read_text(inner_log).splitlines()[-LOG_TAIL_LINES:] if inner_log else []
        more_text = f"-- {inner_log.name} --\n" + "\n".join(more) + "\n" if inner_log and more else ""
        raise ImageBuildError(
            f"{what} exited with {process.returncode}: {' '.join(command)}\n"
            f"-- last output lines --\n{tail}\n{more_text}{HINT}",
            log_tail=tail,
        )


def _remove_tree(path: Path) -> None:
    """Remove a rootfs work dir, but never through a mount point (a /proc or /dev left mounted)."""
    mounts = _mounts_under(path)
    for mount in sorted(mounts, key=len, reverse=True):
        subprocess.run(["umount", "-l", mount], check=False, capture_output=True)
    if _mounts_under(path):
        return  # leave it: removing files through a live mount would hit the host's files
    shutil.rmtree(path, ignore_errors=True)


def _mounts_under(path: Path) -> list[str]:
    prefix = str(path.resolve()) + "/"
    mounts = []
    for line in _read_text(Path("/proc/self/mountinfo")).splitlines():
        fields = line.split()
        if len(fields) > 4:
            mount_point = fields[4].replace("\\040", " ")
            if mount_point.startswith(prefix):
                mounts.append(mount_point)
    return mounts


@contextlib.contextmanager
def _step(progress: Progress, what: str) -> Iterator[None]:
    start = time.monotonic()
    progress(f"[hermes-kernel image] {what} ...")
    yield
    progress(f"[hermes-kernel image] {what}: done in {time.monotonic() - start:.1f} s")


def main(argv: list[str] | None = None) -> int:
    """Build the kernel host image from a shell; exit status 0 when it is ready.

    :param argv: command line arguments (``[--tag TAG]``); ``None`` reads ``sys.argv``.
    :returns: the process exit status.
    """
    import argparse

    parser = argparse.ArgumentParser(prog="python -m pytest_hermes_kernel.images")
    parser.add_argument("--tag", default=KERNEL_HOST_TAG, help="kernel host image tag")
    args = parser.parse_args(argv)
    try:
        ensure_image(tag=args.tag, progress=lambda line: print(line, flush=True))
    except ImageBuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
