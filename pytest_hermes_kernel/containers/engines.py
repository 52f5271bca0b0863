"""Docker engines by URL: a client for one (``None``: the environment's, ``DOCKER_HOST``), the
list of engines a run spreads kernels over, and an image copied from one engine to another.

An engine is named by its URL, as ``DOCKER_HOST`` takes it: ``unix:///path/docker.sock`` or
``tcp://127.0.0.1:2375``. In a list (``--hermes-docker-hosts``) the word ``default`` stands
for the environment's engine (``DOCKER_HOST``, else docker's default socket). Every client here
is docker-py's own (:class:`docker.DockerClient`), never the docker CLI and never a hard-coded
socket. ``docker`` is imported inside the functions.
"""

from __future__ import annotations

import errno
import os
import re
import resource
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from ..errors import ConfigError, ContainerStartError, ImageMissingError, KernelStartError, TransportUnavailableError
from ..kernel.output import redact

if TYPE_CHECKING:
    import docker

__all__ = ["DEFAULT_ENGINE", "check_answers", "copy_image", "engine_client", "engine_url", "parse_engine_list", "starting_on"]

#: The word for "the environment's engine" in an engine list.
DEFAULT_ENGINE = "default"
#: URL schemes docker-py reaches (``ssh://`` needs paramiko or the ssh client: not offered).
SCHEMES = ("unix", "tcp", "http", "https", "npipe")
#: docker-py's engine when ``DOCKER_HOST`` is unset.
DEFAULT_SOCKET = "unix:///var/run/docker.sock"
#: Seconds an engine has to answer its first ping.
PING_TIMEOUT_S = 10.0


def check_engine_url(url: str) -> str:
    """``url`` when it names an engine docker-py can reach (``default`` too), else a ConfigError.

    :raises ConfigError: if the scheme is not one of :data:`SCHEMES`, the address is missing, or a
        tcp/http(s) URL has no port in 1..65535.
    """
    if url == DEFAULT_ENGINE:
        return url
    if redact(url) != url:  # docker-py takes no password, and every message that named the engine showed it
        raise ConfigError(f"bad docker engine URL {redact(url)!r}: an engine URL holds no password (a remote "
                          "engine is reached over TLS: DOCKER_TLS_VERIFY, DOCKER_CERT_PATH)")
    try:  # a port out of range or no number, an unclosed [: docker-py's "did not answer", or a ValueError
        parsed = urlparse(url)
        by_path = parsed.scheme in ("unix", "npipe")
        ok = parsed.scheme in SCHEMES and bool(parsed.path if by_path else parsed.netloc and 0 < (parsed.port or 0))
    except ValueError:
        ok = False
    if not ok:
        raise ConfigError(f"bad docker engine URL {url!r}: expected unix:///path/docker.sock, tcp://host:port "
                          f"(a port 1..65535) or {DEFAULT_ENGINE!r} (the environment's engine, DOCKER_HOST)")
    return url


def parse_engine_list(text: str) -> tuple[str, ...]:
    """The engines of a comma list (``--hermes-docker-hosts``), checked, duplicates dropped.

    :raises ConfigError: if the list is empty or an entry is not an engine URL.
    """
    urls = tuple(dict.fromkeys(check_engine_url(u.strip()) for u in text.split(",") if u.strip()))
    if not urls:
        raise ConfigError("--hermes-docker-hosts needs at least one engine URL, e.g. "
                          "unix:///var/run/docker.sock,tcp://127.0.0.1:2375")
    return urls


def engine_client(url: str | None, *, timeout: float = 60.0) -> docker.DockerClient:
    """A client of the engine at ``url`` (``None`` or ``default``: the environment's) that answered a ping.

    :param url: the engine's URL.
    :param timeout: seconds each API call may take.
    :raises TransportUnavailableError: if the engine does not answer (the message names it).
    :raises ConfigError: if ``url`` is not an engine URL.
    """
    import docker as docker_sdk

    named = None if url in (None, DEFAULT_ENGINE) else check_engine_url(url)
    env = os.environ.get("DOCKER_HOST")
    target = named or env or DEFAULT_SOCKET
    where = named or f"{target} ({'DOCKER_HOST' if env else 'the default; DOCKER_HOST is unset'})"
    _check_socket(target, where)
    client = None
    try:  # the first call (API version) with a short timeout: an engine that does not answer fails fast
        client = docker_sdk.from_env(timeout=PING_TIMEOUT_S) if named is None else \
            docker_sdk.DockerClient(base_url=named, timeout=PING_TIMEOUT_S)
        client.ping()
    except Exception as exc:  # noqa: BLE001 - requests/urllib3 errors are not DockerException
        if client is not None:
            client.close()
        old = too_old_of("docker")  # docker 7.0 beside requests 2.32 fails every call: not the engine's fault
        if old is not None:  # (the skip said "did not answer ... is dockerd running?" of an engine that ran)
            raise TransportUnavailableError(f"{old[0]}: it cannot talk to the docker engine at {redact(where)} "
                                            f"({redact(str(exc))}). Hint: {old[1]}") from None
        raise TransportUnavailableError(f"the docker engine at {redact(where)} did not answer: {redact(str(exc))}. Hint: is dockerd "
                                        "running there, and may this user use its socket? is the URL right?") from None
    client.api.timeout = timeout
    return client


