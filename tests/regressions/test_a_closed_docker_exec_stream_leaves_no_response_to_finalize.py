"""A closed docker exec stream leaves no HTTP response whose finalizer fails (Python 3.13).

docker-py's ``exec_start(socket=True)`` hands back the connection's ``SocketIO`` and keeps the
HTTP response alive on it (``_response``); the response's buffered reader wraps that same
``SocketIO``. :class:`DockerExecStream` closed the ``SocketIO`` only, so when the response was
collected later its ``close()`` flushed a reader over a closed file: ``ValueError: I/O operation
on closed file``. Python 3.10-3.12 drop an error in an ``IOBase`` finalizer silently; 3.13 logs it
through ``sys.unraisablehook``: every ended docker kernel printed ``Exception ignored in:
<http.client.HTTPResponse ...>``, which pytest turns into ``PytestUnraisableExceptionWarning``
(an error under ``filterwarnings = error``: 18 of the regression tests on docker failed so).
The filecell transport's ``DockerExecBackend`` closed its execs the same way.
"""

from __future__ import annotations

import gc
import sys
from typing import Any

import pytest

from pytest_hermes_kernel.transports import get_transport

pytestmark = pytest.mark.usefixtures("docker_ready")


def test_a_closed_exec_streams_http_response_is_closed_and_finalized_quietly(monkeypatch: pytest.MonkeyPatch) -> None:
    transport: Any = get_transport("docker")
    stream = transport.open_exec(transport.shared_container(), ["cat"])
    response = stream._hijacked._response  # docker-py's requests.Response, kept alive on the SocketIO
    http_response = response.raw._fp  # http.client.HTTPResponse: the object whose finalizer failed
    stream.send(b"x")
    stream.close()

    assert http_response.isclosed(), "closing the stream left its HTTP response open"
    seen: list[str] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda info: seen.append(f"{info.object!r}: {info.exc_value!r}"))
    del stream, response, http_response
    gc.collect()
    assert not seen, seen


def test_the_docker_execute_only_backend_leaves_no_http_response_to_finalize(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_hermes_kernel.transports.filecell.backends import DockerExecBackend

    docker: Any = get_transport("docker")
    backend = DockerExecBackend(docker.shared_container(), client=docker.client)
    assert backend.execute("echo hi", 30) == (0, "hi\n")  # (its `timeout` probe runs first, once)
    gc.collect()
    seen: list[str] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda info: seen.append(f"{info.object!r}: {info.exc_value!r}"))
    assert backend.execute("echo again", 30) == (0, "again\n")
    gc.collect()
    assert not seen, seen
