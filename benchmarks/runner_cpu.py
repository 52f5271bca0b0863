"""CPU per trivial cell of the kernel runner's supervisor and worker, beside its protocol's floor.

    python benchmarks/runner_cpu.py [--cells 5000] [--rounds 3] [--cpu 1] [--checkout DIR ...]

``runner``: a real supervisor (``run_on_channel``, as a kernel server's fork runs it) and its
worker, driven by a minimal host over a socketpair: ``execute`` of ``1``, read to its ``result``;
the figure is each process's user + system CPU (``/proc/<pid>/stat``) per cell after a warm-up.
``floor``: a minimal Python pair with the same shape and codec (the host's request decoded and
re-encoded to the worker, the worker's ``running`` and ``result`` frames, the result re-encoded
with four empty blobs to the host), nothing else: what Python framing over these sockets costs.
``--cpu N`` pins every process to CPU N (default 1: one CPU makes the figures steady on a shared
machine, no cross-CPU wake-ups; ``--cpu -1`` leaves them unpinned). Checkouts (``--checkout``,
default this one) run in alternating rounds; the figures are medians over the rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
WARM_UP = 500


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _floor_supervisor(chan: socket.socket, sock: socket.socket) -> None:
    from pytest_hermes_kernel.kernel.runner.frames import FrameDecoder, encode_frame

    import selectors

    sel = selectors.DefaultSelector()
    sel.register(chan, selectors.EVENT_READ, "host")
    sel.register(sock, selectors.EVENT_READ, "worker")
    host, worker = FrameDecoder(), FrameDecoder()
    while True:
        for key, _ in sel.select():
            src, dec = (chan, host) if key.data == "host" else (sock, worker)
            data = src.recv(65536)
            if not data:
                return
            dec.feed(data)
            while (frame := dec.next_frame()) is not None:
                msg = frame[0]
                if key.data == "host":
                    sock.sendall(encode_frame({k: v for k, v in msg.items() if k in ("type", "id", "code", "tools")}))
                elif msg["type"] == "result":
                    counts = {"stdout_total": 0, "stdout_dropped": 0, "stderr_total": 0, "stderr_dropped": 0,
                              "stdout_stray": 0, "stderr_stray": 0, "worker_pid": 1, "worker_generation": 1}
                    chan.sendall(encode_frame(dict(msg, **counts), (b"", b"", b"", b"")))


def _floor_worker(sock: socket.socket) -> None:
    from pytest_hermes_kernel.kernel.runner.frames import FrameDecoder, encode_frame

    dec, count = FrameDecoder(), 0
    while True:
        while (frame := dec.next_frame()) is None:
            data = sock.recv(65536)
            if not data:
                return
            dec.feed(data)
        msg, count = frame[0], count + 1
        sock.sendall(encode_frame({"type": "running", "id": msg["id"]}))
        sock.sendall(encode_frame({"type": "result", "id": msg["id"], "status": "ok", "value": "1",
                                   "caught_interrupt": False, "execution_count": count, "duration_s": 1e-5}))


def _start(mode: str, chan: socket.socket, host: socket.socket) -> int:
    """Fork the supervisor of ``mode`` on ``chan`` (``host``: the host's end, closed in it); its pid."""
    if mode == "floor":
        up, down = socket.socketpair()
        sup = os.fork()
        if sup == 0:
            host.close()
            if os.fork() == 0:
                chan.close()
                up.close()
                _floor_worker(down)
                os._exit(0)
            down.close()
            _floor_supervisor(chan, up)
            os._exit(0)
        down.close()
        up.close()
        return sup
    from pytest_hermes_kernel.kernel.runner.serve import run_on_channel

    sup = os.fork()
    if sup == 0:
        host.close()
        run_on_channel({"max_output_bytes": 1 << 20}, chan)
        os._exit(0)
    return sup


def _only_child(pid: int, timeout: float = 10.0) -> int:
    """The pid of process ``pid``'s child, once it has one (waited for up to ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        if children:
            return int(children[0])
        time.sleep(0.01)
    raise TimeoutError(f"process {pid} started no worker within {timeout} s")


def measure(mode: str, cells: int) -> dict[str, float]:
    """One run of ``mode`` (``runner`` or ``floor``): wall and CPU microseconds per cell."""
    from pytest_hermes_kernel.kernel.runner.frames import FrameDecoder, encode_frame

    host, chan = socket.socketpair()
    sup = _start(mode, chan, host)
    chan.close()
    dec = FrameDecoder()

    def reply() -> dict:
        while (frame := dec.next_frame()) is None:
            dec.feed(host.recv(65536))
        return frame[0]

    worker = reply()["worker_pid"] if mode == "runner" else _only_child(sup)  # (the runner's hello names it)
    for i in range(WARM_UP + cells):
        if i == WARM_UP:
            before, start = (cpu_s(sup), cpu_s(worker)), time.perf_counter()
        host.sendall(encode_frame({"type": "execute", "id": f"c{i}", "code": "1", "tools": []}))
        while (msg := reply())["type"] != "result":
            pass
        assert msg["status"] == "ok", msg
    wall = time.perf_counter() - start
    after = (cpu_s(sup), cpu_s(worker))
    host.close()
    os.waitpid(sup, 0)
    per = 1e6 / cells
    return {"wall_us": wall * per, "supervisor_us": (after[0] - before[0]) * per, "worker_us": (after[1] - before[1]) * per}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cpu", type=int, default=1, help="CPU to pin every process to (-1: none)")
    parser.add_argument("--checkout", action="append", default=None, help="a checkout's root (repeatable)")
    parser.add_argument("--one", choices=("runner", "floor"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        if args.cpu >= 0:
            os.sched_setaffinity(0, {args.cpu})
        print(json.dumps(measure(args.one, args.cells)))
        return
    checkouts = [str(Path(c).resolve()) for c in args.checkout or [HERE]]
    runs: dict[tuple[str, str], list[dict[str, float]]] = {}
    for _ in range(args.rounds):
        for mode in ("runner", "floor"):
            for root in checkouts if mode == "runner" else checkouts[:1]:
                out = subprocess.run([sys.executable, __file__, "--one", mode, "--cells", str(args.cells),
                                      "--cpu", str(args.cpu)], env=dict(os.environ, PYTHONPATH=root),
                                     cwd=root, capture_output=True, text=True, check=True).stdout
                runs.setdefault((mode, root), []).append(json.loads(out))
    for (mode, root), got in runs.items():
        figures = ", ".join(f"{key} {statistics.median(r[key] for r in got):.0f}" for key in got[0])
        print(f"{mode:6s} {root}: {figures} (medians of {len(got)})")


if __name__ == "__main__":
    main()
