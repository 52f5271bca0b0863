"""The base of the kernel host image: Debian bookworm from debootstrap, without any registry.

``build_base`` runs ``debootstrap --variant=minbase`` against the Debian mirror this machine's
apt already uses (never another host), packs the rootfs with ``tar`` and imports it with
docker-py as ``hermes-kernel-base:bookworm``. Callers hold the image lock (see
:func:`pytest_hermes_kernel.containers.images.ensure_image`). Needs root and the ``debootstrap`` package.
"""

from __future__ import annotations

import collections
import contextlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_hermes_kernel.containers.engines import disk_full_hint
from pytest_hermes_kernel.errors import ImageBuildError

if TYPE_CHECKING:
    import docker

Progress = Callable[[str], object]

BASE_TAG = "hermes-kernel-base:bookworm"
SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
MIRROR_ENV = "PYTEST_HERMES_DEBIAN_MIRROR"
#: Installed into the rootfs; tini is PID 1 of the kernel host (it reaps orphaned processes).
BASE_PACKAGES = ("python3", "openssh-server", "procps", "tini")
LABEL_IMAGE = "org.hermes-kernel.image"
LOG_TAIL_LINES = 20
HINT = (
    "Hint: is dockerd running (`docker info`)? is debootstrap installed "
    "(`apt-get install -y debootstrap`)? is the Debian mirror reachable? "
    "Building the base needs root."
)


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
    workdir = Path(tempfile.mkdtemp(prefix="pytest-hermes-rootfs-"))
    rootfs = workdir / "rootfs"
    try:
        with step(progress, f"debootstrap {SUITE} (minbase) from {mirror}"):
            _debootstrap(rootfs, mirror)
        tarball = workdir / "rootfs.tar"
        with step(progress, f"tar the rootfs into {tarball}"):
            run_logged(_tar_command(rootfs, tarball), what="tar of the rootfs")
        with step(progress, f"docker import -> {tag}"):
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
    run_logged(command, what="debootstrap", inner_log=rootfs / "debootstrap" / "debootstrap.log")


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
        client.api.import_image(
            src=str(tarball), repository=repository, tag=version, changes=changes
        )
        client.images.get(tag)
    except Exception as exc:
        raise ImageBuildError(f"docker import of {tarball} as {tag} failed: {exc}\n{disk_full_hint(exc) or HINT}") from exc


def run_logged(command: list[str], *, what: str, inner_log: Path | None = None) -> None:
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
        more_text = _file_tail(inner_log) if inner_log else ""
        raise ImageBuildError(
            f"{what} exited with {process.returncode}: {' '.join(command)}\n"
            f"-- last output lines --\n{tail}\n{more_text}{HINT}",
            log_tail=tail,
        )


def _file_tail(path: Path) -> str:
    lines = _read_text(path).splitlines()[-LOG_TAIL_LINES:]
    return f"-- {path.name} --\n" + "\n".join(lines) + "\n" if lines else ""


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
def step(progress: Progress, what: str) -> Iterator[None]:
    """Report the start of a build step and, when it succeeds, its elapsed seconds."""
    start = time.monotonic()
    progress(f"[hermes-kernel image] {what} ...")
    yield
    progress(f"[hermes-kernel image] {what}: done in {time.monotonic() - start:.1f} s")
