"""Contract: what a cell writes lands, bounded and decoded, in that cell's result and nowhere else."""

from __future__ import annotations

import re
import time
import uuid

from pytest_hermes_kernel.kernel.watchdog import WatchdogPolicy
from ._probes import gone_in_kernel, wait_until

FAST = WatchdogPolicy(interrupt_grace=1.0, kill_grace=1.0)
MARKER = re.compile(r"\n\[\.\.\. (\d+) bytes dropped \.\.\.\]\n")


def _kept_bytes(text: str) -> int:
    return len(MARKER.sub("", text).encode("utf-8"))


def test_small_output_is_exact(kernel):
    r = kernel.execute("print('out'); import sys; print('err', file=sys.stderr)")
    assert (r.stdout, r.stderr) == ("out\n", "err\n")
    assert not r.stdout_truncated and r.stdout_dropped_bytes == 0


def test_long_line_keeps_head_and_tail_within_the_cap(kernel_factory):
    cap = 64 * 1024
    k = kernel_factory(max_output_bytes=cap)

    r = k.execute('print("HEAD" + "y" * 500_000 + "END")')

    assert r.status == "ok" and r.stdout_truncated, r.summary()
    assert len(r.stdout.encode()) <= cap
    assert r.stdout.startswith("HEAD") and r.stdout.endswith("END\n")
    (dropped,) = map(int, MARKER.findall(r.stdout))
    assert dropped == r.stdout_dropped_bytes
    assert _kept_bytes(r.stdout) + r.stdout_dropped_bytes == len("HEAD") + 500_000 + len("END\n")


def test_flood_is_bounded_per_stream_and_kernel_survives(kernel_factory):
    cap = 64 * 1024
    k = kernel_factory(max_output_bytes=cap, watchdog=FAST)
    flood = ("import sys\ni = 0\nwhile True:\n    print(f'{i:010d}' + 'o' * 60)\n"
             "    sys.stderr.write(f'{i:010d}' + 'e' * 60 + '\\n')\n    i += 1")

    r = k.execute(flood, timeout=1.0)

    assert r.status == "timeout" and r.watchdog == "interrupted", r.summary()
    for text, truncated, dropped in ((r.stdout, r.stdout_truncated, r.stdout_dropped_bytes),
                                     (r.stderr, r.stderr_truncated, r.stderr_dropped_bytes)):
        assert truncated and dropped > 10 * cap
        assert len(text.encode()) <= cap
        head, tail = MARKER.split(text)[0], MARKER.split(text)[-1]
        assert head.startswith("0000000000")
        numbers = [int(line[:10]) for line in tail.splitlines()[1:-1]]  # whole lines only
        assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))
        assert numbers[0] > 1000  # the tail is the end of the stream, not more of the head
    assert k.execute("print('done')").stdout == "done\n"


def test_unicode_round_trips_and_invalid_bytes_become_replacement(kernel):
    r = kernel.execute("print('naïve ✓ 😀 日本')")
    assert r.stdout == "naïve ✓ 😀 日本\n"

    r = kernel.execute("import sys, os\nsys.stdout.buffer.write(b'raw:\\xff\\xfe\\xc3\\n'); sys.stdout.flush()\n"
                       "os.write(2, b'err:\\x80\\x81\\n')")
    assert r.status == "ok", r.summary()
    assert r.stdout.startswith("raw:") and "\ufffd" in r.stdout and r.stdout.endswith("\n")
    assert r.stderr.startswith("err:") and r.stderr.count("\ufffd") == 2
    assert kernel.execute("1 + 1").value == "2"


def test_multibyte_characters_split_across_writes_are_not_damaged(kernel):
    code = ("import os\ndata = 'é✓😀'.encode() * 2000\n"
            "for i in range(0, len(data), 7):\n    os.write(1, data[i:i + 7])")
    r = kernel.execute(code)
    assert r.stdout == "é✓😀" * 2000


def test_real_stdout_object(kernel):
    r = kernel.execute("import sys, subprocess\nsubprocess.run(['printf', 'via-fd\\n'], stdout=sys.stdout)\n"
                       "(sys.stdout.fileno(), sys.stderr.fileno(), hasattr(sys.stdout, 'buffer'))")
    assert r.status == "ok" and r.stdout == "via-fd\n" and r.value == "(1, 2, True)", r.summary()


def test_ansi_escapes_are_stripped(kernel):
    r = kernel.execute(r"print('\x1b[31mred\x1b[0m plain')")
    assert r.stdout == "red plain\n"


def test_secrets_are_redacted_from_output_and_errors(kernel):
    token = "ghp_" + "A1b2C3d4" * 5
    r = kernel.execute(f"print('tok {token}')\nraise ValueError('API_KEY=supersecretvalue')")
    assert token not in r.stdout and "[REDACTED]" in r.stdout
    assert "supersecretvalue" not in r.evalue and "supersecretvalue" not in r.traceback


def test_stdin_is_at_eof(kernel):
    kernel.execute("q = 3")
    started = time.monotonic()
    r = kernel.execute("input('name? ')")
    assert r.status == "error" and r.ename == "EOFError", r.summary()
    assert time.monotonic() - started < 1.0
    assert kernel.execute("import subprocess; subprocess.run(['cat'], capture_output=True).stdout").value == "b''"
    assert kernel.execute("import sys; sys.stdin.read()").value == "''"
    r = kernel.execute("subprocess.run(['sh', '-c', 'read line; echo got:$line'], capture_output=True, text=True).stdout")
    assert r.value == repr("got:\n")
    assert kernel.execute("q").value == "3"


def test_fd_level_output_is_attributed_to_its_cell_in_order(kernel, capfd):
    tag = uuid.uuid4().hex[:8]
    code = (f"import os, subprocess, ctypes\nprint('P1-{tag}', flush=True)\nos.system('echo S1-{tag}')\n"
            f"subprocess.run(['sh', '-c', 'echo S2-{tag}; echo S3-{tag} >&2'])\n"
            f"libc = ctypes.CDLL(None); libc.puts(b'C1-{tag}'); libc.fflush(None)\nprint('P2-{tag}')")

    r = kernel.execute(code)

    assert r.status == "ok", r.summary()
    assert r.stdout.splitlines() == [f"{name}-{tag}" for name in ("P1", "S1", "S2", "C1", "P2")]
    assert r.stderr == f"S3-{tag}\n"
    assert kernel.execute("print('next')").stdout == "next\n"
    seen = capfd.readouterr()
    assert tag not in seen.out and tag not in seen.err


def test_output_between_cells_belongs_to_no_cell(kernel):
    r = kernel.execute("import subprocess\np = subprocess.Popen(['sh', '-c', 'sleep 0.3; echo BETWEEN; echo BE2 >&2'])\np.pid")
    bg = int(r.value)
    assert "BETWEEN" not in r.stdout
    wait_until(lambda: gone_in_kernel(kernel, bg), 5.0, what="the background writer to finish")

    nxt = kernel.execute("print('second')")

    assert (nxt.stdout, nxt.stderr) == ("second\n", "")


def test_unflushed_output_of_a_cell_is_not_carried_into_the_next(kernel):
    r = kernel.execute("import sys\nsys.stdout.write('no newline')")
    assert r.stdout == "no newline"
    assert kernel.execute("print('clean')").stdout == "clean\n"
