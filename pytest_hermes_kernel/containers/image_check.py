"""What a kernel host image needs, checked on a real container; and when a missing image is pulled.

An image for the docker transport needs ``python3`` (3.8 or newer: the runner is stdlib only),
a POSIX ``/bin/sh``, an init as PID 1 (``tini``, ``dumb-init``, or docker's ``--init``: a
detached kernel runner reparents to PID 1 when its ``docker exec`` ends and must be reaped),
and a ``hermes`` user (kernels run as that user, never as root). For the ssh transport it also
needs ``sshd`` and an entrypoint that installs ``$HERMES_AUTHORIZED_KEY`` for ``hermes`` (see
the ``kernel-host`` Dockerfile and entrypoint.sh shipped in this package).

:func:`check_image` runs one throwaway container of the image with networking off and reports
each need. :func:`require_image` is what a container start calls: a missing image is pulled
only when its name names a registry (``host[:port]/...``, e.g. ``127.0.0.1:5000/kernels:1``);
a bare name such as ``myimage:1`` is never pulled (it would go to Docker Hub, beyond the
loopback this kit keeps to), and the error says how to build or name it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import ConfigError, ImageMissingError
from .engines import engine_url

if TYPE_CHECKING:
    import docker

#: Inside the image: one ``<need> ok <detail>`` or ``<need> missing <detail>`` line a need.
_PROBE = r"""
if command -v python3 >/dev/null 2>&1 && python3 -c 'import sys; sys.exit(sys.version_info < (3, 8))'; then
  echo "python3 ok $(python3 -c 'import sys; print(sys.version.split()[0])')"
else
  echo "python3 missing no python3 3.8+ on PATH"
