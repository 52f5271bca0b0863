"""Execute-only backends: ``filecell`` side by side with the seed system's remote file-cell protocol.

Run:  python benchmarks/seed_style_filecell.py [--backend local|docker|both] [--cells 200]
                                                [--seed-cells 20] [--json out.json]

Both sides use the same backend object (``LocalShellBackend``: ``sh -c`` here;
``DockerExecBackend``: ``docker exec`` into a fresh kernel host container), wrapped to count
executes. Figures: executes per trivial cell (``1``) and its round trip, p50 and p90.

The seed style is reproduced from the behaviour catalog (sections 3.2-3.6): a ``nohup``'d
runner polls ``cells/`` every 0.2 s; per cell the host probes liveness (``kill -0``, on every
acquire), clears ``rpc/``, ships ``cell_req_<seq>.json.tmp`` (base64 in the command), ``mv``s it
into place, ``cat``s the result every 0.5 s until it is there, and ``rm``s it; a per-cell RPC
poller thread runs ``ls rpc/req_*`` every 0.1 s while the cell runs. Each step is its own
execute, as in the seed.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shlex
import statistics
import sys
import threading
import time
from typing import Any

from pytest_hermes_kernel import KernelHandle
from pytest_hermes_kernel.transports.filecell.backends import DockerExecBackend, ExecuteBackend, LocalShellBackend
from pytest_hermes_kernel.transports.filecell.transport import FileCellTransport

SEED_RUNNER = r"""
import io, json, os, sys, time, contextlib
kdir = sys.argv[1]; idle_exit = float(sys.argv[2])
cells = os.path.join(kdir, 'cells'); ns = {'__name__': '__main__'}; idle_since = time.monotonic()
while True:
    names = sorted(n for n in os.listdir(cells) if n.startswith('cell_req_') and n.endswith('.json'))
    if not names:
        if time.monotonic() - idle_since > idle_exit:
            sys.exit(0)
        time.sleep(0.2)
        continue
    for name in names:
        path = os.path.join(cells, name)
        try:
            with open(path) as fh:
                req = json.load(fh)
        except Exception:
            continue
        os.unlink(path); idle_since = time.monotonic()
        out = io.StringIO(); status = 'ok'
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(req['code'], '<cell>', 'exec'), ns)
        except BaseException as exc:
            status = 'error'; print(repr(exc), file=out)
        res = os.path.join(cells, 'cell_res_%06d.json' % req['id'])
        fd = os.open(res + '.tmp', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, 'w') as fh:
            json.dump({'id': req['id'], 'status': status, 'output': out.getvalue()}, fh)
        os.replace(res + '.tmp', res)
