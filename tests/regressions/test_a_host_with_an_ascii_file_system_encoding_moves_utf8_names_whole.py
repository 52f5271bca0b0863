"""Found by the breaker helper on hostile host environments (2026-12-05): a host whose Python has
an ASCII file system encoding (``LC_ALL=C`` or ``POSIX`` with ``PYTHONUTF8=0``: ``os`` functions
take only ASCII and ``surrogateescape`` names) downloading a kernel's ``ü.txt`` got a bare
``UnicodeEncodeError`` on docker (raised in tarfile's ``data_filter``) and ssh (the staging
file's ``os.open``), and its upload of a file whose name is the UTF-8 bytes ``c3 bc`` was refused
on ssh as "a name that is not UTF-8"; the local and filecell legs moved both. A transfer's names
are UTF-8 (an undecodable byte as ``surrogateescape``) and now reach this host's ``os`` functions
as the same bytes, whatever its encoding: every leg moves both, byte for byte.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support import REPO_ROOT

SCRIPT = r"""
import json, os, shutil, sys, tempfile
from pytest_hermes_kernel import start_kernel

assert sys.getfilesystemencoding() == "ascii", sys.getfilesystemencoding()
here = tempfile.mkdtemp().encode()
up = here + b"/up"
os.makedirs(up + b"/d\xc3\xafr")
for name in (b"/a.txt", b"/\xc3\xbc.txt", b"/d\xc3\xafr/\xc3\x9f.txt"):
    with open(up + name, "w") as fh:
        fh.write("x")
seen = {}
try:
    with start_kernel(sys.argv[1]) as k:
        made = k.execute("import os\nos.makedirs(b'o/d\\xc3\\xafr')\n"  # bytes: the kernel's encoding may be ASCII too
                         "for n in (b'o/a.txt', b'o/\\xc3\\xbc.txt', b'o/d\\xc3\\xafr/\\xc3\\x9f.txt'): open(n, 'w').write('y')")
        assert made.status == "ok", made.summary()
        for what, call in (("download", lambda: k.download("o", os.fsdecode(here + b"/down"))),
                           ("upload", lambda: k.upload(os.fsdecode(up), "u"))):
            try:
                report = call()
                seen[what] = [report.files, report.complete]
            except Exception as exc:
                seen[what] = f"{type(exc).__name__}: {exc}"
        seen["in the kernel"] = k.execute("import os\nsorted(os.path.relpath(os.path.join(d, f), b'u') "
                                          "for d, _, fs in os.walk(b'u') for f in fs)").value
    seen["on the host"] = repr(sorted(os.path.relpath(os.path.join(d, f), here + b"/down")
                                      for d, _, fs in os.walk(here + b"/down") for f in fs))
finally:
    shutil.rmtree(here)
print(json.dumps(seen))
"""
NAMES = "[b'a.txt', b'd\\xc3\\xafr/\\xc3\\x9f.txt', b'\\xc3\\xbc.txt']"


@pytest.mark.parametrize("transport", ["local", "docker", "ssh", "filecell"])
def test_utf8_names_go_both_ways_byte_for_byte(request, transport):
    if transport in ("docker", "ssh"):
        request.getfixturevalue("docker_ready")
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", SCRIPT, transport], capture_output=True, text=True, env=env,
                          timeout=240, check=False, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen == {"download": [3, True], "upload": [3, True], "in the kernel": NAMES, "on the host": NAMES}