@contextmanager
def starting_on(url: str, kernel_id: str) -> Iterator[None]:
    """A kernel start's calls to the engine at ``url``: one the engine does not answer (its dockerd
    stopped mid-run, its socket gone) is a start error naming the engine (it was requests' bare
    ``ConnectionError: ('Connection aborted.', FileNotFoundError(...))``, naming none).

    :raises KernelStartError: if a call in the block found no engine answering at ``url``.
    """
    import requests

    try:
        check_answers(url)  # first: docker-py leaks the socket of a connect that fails
        yield
    except TransportUnavailableError as exc:
        raise KernelStartError(f"cannot start kernel {kernel_id}: {exc}") from None
    except (requests.exceptions.ConnectionError, requests.exceptions.Timeout) as exc:
        raise KernelStartError(f"cannot start kernel {kernel_id}: the docker engine at {url} did not answer: {exc}. "
                               "Hint: is dockerd still running there, and its socket or port the same?") from None


def check_answers(url: str) -> None:
    """Before docker-py calls engine ``url``: a unix socket engine's socket takes a connection
    (docker-py leaks the socket of each connect that fails: an engine gone mid-run made every
    leak probe there a ``ResourceWarning``, an error under ``-W error`` in whichever test ran next).

    :raises TransportUnavailableError: if it does not (the message names the engine).
    """
    _check_socket(url, url)


def _check_socket(url: str, where: str) -> None:
    """A unix socket engine: its socket accepts a connection (docker-py leaks the socket of one
    that fails while it makes a client).

    :raises TransportUnavailableError: if it does not.
    """
    if not url.startswith("unix://"):
        return
    path = url.removeprefix("unix://")
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    except OSError as exc:  # no fd left: it said the engine did not answer, asking whether dockerd runs
        hint = {errno.EMFILE: "this process has run out of file descriptors (ulimit -n "
                              f"{resource.getrlimit(resource.RLIMIT_NOFILE)[0]}): raise the limit, or end kernels or "
                              "files it holds",
                errno.ENFILE: "this machine has run out of file descriptors (fs.file-max): end processes or files "
                              "that hold them"}.get(exc.errno or 0, "no unix socket could be made here (the "
                                                                    "engine was not asked)")
        raise TransportUnavailableError(f"cannot ask the docker engine at {where}: {exc.strerror or exc}. "
                                        f"Hint: {hint}") from None
    try:
        with sock:
            sock.settimeout(PING_TIMEOUT_S)
            sock.connect(path)
    except OSError as exc:
        raise TransportUnavailableError(f"the docker engine at {where} did not answer: cannot connect to {path}: "
                                        f"{exc.strerror or exc}. Hint: is dockerd running there, and may this user "
                                        "use its socket? is the URL right?") from None


def engine_url(client: docker.DockerClient) -> str:
    """The URL of the engine ``client`` talks to, as a user names it (``unix:///...``, ``tcp://...``)."""
    from docker.transport.unixconn import UnixHTTPAdapter

    base = str(client.api.base_url)
    adapter = client.api.get_adapter(base)
    if isinstance(adapter, UnixHTTPAdapter):  # docker-py names a unix socket http+docker://localhost
        return f"unix://{adapter.socket_path}"
    return base.replace("http://", "tcp://", 1)

def is_full_container_id(name: str) -> bool:
    """Whether ``name`` is a full container id (64 hex digits): it names one container on its
    engine for good, so what is fixed at that container's creation (its user, its programs) may
    be remembered by it for the whole process; a name or short id may name another container later."""
    return _FULL_ID.fullmatch(name) is not None


_FULL_ID = re.compile(r"[0-9a-f]{64}")


def copy_image(tag: str, source: docker.DockerClient, target: docker.DockerClient) -> None:
    """Load image ``tag`` into engine ``target`` from engine ``source`` (``save`` + ``load``:
    same image id, labels kept), unless ``target`` has the same image already.

    :raises ImageMissingError: if ``source`` lacks it.
    :raises ContainerStartError: if the copy fails (both engines named).
    """
    import docker as docker_sdk

    try:
        image = source.images.get(tag)
    except docker_sdk.errors.ImageNotFound:
        raise ImageMissingError(f"image {tag} is on neither docker engine {engine_url(target)} nor "
                                f"{engine_url(source)}. Hint: `DOCKER_HOST={engine_url(source)} hermes-kernel "
                                "build-image`, or docker build it there", image=tag) from None
    try:
        if target.images.get(tag).id == image.id:
            return
    except docker_sdk.errors.ImageNotFound:
        pass
    try:
        # named=tag: saved under this tag (named=True takes the image's first tag, which may be another one)
        target.images.load(b"".join(image.save(named=tag)))
    except docker_sdk.errors.DockerException as exc:
        raise ContainerStartError(f"could not load image {tag} into docker engine {engine_url(target)} from "
                                  f"{engine_url(source)}: {exc}. " + (disk_full_hint(exc) or f"Hint: `docker save {tag} "
                                  f"| DOCKER_HOST={engine_url(target)} docker load`")) from None