fi
if id -u hermes >/dev/null 2>&1; then echo "user ok hermes is uid $(id -u hermes)"; else echo "user missing no user hermes"; fi
if command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ]; then echo "sshd ok $(command -v sshd || echo /usr/sbin/sshd)"; else echo "sshd missing no sshd"; fi
"""

#: Needs whose absence makes the image unusable for the docker transport (sshd: ssh only).
REQUIRED = ("sh", "python3", "init", "user")
_INITS = ("tini", "dumb-init", "docker-init", "catatonit")


@dataclass(frozen=True)
class ImageCheck:
    """One need of a kernel host image: ``need`` (``sh``, ``python3``, ``init``, ``user``,
    ``sshd``), whether the image meets it, and what was found or what to do."""

    need: str
    ok: bool
    detail: str


def check_image(client: docker.DockerClient, image: str) -> list[ImageCheck]:
    """Check ``image`` (which must be on the engine) for every need, one container, network off.

    :raises ImageMissingError: if the image is not on the engine.
    """
    import docker as docker_mod

    try:
        config = client.images.get(image).attrs.get("Config") or {}
    except docker_mod.errors.ImageNotFound:
        raise ImageMissingError(f"image {image} is not on the docker engine at {engine_url(client)}\n"
                                f"Hint: {missing_image_hint(image)}", image=image) from None
    checks = [_init_check(config.get("Entrypoint") or [])]
    try:
        out = client.containers.run(image, entrypoint=["/bin/sh", "-c", _PROBE], network_mode="none",
                                    remove=True, user="root", stdout=True, stderr=True)
    except docker_mod.errors.DockerException as exc:
        return [ImageCheck("sh", False, f"could not run /bin/sh in it: {_first_line(exc)}"), *checks]
    checks.insert(0, ImageCheck("sh", True, "/bin/sh runs"))
    for line in out.decode("utf-8", "replace").splitlines():
        need, _, rest = line.partition(" ")
        state, _, detail = rest.partition(" ")
        checks.append(ImageCheck(need, state == "ok", detail))
    return checks


def missing_image_hint(image: str) -> str:
    """What to do about ``image`` missing from the engine, as this kit handles image names: the kit's
    own image is built offline (``hermes-kernel build-image``); a bare name is never pulled (it
    would go to Docker Hub), so it is built or loaded here; a name with a registry is pulled.
    (It hinted ``docker pull`` for every name, bare ones too.)"""
    from .images import KERNEL_HOST_TAG

    if image == KERNEL_HOST_TAG:
        return "build it with `hermes-kernel build-image` (offline, from Debian packages; about 70 s once)"
    registry = names_registry(image)
    if registry is not None:
        return (f"the docker transport pulls it from {registry} when it first needs it; pull it now with "
                f"`docker pull {image}`, then check it again")
    return (f"build it (`docker build -t {image} ...`) or load it (`docker load -i FILE`) on this engine, then check "
            "it again: a name without a registry is never pulled (that would go to Docker Hub); the kit's own image "
            "builds offline with `hermes-kernel build-image`")


def _init_check(entrypoint: list[str]) -> ImageCheck:
    if any(part.rsplit("/", 1)[-1] in _INITS for part in entrypoint):
        return ImageCheck("init", True, f"entrypoint {' '.join(entrypoint)}")
    return ImageCheck("init", False, f"PID 1 is not an init (entrypoint {entrypoint or 'none'}): exited kernel "
                                     "runners would stay zombies. Use tini as ENTRYPOINT (the kit's image does)")


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


#: An image reference as docker parses it (distribution's ``reference`` grammar): an optional
#: registry ``host[:port]/``, lowercase path components, then an optional ``:tag`` and ``@digest``.
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN = r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\[[0-9a-fA-F:]+\])"
IMAGE_REFERENCE = re.compile(
    rf"(?:{_DOMAIN}(?::[0-9]+)?/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*(?::[\w][\w.-]{{0,127}})?"
    r"(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?")


def check_image_name(image: str, what: str = "") -> str:
    """``image``, if docker takes it as an image name (an engine asked for ``Kernels:1`` answered
    ``400 invalid reference format``, which reached the user as docker's traceback).

    :param what: what the message starts with (``"docker transport: image "``).
    :raises ConfigError: if it is not one; the message says what one looks like.
    """
    if not isinstance(image, str) or len(image) > 255 or not IMAGE_REFERENCE.fullmatch(image):
        raise ConfigError(f"{what}{image!r} is not a docker image name: lowercase letters, digits and '.', '_' or '-' "
                          "between them, an optional registry host[:port]/ first and :tag after, e.g. "
                          "registry.example:5000/team/kernels:1")
    return image


def image_name_argument(text: str) -> str:
    """:func:`check_image_name` as an ``argparse`` type: its error becomes the command's usage error."""
    import argparse

    try:
        return check_image_name(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def names_registry(image: str) -> str | None:
    """The registry host an image name names (``127.0.0.1:5000/a/b:1`` -> ``127.0.0.1:5000``), else ``None``."""
    first, sep, _ = image.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return first
    return None


def require_image(client: docker.DockerClient, image: str) -> None:
    """Make sure ``image`` is on the engine: pull it when its name names a registry.

    :raises ImageMissingError: if it is missing and has no registry in its name, or the pull
        failed (the message names the registry and the engine's answer).
    """
    import docker as docker_mod

    try:
        client.images.get(image)
        return
    except docker_mod.errors.ImageNotFound:
        pass
    registry = names_registry(image)
    if registry is None:
        raise ImageMissingError(
            f"image {image} is not on the docker engine at {engine_url(client)}, and its name names no registry, "
            "so it is not pulled.\nHint: build the kit's image with `hermes-kernel build-image`, build yours with "
            "`docker build`, or name its registry (`registry.example:5000/name:tag`); check an image with "
            f"`hermes-kernel doctor --image {image}`", image=image)
    try:
        client.images.pull(image)
    except docker_mod.errors.DockerException as exc:
        raise ImageMissingError(f"image {image} is not on the docker engine and could not be pulled from "
                                f"{registry}: {_first_line(exc)}\nHint: is the registry reachable from dockerd "
                                "and are you logged in (`docker login`)?", image=image) from None


def doctor_image_line(url: str | None = None) -> tuple[bool, str, str]:
    """``hermes-kernel doctor``'s word on the image the docker leg runs on the engine at ``url``: the run's
    ``PYTEST_HERMES_IMAGE`` when set (it checked the kit's image whatever the run named), else the kit's own,
    which is built on first use. ``(ok, what it saw, hint)``: a missing image that would not be pulled is a NO."""
    import os

    from .engines import engine_client
    from .images import KERNEL_HOST_TAG

    named = os.environ.get("PYTEST_HERMES_IMAGE", "").strip()
    image = named or KERNEL_HOST_TAG
    try:
        client = engine_client(url)
        try:
            client.images.get(image)
        finally:
            client.close()
        return True, f"image {image} present" + (" (PYTEST_HERMES_IMAGE)" if named else ""), ""
    except Exception:  # noqa: BLE001 - any docker error means "not there"
        if not named:
            return True, f"image {image} not built yet (it is built on first use, ~70 s)", ""
    if names_registry(image):
        return True, f"image {image} (PYTEST_HERMES_IMAGE) not here yet: it is pulled on first use", ""
    return False, f"image {image} (PYTEST_HERMES_IMAGE) is not on this engine, and a bare name is never pulled", (
        missing_image_hint(image) + f"; `hermes-kernel doctor --image {image}` checks it, or unset PYTEST_HERMES_IMAGE")
