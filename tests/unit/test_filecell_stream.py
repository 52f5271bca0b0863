"""FileCellStream with a scripted site: which frames go where, and what reaches the channel."""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.support import wait_until
from pytest_hermes_kernel.kernel.results import FrameDecoder, encode_frame
from pytest_hermes_kernel.transports.filecell import scripts
from pytest_hermes_kernel.transports.filecell.stream import FileCellStream
from pytest_hermes_kernel.transports.runner_zipapp import runner_zipapp

HELLO = encode_frame({"type": "hello", "worker_pid": 77})


class ScriptedSite:
    """Each ``poll`` records its arguments and blocks until the test hands it an output."""

    def __init__(self) -> None:
        self.polls: queue.Queue[dict[str, Any]] = queue.Queue()
        self.outputs: queue.Queue[scripts.ClientOutput] = queue.Queue()
        self.drops: list[tuple[bytes, int]] = []

    def poll(self, frames: bytes, **kwargs: Any) -> scripts.ClientOutput:
        self.polls.put({"frames": frames, **kwargs})
        out = self.outputs.get(timeout=10)
        if isinstance(out, BaseException):  # the backend's execute raised
            raise out
        return out

    def drop(self, frames: bytes, seq: int) -> None:
        self.drops.append((frames, seq))


def _types(data: bytes) -> list[tuple[str, Any]]:
    decoder = FrameDecoder()
    decoder.feed(data)
    out = []
    while (frame := decoder.next_frame()) is not None:
        out.append((frame[0]["type"], frame[0].get("id")))
    return out


def _done(*frames: dict[str, Any]) -> scripts.ClientOutput:
    return scripts.ClientOutput(frames=[HELLO, *(encode_frame(f) for f in frames)], began=True, sent=True,
                                status="done")


@pytest.fixture
def site() -> ScriptedSite:
    return ScriptedSite()


@pytest.fixture
def stream(site: ScriptedSite):
    s = FileCellStream(site, [HELLO])
    yield s
    s.close()
    while s._polls:  # release polls the test left waiting
        site.outputs.put(scripts.ClientOutput(status="eof"))
        s.join(1.0)


def test_launch_hello_is_delivered_once_and_no_poll_runs_for_it(stream, site):
    assert _types(stream.recv(1.0)) == [("hello", None)]
    with pytest.raises(TimeoutError):
        stream.recv(0.05)  # nothing outstanding: nothing to poll for
    assert site.polls.empty() and stream.worker_pid == 77


def test_a_cell_is_one_poll_and_later_hellos_and_replays_are_dropped(stream, site):
    stream.recv(1.0)
    stream.send(encode_frame({"type": "execute", "id": 1, "code": "1"}))
    poll = site.polls.get(timeout=5)
    assert _types(poll["frames"]) == [("execute", 1)] and poll["wait"] == [1] and poll["pending"] == [1]
    result = {"type": "result", "id": 1, "status": "ok"}
    site.outputs.put(_done(result, result))  # relayed by a pushed-out client and replayed

    assert _types(stream.recv(5.0)) == [("result", 1)]
    with pytest.raises(TimeoutError):
        stream.recv(0.05)
    assert site.polls.empty()


def test_frames_sent_while_a_poll_waits_are_dropped_interrupts_too(stream, site):
    stream.recv(1.0)
    stream.send(encode_frame({"type": "execute", "id": 1, "code": "import time; time.sleep(9)"}))
    first = site.polls.get(timeout=5)  # started by send itself

    stream.send(encode_frame({"type": "interrupt", "id": 1}))  # the execute may not be there yet

    assert [_types(f) for f, _ in site.drops] == [[("interrupt", 1)]]
    assert site.drops[0][1] >= first["early"] + 1  # sent after the poll's own frames
    site.outputs.put(scripts.ClientOutput(frames=[HELLO], began=True, sent=True, status="deadline"))
    waiter = threading.Thread(target=lambda: stream.recv(5.0), daemon=True)
    waiter.start()
    second = site.polls.get(timeout=5)  # only waits: everything before it was delivered
    assert second["frames"] == b"" and second["wait"] == [1]

    stream.send(encode_frame({"type": "interrupt", "id": 1}))
    stream.send(encode_frame({"type": "kill_worker", "id": 2}))

    assert [_types(f) for f, _ in site.drops[1:]] == [[("interrupt", 1)], [("kill_worker", 2)]]
    site.outputs.put(_done({"type": "result", "id": 1, "status": "died"}, {"type": "killed", "id": 2}))
    waiter.join(5)


