"""Contract: a tree of files goes into a kernel and comes back out byte for byte.

``upload`` and ``download`` move files under the kernel's working dir (README, "Files in and out
of a kernel"). A tree with a nested directory, an empty file and a file of several transfer chunks
(of the transport's own ``chunk_bytes``, and of the host's reads) of every byte value goes in,
the kernel reads what arrived and writes a changed copy of the same shape, and that copy comes
back exact, every file of it. Skips on transports that do not move files (``Transport.files`` left
at its default).
"""

from __future__ import annotations

import hashlib
import os

import pytest

from ..kernel.contract import Transport
from ..kernel.transfer import CHUNK_BYTES

#: Bytes of the big file at least (filecell moves 48 KiB a command); more where the transport's
#: files move bigger chunks (:func:`_big_bytes`).
BIG_BYTES = 300_000

__all__ = ["moves_files", "test_a_tree_round_trips_through_the_kernel"]


@pytest.fixture
def moves_files(hermes_transport):
    """Skips on a transport that does not move files."""
    if type(hermes_transport).files is Transport.files:
        pytest.skip(f"the {hermes_transport.name} transport does not move files (Transport.files is the default)")


def _big_bytes(kernel) -> int:
    """Bytes of a file that takes three chunks of the kernel's transfers: of its files' own
    ``chunk_bytes`` where they say it, else of the host's reads (a file of one chunk never
    exercises the path that appends the rest)."""
    launched = kernel.launched
    with kernel.transport.files(launched, kernel.options.cwd or launched.kernel_dir or "") as files:
        chunk = getattr(files, "chunk_bytes", CHUNK_BYTES)
    return max(BIG_BYTES, 2 * chunk + 4099)


def test_a_tree_round_trips_through_the_kernel(kernel, moves_files, tmp_path):
    note = "naïve ✓\nline two\n"
    big = os.urandom(_big_bytes(kernel)) + bytes(range(256)) + b"\r\n\n\r"
    tree = tmp_path / "up"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "big.bin").write_bytes(big)
    (tree / "empty.txt").write_bytes(b"")
    (tree / "note.txt").write_text(note, encoding="utf-8")

    sent = kernel.upload(tree, "in")

    assert sent.complete and (sent.files, sent.bytes) == (3, len(big) + len(note.encode())), sent
    r = kernel.execute("import hashlib, os\ndata = open('in/sub/big.bin', 'rb').read()\n"
                       "os.makedirs('out/sub')\nopen('out/sub/big.bin', 'wb').write(data[::-1])\n"
                       "open('out/empty.txt', 'wb').close()\n"
                       "open('out/note.txt', 'w', encoding='utf-8').write(open('in/note.txt', encoding='utf-8').read()[::-1])\n"
                       "(hashlib.sha256(data).hexdigest(), os.path.getsize('in/empty.txt'), "
                       "open('in/note.txt', encoding='utf-8').read())")
    assert r.status == "ok", r.summary()
    assert r.value == repr((hashlib.sha256(big).hexdigest(), 0, note)), "what the kernel read is not what was uploaded"

    got = kernel.download("out", tmp_path / "down")

    down = tmp_path / "down"
    came = sorted(str(p.relative_to(down)) for p in down.rglob("*") if p.is_file())
    assert came == ["empty.txt", "note.txt", "sub/big.bin"], f"the download brought {came} of the kernel's 3 files"
    assert got.complete and (got.files, got.bytes) == (3, len(big) + len(note.encode())), got
    assert (down / "sub" / "big.bin").read_bytes() == big[::-1], "the download is not what the kernel wrote"
    assert (down / "note.txt").read_text(encoding="utf-8") == note[::-1] and (down / "empty.txt").read_bytes() == b""