def kill_signals(api: docker.APIClient, container_id: str, started_at: str) -> list[str]:
    """The signals the engine's events show the container was sent through it (``docker kill``,
    ``stop``, ``rm -f``) since ``started_at`` (its ``State.StartedAt``), each once, in order."""
    import datetime
    import time

    since = int(datetime.datetime.fromisoformat(started_at[:19] + "+00:00").timestamp())
    events = api.events(since=since, until=int(time.time()) + 1, decode=True,
                        filters={"container": container_id, "event": "kill"})
    return list(dict.fromkeys(str(e.get("Actor", {}).get("Attributes", {}).get("signal", "?")) for e in events))


def disk_full_hint(exc: Exception) -> str | None:
    """The hint for an engine that refused for want of disk (``no space left on device``), else ``None``."""
    said = str(exc).lower()
    if "no space left on device" not in said and "disk quota exceeded" not in said:
        return None
    return ("Hint: the docker engine's disk is full (its data root: `docker info --format '{{.DockerRootDir}}'`); "
            "free space there (`docker system df` shows what holds it), then run again")


def close_exec_socket(hijacked: object) -> None:
    """Close what ``APIClient.exec_start(..., socket=True)`` returned, and the HTTP response
    docker-py keeps alive on it (``_response``) first: that response's reader wraps the same
    socket, and collected after it, its ``close()`` flushed a closed file (``ValueError``), which
    Python 3.13 reports through ``sys.unraisablehook`` at every ended exec (3.10-3.12: silent)."""
    response = getattr(getattr(hijacked, "_response", None), "raw", None)
    for obj in (response, getattr(hijacked, "_sock", None), hijacked):
        try:
            if obj is not None:
                obj.close()  # type: ignore[attr-defined]
        except (OSError, ValueError):
            pass


#: The packages of each transport's extra (``pip install '.[ssh]'``), past those every leg needs.
EXTRA_PACKAGES: dict[str, tuple[str, ...]] = {"docker": ("docker", "testcontainers"),
                                              "ssh": ("paramiko", "docker", "testcontainers")}


def too_old_of(transport: str, *, core: bool = True) -> tuple[str, str] | None:
    """``("too old: docker 7.0.0 (docker>=7.1 needed)", "pip install -U 'docker>=7.1'")`` for the
    packages ``transport`` needs (:func:`too_old`), or ``None`` when none is under its minimum.

    :param core: count the packages every leg runs under (pytest, filelock, psutil) too.
    """
    old = too_old(*(("pytest", "filelock", "psutil") if core else ()), *EXTRA_PACKAGES.get(transport, ()))
    upgrade = " ".join(f"'{o.split()[0]}>={o.rsplit('>=', 1)[1].split()[0]}'" for o in old)
    return (f"too old: {', '.join(old)}", f"pip install -U {upgrade}") if old else None


def refuse_too_old(transport: str) -> None:
    """Refuse a ``docker`` or ``ssh`` transport whose extra's packages are older than this package
    declares, as ``hermes-kernel doctor`` calls its line ``NO`` (the ssh leg ran on paramiko 3.5
    while the doctor said NO, and its key files warned ``CryptographyDeprecationWarning``, an error
    under ``filterwarnings = error``).

    :raises TransportUnavailableError: if one is too old, naming it and the upgrade.
    """
    if (old := too_old_of(transport, core=False)) is not None:
        raise TransportUnavailableError(f"the {transport} transport cannot run here: {old[0]}, as `hermes-kernel "
                                        f"doctor` says. Hint: {old[1]}")


def too_old(*names: str) -> list[str]:
    """``'docker 7.0.0 (docker>=7.1 needed)'`` for each of ``names`` installed under the minimum this
    package's metadata declares for it (a later ``pip install`` may downgrade one, pip only warning).
    docker 7.0 with requests 2.32 made ``doctor`` say the engine did not answer, and to start it."""
    import re
    from importlib.metadata import PackageNotFoundError, requires, version

    def release(text: str) -> tuple[int, ...]:
        return tuple(int(part) for part in re.findall(r"\d+", text.split("+")[0])[:3])

    try:
        declared = requires("pytest-hermes-kernel") or []
    except PackageNotFoundError:
        return []
    old: dict[str, str] = {}
    for requirement in declared:
        match = re.match(r"\s*([A-Za-z0-9_.-]+)\s*>=\s*([0-9.]+)", requirement)
        if match and match.group(1).lower() in names:
            try:
                have = version(match.group(1))
            except PackageNotFoundError:  # not installed: the transport's own check says which extra
                continue
            if release(have) < release(match.group(2)):
                old[match.group(1)] = f"{match.group(1)} {have} ({match.group(1)}>={match.group(2)} needed)"
    return list(old.values())