def test_a_runner_that_is_gone_ends_the_stream(stream, site):
    stream.recv(1.0)
    stream.send(encode_frame({"type": "execute", "id": 1, "code": "1"}))
    site.polls.get(timeout=5)
    site.outputs.put(scripts.ClientOutput(began=True, status="gone"))
    with pytest.raises(ConnectionResetError, match="the kernel runner is gone .*same filesystem"):
        stream.recv(5.0)
    assert "gone" in (stream.broken or "")
    with pytest.raises(BrokenPipeError):
        stream.send(encode_frame({"type": "execute", "id": 2, "code": "1"}))


def test_frames_a_failed_client_never_sent_go_again(stream, site):
    stream.recv(1.0)
    stream.send(encode_frame({"type": "execute", "id": 1, "code": "1"}))
    site.polls.get(timeout=5)
    site.outputs.put(scripts.ClientOutput(noise=["python3: not found"]))  # never began, never sent
    with pytest.raises(TimeoutError):
        stream.recv(1.0)  # retried after a back-off
    again = site.polls.get(timeout=5)
    assert _types(again["frames"]) == [("execute", 1)]
    site.outputs.put(_done({"type": "result", "id": 1, "status": "ok"}))
    assert _types(stream.recv(5.0)) == [("result", 1)]


def _headers(data: bytes) -> list[dict[str, Any]]:
    decoder = FrameDecoder()
    decoder.feed(data)
    return [frame[0] for frame in iter(decoder.next_frame, None)]


def test_a_cell_whose_poll_failed_goes_again_marked_as_the_same_cell(stream, site):
    stream.recv(1.0)
    stream.send(encode_frame({"type": "execute", "id": 1, "code": "1"}))
    site.polls.get(timeout=5)
    site.outputs.put(TimeoutError("the backend's own limit"))  # the client may have sent it
    with pytest.raises(TimeoutError):
        stream.recv(1.0)
    again = site.polls.get(timeout=5)
    assert [(h["type"], h["id"], h.get("again")) for h in _headers(again["frames"])] == [("execute", 1, True)]


def test_a_restart_whose_poll_failed_is_never_sent_twice(stream, site):
    """A ``kill_worker`` the runner got and got again would kill the fresh worker its
    ``start_worker`` had made: a failed poll that may have sent them breaks the stream, named."""
    stream.recv(1.0)
    stream.send(encode_frame({"type": "kill_worker", "id": 1}) + encode_frame({"type": "start_worker", "id": 2}))
    site.polls.get(timeout=5)
    site.outputs.put(TimeoutError("the backend's own limit"))
    with pytest.raises(ConnectionResetError, match="a poll carrying frames failed .*TimeoutError"):
        stream.recv(5.0)
    assert site.polls.empty()


def test_the_poll_command_runs_the_shipped_runner_files_client(tmp_path: Path):
    app = runner_zipapp("compact")  # the file the filecell transport ships
    (tmp_path / app.name).write_bytes(app.data)
    cmd = scripts.client_command(kdir=str(tmp_path), python=sys.executable, runner=app.name,
                                 params=scripts.params(wait=[], deadline_s=1.0))
    out = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=30)
    parsed = scripts.parse_client_output(out.stdout)
    assert (out.returncode, parsed.began, parsed.sent, parsed.status) == (0, True, False, "gone"), out
    assert not parsed.noise and not out.stderr


