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
Run ``hermes-kernel build-image`` to build from a shell (CI does).
"""

from __future__ import annotations

import collections
import contextlib
import errno
import hashlib
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_hermes_kernel.containers.base_image import (
    BASE_TAG,
    HINT,
    LABEL_IMAGE,
    LOG_TAIL_LINES,
    Progress,
    build_base,
    step,
)
from pytest_hermes_kernel.containers.engines import disk_full_hint, too_old, too_old_of  # noqa: F401  # (cli reads them here)
from pytest_hermes_kernel.errors import ImageBuildError, TransportUnavailableError

if TYPE_CHECKING:
    import docker
    from docker.models.images import Image

__all__ = [
    "BASE_TAG", "KERNEL_HOST_TAG", "build_base", "content_hash", "context_dir",
    "docker_status", "ensure_image", "main",
]

KERNEL_HOST_TAG = "hermes-kernel-host:latest"
#: A real Debian image, used as base instead of the debootstrap one when it is already local.
SLIM_BASE_TAG = "debian:bookworm-slim"
LABEL_CONTENT_HASH = "org.hermes-kernel.content-hash"
#: The image build lock's name in the per-user directory (:func:`~.rundir.user_dir`): each user's own
#: (one file in the temp dir for every user was refused to all but the one who made it first).
LOCK_NAME = "image.lock"
#: A cold debootstrap + build takes 1-2 minutes here; waiting workers allow much more.
LOCK_TIMEOUT = 1800.0


def pip_install_extra(extra: str) -> str:
    """The ``pip install`` that adds ``extra`` to this package as it was installed. README installs
    it from a checkout (it is not on PyPI), and the hints said ``pip install
    'pytest-hermes-kernel[docker]'``, which asks PyPI for it; the package's ``direct_url.json``
    (PEP 610) names the directory it came from, and whether it was editable."""
    import json
    from importlib.metadata import PackageNotFoundError, distribution
    from urllib.parse import unquote, urlparse

    try:
        raw = distribution("pytest-hermes-kernel").read_text("direct_url.json") or "{}"
        origin = json.loads(raw)
    except (PackageNotFoundError, ValueError):
        origin = {}
    url = urlparse(str(origin.get("url", "")))
    if url.scheme != "file" or not url.path:
        return f"pip install 'pytest-hermes-kernel[{extra}]'"
    editable = "-e " if origin.get("dir_info", {}).get("editable") else ""
    return f"pip install {editable}'{unquote(url.path)}[{extra}]'"


def docker_status(url: str | None = None) -> tuple[bool, str]:
    """Tell whether a docker engine is reachable from this process; changes nothing.

    :param url: the engine (``unix:///...``, ``tcp://...``); ``None``: the environment's (``DOCKER_HOST``).
    :returns: ``(True, "docker engine <version> at <url>")`` or ``(False, reason + " Hint: ...")``.
    """
    try:
        import docker  # noqa: F401
    except ImportError:
        return False, (
            "the docker SDK is not installed. "
            f"Hint: {pip_install_extra('docker')}"
        )
    from .engines import engine_client, engine_url
    from ..errors import HermesKernelError

    try:
        client = engine_client(url, timeout=10)
    except HermesKernelError as exc:
        return False, str(exc)
    try:
        return True, f"docker engine {client.version().get('Version', '?')} at {engine_url(client)}"
    except Exception as exc:  # noqa: BLE001 - requests/urllib3 errors are not DockerException
        return False, f"docker engine at {engine_url(client)} did not answer: {exc}. Hint: is dockerd running there?"
    finally:
        client.close()


def ensure_image(
    client: docker.DockerClient | None = None,
    *,
    tag: str = KERNEL_HOST_TAG,
    progress: Progress = print,
    lock_path: str | None = None,
    lock_timeout: float = LOCK_TIMEOUT,
) -> str:
    """Build the kernel host image unless an image ``tag`` with the same content hash exists.

    Builds the base first when missing (debootstrap + ``docker import``). Holds ``lock_path``
    while checking and building, so concurrent callers build once.

    :param client: docker-py client; ``None`` opens one from the environment.
    :param tag: tag of the kernel host image.
    :param progress: called with one line per step (with elapsed seconds).
    :param lock_path: inter-process lock file; ``None``: :data:`LOCK_NAME` in this user's own
        ``<tmp>/pytest-hermes-kernel-<uid>/``.
    :param lock_timeout: seconds to wait for another process's build.
    :returns: ``tag``, ready to run.
    :raises ImageBuildError: if the engine, debootstrap, the import or the build fails, or the
        lock is not obtained within ``lock_timeout`` or cannot be opened; the message has the log
        tail and a hint.
        A process tries once per tag: later calls raise the first failure again at once (a
        debootstrap from a mirror that does not answer took minutes, paid again by every test).
    """
    import filelock

    if tag in _failed:
        raise ImageBuildError(f"{_failed[tag]}\n(the build of {tag} failed earlier in this process, as above; "
                              "it is not tried again until the process restarts)")
    if lock_path is None:
        from .rundir import user_dir

        try:
            lock_path = os.path.join(user_dir(), LOCK_NAME)
        except OSError as exc:  # a full temp dir: a bare OSError (docker blamed its engine), not the run's files'
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
                raise
            from .sharing import run_file_error

            raise ImageBuildError(f"cannot make the dir of the image build's lock, {exc.filename}: "
                                  f"{run_file_error(exc)}") from None
    owned = client is None
    client = _client() if client is None else client
    lock = filelock.FileLock(lock_path, timeout=lock_timeout)
    try:
        with _holding(lock, lambda: progress(f"[hermes-kernel image] waiting for {lock_path}")):
            return _ensure_locked(client, tag, progress)
    except filelock.Timeout as exc:
        _failed[tag] = ImageBuildError(
            f"another process held {lock_path} for more than {lock_timeout:g} s "
            f"while building {tag}.\nHint: is another pytest run or xdist worker stuck in "
            "`debootstrap` or `docker build`? (the lock is released when that process ends)")
        raise _failed[tag] from exc
    except ImageBuildError as exc:
        _failed[tag] = exc
        raise
    finally:
        if owned:
            client.close()


#: The first build failure of each tag in this process (see :func:`ensure_image`).
_failed: dict[str, ImageBuildError] = {}


@contextlib.contextmanager
def _holding(lock: Any, on_wait: Callable[[], object]) -> Iterator[None]:
    """Hold ``lock``, calling ``on_wait`` first if another process has it (a build runs)."""
    import filelock

    try:
        lock.acquire(timeout=0)
    except filelock.Timeout:
        on_wait()
        lock.acquire()
    except OSError as exc:  # the lock file itself (filelock.Timeout is an OSError too: caught above)
        raise ImageBuildError(f"cannot open the image build lock {lock.lock_file}: {exc.strerror or exc}\n"
                              "Hint: it must be a file this user may write") from None
    try:
        yield
    finally:
        lock.release()


def context_dir() -> Path:
    """Find the kernel host build context, from a checkout or from an installed wheel.

    :returns: the directory holding the ``Dockerfile``.
    :raises ImageBuildError: if ``pytest_hermes_kernel/containers/kernel-host`` is missing.
    """
    context = Path(__file__).resolve().parent / "kernel-host"  # package data: checkout and wheel alike
    if (context / "Dockerfile").is_file():
        return context
    raise ImageBuildError(
        f"kernel host build context not found: {context}/Dockerfile is missing"
        "\nHint: reinstall pytest-hermes-kernel; the wheel ships containers/kernel-host/ as package data."
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


def _client() -> docker.DockerClient:
    """The environment's engine (``DOCKER_HOST``), for a build (API calls may take 600 s).

    :raises ImageBuildError: if it does not answer: one line that names it, with its own hint
        (it was urllib3's ``Connection aborted`` text, and the build's hint on debootstrap).
    """
    from .engines import engine_client

    try:
        return engine_client(None, timeout=600)
    except TransportUnavailableError as exc:
        raise ImageBuildError(f"no docker engine: {exc}") from None


def _ensure_locked(client: docker.DockerClient, tag: str, progress: Progress) -> str:
    start = time.monotonic()
    base = _ensure_base(client, progress)
    base_id = client.images.get(base).id
    context = context_dir()
    wanted = content_hash(context, base_id)
    old = _image(client, tag)
    if old is not None and (old.labels or {}).get(LABEL_CONTENT_HASH) == wanted:
        progress(f"[hermes-kernel image] {tag} is up to date ({wanted[:12]})")
        return tag
    with step(progress, f"docker build {tag} from {context} on {base}"):
        _build(client, context, tag, base, wanted)
    if old is not None:
        _remove_unused(client, old.id)
    progress(f"[hermes-kernel image] {tag} ready after {time.monotonic() - start:.1f} s")
    return tag


def _image(client: docker.DockerClient, tag: str) -> Image | None:
    import docker

    try:
        return client.images.get(tag)
    except docker.errors.ImageNotFound:
        return None


def _remove_unused(client: docker.DockerClient, image_id: str | None) -> None:
    """Drop the image a rebuild replaced, unless a container still uses it."""
    import docker

    if not image_id:
        return
    try:
        if not client.images.get(image_id).tags:  # untagged by the rebuild, not tagged elsewhere
            client.images.remove(image_id)
    except docker.errors.APIError:
        pass  # gone already, or still used by a container: docker keeps it, and so do we


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
    hint = disk_full_hint(Exception(f"{message}\n{tail}")) or HINT  # a full engine: not dockerd, debootstrap or a mirror
    return ImageBuildError(f"{message}\n-- last build log lines --\n{tail}\n{hint}", log_tail=tail)


def main(argv: list[str] | None = None) -> int:
    """Build the kernel host image from a shell; exit status 0 when it is ready.

    :param argv: command line arguments (``[--tag TAG]``); ``None`` reads ``sys.argv``.
    :returns: the process exit status.
    """
    import argparse

    parser = argparse.ArgumentParser(prog="hermes-kernel build-image")
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
