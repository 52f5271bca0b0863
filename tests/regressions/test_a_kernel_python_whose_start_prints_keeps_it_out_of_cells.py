"""Found by the breaker helper on hostile host environments (2026-12-05): a kernel ``python=``
whose start prints (a ``sitecustomize.py`` or a ``.pth`` file of its site-packages that says
hello on stdout, as some tools install) put that text into the first cell's ``stdout``, on the
kernel-server and the spawn path alike, in about 2 host processes of 3: ``print('cell')`` came
back as ``'STARTUP NOISE\\ncell\\n'``. The text sat in the runner's ``sys.stdout`` buffer, a forked
worker inherited it and wrote it into the cell's pipe when the old stream was collected. The
runner now flushes it to its own stdout (``/dev/null`` locally) before anything forks.

Whether a host saw it held for the whole host process, so each trial is a host of its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support import REPO_ROOT

HOSTS = 6  # the old code: a host clean on both paths about 1 time in 7; all 6 clean ~ 1 in 10^5

SCRIPT = """
import json, sys
from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports import make_transport

seen = []
for server in (True, False):
    transport = make_transport("local", server=server)
    try:
        with start_kernel(transport, python=sys.argv[1], start_timeout=60) as kernel:
            seen += [kernel.execute("print('cell')").stdout, kernel.execute("print('next')").stdout]
    finally:
        transport.close()
print(json.dumps(seen))
"""


@pytest.fixture(scope="module")
def noisy_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    venv = tmp_path_factory.mktemp("noisy") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    site = subprocess.run([python, "-c", "import site; print(site.getsitepackages()[0])"], capture_output=True,
                          text=True, check=True, timeout=60).stdout.strip()
    with open(f"{site}/sitecustomize.py", "w", encoding="utf-8") as fh:
        fh.write("print('STARTUP NOISE')\n")
    assert subprocess.run([python, "-c", "pass"], capture_output=True, text=True, check=True,
                          timeout=60).stdout == "STARTUP NOISE\n"
    return python


def test_no_cell_shows_what_its_interpreters_start_printed(noisy_python):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    hosts = [subprocess.Popen([sys.executable, "-c", SCRIPT, noisy_python], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=env)
             for _ in range(HOSTS)]
    seen = []
    for host in hosts:
        out, err = host.communicate(timeout=240)
        assert host.returncode == 0, err[-2000:]
        seen.append(json.loads(out.splitlines()[-1]))
    assert seen == [["cell\n", "next\n", "cell\n", "next\n"]] * HOSTS