def test_client_output_parses():
    frame = encode_frame({"type": "hello"})
    text = "\n".join(["noise", "@@hermes-client begin@@", "@@hermes-client sent@@", scripts.b64(frame),
                      "not base64!", "@@hermes-client end done@@"])
    parsed = scripts.parse_client_output(text)
    assert (parsed.frames, parsed.sent, parsed.status) == ([frame], True, "done")
    assert parsed.noise == ["noise", "not base64!"]


def test_an_interrupt_naming_a_cell_that_has_ended_is_never_a_signal(stream, site):
    """``interrupt()`` on a thread that took the running cell just before it ended can send its
    frame while the next cell runs: a signal would interrupt that cell, so it goes to the
    supervisor, which knows which cell runs."""
    stream.recv(1.0)
    stream.send(encode_frame({"type": "execute", "id": 1, "code": "1"}))
    site.polls.get(timeout=5)
    site.outputs.put(_done({"type": "result", "id": 1, "status": "ok"}))
    assert _types(stream.recv(5.0)) == [("result", 1)]
    stream.send(encode_frame({"type": "execute", "id": 2, "code": "import time; time.sleep(9)"}))
    site.polls.get(timeout=5)
    site.outputs.put(scripts.ClientOutput(frames=[HELLO], began=True, sent=True, status="deadline"))
    waiter = threading.Thread(target=lambda: stream.recv(5.0), daemon=True)
    waiter.start()
    assert site.polls.get(timeout=5)["frames"] == b""  # only waits: cell 2 is at the worker

    stream.send(encode_frame({"type": "interrupt", "id": 1, "n": 1}))

    assert [_types(f) for f, _ in site.drops] == [[("interrupt", 1)]]
    site.outputs.put(_done({"type": "result", "id": 2, "status": "interrupted"}))
    waiter.join(5)


def _recv_quietly(stream: FileCellStream) -> None:
    """A channel's wait, on a thread: a test's fake clock may run it out (nothing to report)."""
    try:
        stream.recv(5.0)
    except TimeoutError:
        pass


def test_an_interrupt_behind_an_execute_dropped_while_a_frameless_poll_runs_is_not_a_signal(site):
    """A cell long enough for a poll to hand over to another leaves the pushed-out frameless poll
    running a moment after its result came: the next cell's ``execute`` is dropped then, and
    reaches the supervisor only when a client picks it up. Its interrupt must not overtake it."""
    clock = [0.0]
    stream = FileCellStream(site, [HELLO], poll_window_s=10.0, handover_s=3.0, clock=lambda: clock[0])
    try:
        stream.recv(1.0)
        stream.send(encode_frame({"type": "execute", "id": 1, "code": "import time; time.sleep(30)"}))
        site.polls.get(timeout=5)
        site.outputs.put(scripts.ClientOutput(frames=[HELLO], began=True, sent=True, status="deadline"))
        threading.Thread(target=_recv_quietly, args=(stream,), daemon=True).start()
        assert site.polls.get(timeout=5)["frames"] == b""
        clock[0] = 8.0  # near the frameless poll's deadline: the next one takes over
        threading.Thread(target=_recv_quietly, args=(stream,), daemon=True).start()
        assert site.polls.get(timeout=5)["frames"] == b""
        site.outputs.put(_done({"type": "result", "id": 1, "status": "ok"}))  # one poll brings the result
        wait_until(lambda: len(stream._polls) == 1, 5, what="one poll left running")

        stream.send(encode_frame({"type": "execute", "id": 2, "code": "import time; time.sleep(30)"}))
        stream.send(encode_frame({"type": "interrupt", "id": 2, "n": 1}))

        drops = [_types(f) for f, _ in site.drops]
        assert drops[0] == [("execute", 2)] and [("interrupt", 2)] in drops[1:], drops  # in band, behind it
    finally:
        stream.close()
        while stream._polls:
            site.outputs.put(scripts.ClientOutput(status="eof"))
            stream.join(1.0)
