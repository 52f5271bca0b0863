"""Host memory a large tool argument or tool value costs, per transport and size.

    python benchmarks/value_memory.py                                   # local, docker, ssh; 10, 60, 100 MB
    python benchmarks/value_memory.py --transports local --sizes 60     # one row
    python benchmarks/value_memory.py --codec                           # the codec alone (tracemalloc)

Each case runs in a fresh process (``--one TRANSPORT DIRECTION MB``): it starts a kernel with two
tools, runs a warm-up cell that calls both with small data, reads its peak RSS
(``resource.getrusage(RUSAGE_SELF).ru_maxrss``), then runs the measured cell and reads it again.

* ``arg``: the cell calls ``hermes_tools.take(x="a" * N)``: the host receives an N-byte argument
  (its frame, its text, the parsed string the tool gets). The host's unavoidable share is 1x N:
  the string the tool is called with.
* ``value``: the host tool returns ``"v" * N`` and the cell keeps it (``v = give(); len(v)``):
  the host encodes and sends it. Its unavoidable share is 1x N: the value the tool made.
  A value over the 64 MiB frame limit (100 MB) is the cell's ``ToolError``, as before.

Printed per case: the growth of the host's peak RSS over the warm-up's, in MB and as a multiple
of N, and how the cell ended. ``--codec`` prints tracemalloc peaks of ``encode_frame`` (the
runner's), of the host's ``frame_out`` sent in pieces and of ``FrameDecoder`` (fed in 1 MiB
reads) for a 20 MB ASCII and a 20 MB two-byte-UTF-8 value, as multiples of the frame's size.
The figures are in docs/numbers.md ("Large tool arguments and values").
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

MB = 10**6


def peak_mb() -> float:
    """This process's peak RSS so far, in MB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / MB


def one(transport: str, direction: str, size_mb: int) -> dict[str, object]:
    """One case, in this (fresh) process."""
    from pytest_hermes_kernel import start_kernel

    n = size_mb * MB
    big = {"n": 16}

    def take(x: str) -> int:
        return len(x)

    def give() -> str:
        return "v" * big["n"]

    with start_kernel(transport, tools={"take": take, "give": give}, timeout=600) as k:
        warm = k.execute("import hermes_tools; hermes_tools.take(x='a' * 16) + len(hermes_tools.give())")
        assert warm.status == "ok", warm
        before = peak_mb()
        started = time.perf_counter()
        if direction == "arg":
            r = k.execute(f"hermes_tools.take(x='a' * {n})")
        else:
            big["n"] = n
            r = k.execute("v = hermes_tools.give(); len(v)")
        took = time.perf_counter() - started
        after = peak_mb()
    ended = r.status if r.status != "ok" else f"ok {r.value}"
    if r.status != "ok":
        ended += f" {r.ename}: {(r.evalue or '')[:90]}"
    return {"transport": transport, "direction": direction, "mb": size_mb, "warm_peak_mb": round(before, 1),
            "growth_mb": round(after - before, 1), "x": round((after - before) / size_mb, 2),
            "seconds": round(took, 2), "ended": ended}


def codec(size_mb: int = 20) -> list[str]:
    """tracemalloc peaks of the codec alone, as multiples of the frame's size."""
    from pytest_hermes_kernel.kernel.results import FrameDecoder, encode_frame

    try:
        from pytest_hermes_kernel.kernel.pieces import frame_out
    except ImportError:  # a checkout from before the host sent frames in pieces
        frame_out = None

    def peak(action) -> int:
        tracemalloc.start()
        try:
            action()
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    lines = []
    for kind, char in (("ascii", "x"), ("2-byte utf-8", "\u00e9")):
        header = {"type": "tool_result", "id": 1, "ok": True, "value": char * (size_mb * MB // len(char.encode()))}
        enc = peak(lambda: encode_frame(header))
        sent = peak(lambda: [None for _ in frame_out(header).pieces()]) if frame_out is not None else None
        frame = encode_frame(header)
        size = len(frame)
        chunks = [frame[i:i + (1 << 20)] for i in range(0, size, 1 << 20)]
        del frame, header
        decoder = FrameDecoder()
        got: list[object] = []

        def decode() -> None:
            for chunk in chunks:
                decoder.feed(chunk)
            chunks.clear()
            got.append(decoder.next_frame())

        dec = peak(decode)
        assert got[0] is not None
        got.clear()
        pieces = "-" if sent is None else f"{sent / size:.2f}x"
        lines.append(f"{kind:>13} {size / MB:6.1f} MB frame: encode_frame peak {enc / size:.2f}x, host's frame_out + "
                     f"pieces {pieces}, FrameDecoder (1 MiB feeds) {dec / size:.2f}x")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--transports", default="local,docker,ssh")
    ap.add_argument("--sizes", default="10,60,100", help="MB, comma-separated")
    ap.add_argument("--directions", default="arg,value")
    ap.add_argument("--codec", action="store_true", help="the codec alone, tracemalloc peaks")
    ap.add_argument("--one", nargs=3, metavar=("TRANSPORT", "DIRECTION", "MB"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.one[0], args.one[1], int(args.one[2]))))
        return
    if args.codec:
        print("\n".join(codec()))
        return
    print(f"{'transport':<9} {'dir':<5} {'MB':>4} {'warm MB':>8} {'growth MB':>10} {'x size':>7} {'s':>6}  ended")
    for transport in args.transports.split(","):
        for direction in args.directions.split(","):
            for size in args.sizes.split(","):
                out = subprocess.run([sys.executable, __file__, "--one", transport, direction, size],
                                     capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent)
                if out.returncode != 0:
                    print(f"{transport:<9} {direction:<5} {size:>4} failed: {out.stderr.strip()[-300:]}")
                    continue
                row = json.loads(out.stdout.strip().splitlines()[-1])
                print(f"{transport:<9} {direction:<5} {size:>4} {row['warm_peak_mb']:>8} {row['growth_mb']:>10} "
                      f"{row['x']:>7} {row['seconds']:>6}  {row['ended']}", flush=True)


if __name__ == "__main__":
    main()