"""


class Counting:
    """Counts executes (thread-safe) and passes them through."""

    def __init__(self, inner: ExecuteBackend) -> None:
        self.inner, self.n, self._lock = inner, 0, threading.Lock()

    def execute(self, cmd: str, timeout: float | None) -> tuple[int, str]:
        with self._lock:
            self.n += 1
        return self.inner.execute(cmd, timeout)

    def execute_detached(self, cmd: str, timeout: float | None) -> tuple[int, str]:
        with self._lock:
            self.n += 1
        return (getattr(self.inner, "execute_detached", None) or self.inner.execute)(cmd, timeout)

    def __repr__(self) -> str:
        return repr(self.inner)


class SeedStyleKernel:
    """The seed's remote kernel, step by step (catalog 3.2-3.6), over any execute backend."""

    POLL_S = 0.5
    RPC_POLL_S = 0.1

    def __init__(self, backend: ExecuteBackend, root: str = "/tmp/hermes-seed-bench") -> None:
        self.backend = backend
        self.kdir = f"{root}/hermes_rkernel_{time.monotonic_ns() % 16**12:012x}"
        self.seq = 0
        self.rpc_polls = 0
        self._sh(f"umask 077; mkdir -p {self.kdir}/cells {self.kdir}/rpc; chmod 700 {root} {self.kdir} "
                 f"{self.kdir}/cells {self.kdir}/rpc")
        self._ship(f"{self.kdir}/kernel_runner.py", SEED_RUNNER.encode())
        out = self._sh(f"cd {self.kdir} && {{ nohup python3 kernel_runner.py {self.kdir} 1800 > runner.log 2>&1 & "
                       "echo PID:$!; }", detached=True)
        self.pid = int(next(line[4:] for line in out.splitlines() if line.startswith("PID:")))

    def _sh(self, cmd: str, timeout: float = 15.0, detached: bool = False) -> str:
        run = getattr(self.backend, "execute_detached", None) if detached else None
        return (run or self.backend.execute)(cmd, timeout)[1]

    def _ship(self, path: str, data: bytes) -> None:
        self._sh(f"umask 077; echo '{base64.b64encode(data).decode()}' | base64 -d > {path}", 30.0)

    def execute(self, code: str, timeout: float = 300.0) -> dict[str, Any]:
        if "ALIVE" not in self._sh(f"kill -0 {self.pid} 2>/dev/null && echo ALIVE"):  # per acquire
            raise RuntimeError("seed-style runner is gone")
        self._sh(f"rm -f {self.kdir}/rpc/req_* {self.kdir}/rpc/res_*")  # per-cell RPC hygiene
        stop = threading.Event()
        poller = threading.Thread(target=self._rpc_poll, args=(stop,), daemon=True)
        poller.start()
        try:
            self.seq += 1
            req = f"{self.kdir}/cells/cell_req_{self.seq:06d}.json"
            self._ship(f"{req}.tmp", json.dumps({"id": self.seq, "code": code}).encode())
            self._sh(f"mv {req}.tmp {req}", 10.0)
            res = f"{self.kdir}/cells/cell_res_{self.seq:06d}.json"
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                body = self._sh(f"cat {res} 2>/dev/null", 20.0)
                if body.strip():
                    self._sh(f"rm -f {res}", 10.0)
                    return json.loads(body)
                time.sleep(self.POLL_S)
            return {"status": "timeout"}
        finally:
            stop.set()
            poller.join(5.0)

    def _rpc_poll(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self._sh(f"ls -1 {self.kdir}/rpc/req_* 2>/dev/null || true", 10.0)
            self.rpc_polls += 1
            stop.wait(self.RPC_POLL_S)

    def close(self) -> None:
        self._sh(f"pkill -TERM -P {self.pid}; kill {self.pid}; true")
        self._sh(f"rm -rf {self.kdir}")


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile (0.9) of ``values`` by nearest rank: ``ceil(q n)``-th smallest
    (``int(q * n)`` was one rank too high: the p90 of 10 seed-style cells was the slowest)."""
    rank = -(-round(q * 100) * len(values) // 100)
    return sorted(values)[max(rank, 1) - 1]


def measure(run_cell: Any, counter: Counting, cells: int, warmup: int,
            side_executes: Any = lambda: 0) -> dict[str, float]:
    for _ in range(warmup):
        run_cell()
    start_n, start_side, times = counter.n, side_executes(), []
    for _ in range(cells):
        t = time.perf_counter()
        run_cell()
        times.append(time.perf_counter() - t)
    side = side_executes() - start_side
    return {"cells": cells, "executes_per_cell": (counter.n - start_n - side) / cells,
            "rpc_poller_executes_per_cell": side / cells,
            "p50_ms": statistics.median(times) * 1e3, "p90_ms": pct(times, 0.9) * 1e3}


def execute_floor(backend: ExecuteBackend, n: int = 50) -> dict[str, float]:
    """One execute of ``sh -c true``, and of a Python that imports what the client imports (this
    interpreter, by its path: the transport's polls run the one the launch resolved, no shim)."""
    out = {}
    imports = (f"exec {shlex.quote(sys.executable)} -I -S -B -c "
               "'import _json, _socket, binascii, posix, sys, time'")
    for name, cmd in (("sh_true_ms", "true"), ("python_client_imports_ms", imports)):
        times = []
        for _ in range(n):
            t = time.perf_counter()
            backend.execute(cmd, 30.0)
            times.append(time.perf_counter() - t)
        out[name] = statistics.median(times) * 1e3
    return out


def bench_backend(name: str, backend: ExecuteBackend, cells: int, seed_cells: int) -> dict[str, Any]:
    counter = Counting(backend)
    kernel = KernelHandle(FileCellTransport(counter)).start()
    try:
        ours = measure(lambda: kernel.execute("1"), counter, cells, warmup=10)
    finally:
        kernel.shutdown()
    counter = Counting(backend)
    seed = SeedStyleKernel(counter)
    try:
        theirs = measure(lambda: seed.execute("1"), counter, seed_cells, warmup=2,
                         side_executes=lambda: seed.rpc_polls)
    finally:
        seed.close()
    return {"backend": name, "filecell": ours, "seed_style": theirs, "floor": execute_floor(backend)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("local", "docker", "both"), default="both")
    parser.add_argument("--cells", type=int, default=200)
    parser.add_argument("--seed-cells", type=int, default=20)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    results = []
    if args.backend in ("local", "both"):
        results.append(bench_backend("local-shell", LocalShellBackend(), args.cells, args.seed_cells))
    if args.backend in ("docker", "both"):
        docker = DockerExecBackend.start(run_id="bench-filecell")
        try:
            results.append(bench_backend("docker-exec", docker, args.cells, args.seed_cells))
        finally:
            docker.close()
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")
    for r in results:
        for side in ("filecell", "seed_style"):
            f = r[side]
            extra = f" + {f['rpc_poller_executes_per_cell']:.1f} RPC-poller" if f["rpc_poller_executes_per_cell"] else ""
            print(f"{r['backend']:12s} {side:10s} executes/cell {f['executes_per_cell']:5.2f}{extra}  "
                  f"p50 {f['p50_ms']:8.1f} ms  p90 {f['p90_ms']:8.1f} ms  ({f['cells']} cells)")
        fl = r["floor"]
        print(f"{r['backend']:12s} floor      one execute: sh -c true {fl['sh_true_ms']:.1f} ms, "
              f"python with the client's imports {fl['python_client_imports_ms']:.1f} ms")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(results, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
