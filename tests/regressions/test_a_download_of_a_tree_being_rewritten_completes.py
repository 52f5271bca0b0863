"""Found by a breaker helper (2026-12-06, review of 4bcc1ed): on docker, a download of a tree
whose files a running cell rewrote meanwhile (``open(f, 'w').write(...)``: truncated, then
written) failed whole, "t: the archive could not be made in the container (t/f23: unexpected end
of data (the archive is cut here)); nothing was kept": the tar's header held the size a file had
when it was opened, and the file was shorter by the time it was read. Local and ssh copied each
file as it was read (``complete=True``, 200 files). Fixed: a file of up to 1 MiB is read whole
first and archived as read, so a rewrite never cuts the archive.
"""

from __future__ import annotations

import time

import pytest

from pytest_hermes_kernel.contract._probes import run_in_thread

MAKE = "import os\nos.makedirs('t')\nfor i in range(200):\n    open('t/f%d' % i, 'w').write(str(i) * 1000)"
REWRITE = ("import time\nend = time.time() + {seconds}\nn = 0\nwhile time.time() < end:\n"
           "    open('t/f%d' % (n % 200), 'w').write(str(n) * 1000)\n    n += 1\nn")


@pytest.mark.hermes_transports("local", "docker", "ssh")
def test_a_tree_a_cell_rewrites_meanwhile_downloads_whole(hermes_kernel, tmp_path) -> None:
    assert hermes_kernel.execute(MAKE).status == "ok"
    rewriting = run_in_thread(hermes_kernel, REWRITE.format(seconds=8))
    reports, deadline = [], time.monotonic() + 8
    while time.monotonic() < deadline or not reports:
        reports.append(hermes_kernel.download("t", tmp_path / f"got{len(reports)}"))
    assert rewriting.result(60).status == "ok"

    assert all(r.complete and r.files == 200 for r in reports), [(r.complete, r.files, r.rejected[:2]) for r in reports]
    for got in tmp_path.iterdir():  # (each file as it was read: digits, or empty just after its truncation)
        assert all(f.read_text().isdigit() or not f.stat().st_size for f in got.iterdir()), got
