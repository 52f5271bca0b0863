"""Found reviewing the resource-exhaustion round (2026-12-05): the docker engine check's socket
could not be made, and every such failure was called this process running out of file
descriptors, with its ``ulimit -n``: also the machine's whole fd table full (``ENFILE``: raising
``ulimit -n`` does not help) and a socket refused for another reason (``EACCES`` from a seccomp or
LSM policy, ``ENOBUFS``). Each now says what it is; only ``EMFILE`` names ``ulimit -n``."""

from __future__ import annotations

import errno
import os
import resource
from types import SimpleNamespace

import pytest

from pytest_hermes_kernel.containers import engines
from pytest_hermes_kernel.errors import TransportUnavailableError


def refused(code: int):
    def make(*_args: object) -> None:
        raise OSError(code, os.strerror(code))
    return make


@pytest.mark.parametrize(("code", "says", "not_says"), [
    (errno.EMFILE, f"run out of file descriptors (ulimit -n {resource.getrlimit(resource.RLIMIT_NOFILE)[0]})", None),
    (errno.ENFILE, "this machine has run out of file descriptors", "ulimit -n"),
    (errno.EACCES, "Permission denied", "file descriptors"),
    (errno.ENOBUFS, "No buffer space available", "file descriptors"),
])
def test_a_socket_that_cannot_be_made_says_why(monkeypatch: pytest.MonkeyPatch, code: int, says: str,
                                               not_says: str | None) -> None:
    import socket

    monkeypatch.setattr(engines, "socket", SimpleNamespace(socket=refused(code), AF_UNIX=socket.AF_UNIX,
                                                           SOCK_STREAM=socket.SOCK_STREAM))  # this check's only
    with pytest.raises(TransportUnavailableError) as info:
        engines.check_answers("unix:///var/run/docker.sock")
    text = str(info.value)
    assert says in text and "unix:///var/run/docker.sock" in text, text
    assert not_says is None or not_says not in text, text
