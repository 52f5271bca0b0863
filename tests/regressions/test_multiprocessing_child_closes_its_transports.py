"""Bug: a ``multiprocessing`` child (``fork`` or ``forkserver`` start method) that started a
docker or ssh kernel left its container, the run's files and the sshd key.

Those children end by ``os._exit()`` once their target returns: no :mod:`atexit` hook runs, so
the exit hook that closes the process's shared transports never did (``spawn`` children end by
``sys.exit()`` and were fine). The hook now also runs among multiprocessing's own finalizers in
such a child.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from tests.support import python_host, run_leftovers

HOST = """
import json, multiprocessing

def work(transport, run_id):
    from pytest_hermes_kernel import start_kernel
    from pytest_hermes_kernel.containers.sharing import use_run_id

    use_run_id(run_id)
    print(json.dumps({{"child": start_kernel(transport).execute("1 + 1").value}}), flush=True)

if __name__ == "__main__":
    child = multiprocessing.get_context({method!r}).Process(target=work, args=({transport!r}, {run_id!r}))
    child.start()
    child.join(120)
    print(json.dumps({{"exitcode": child.exitcode}}), flush=True)
"""


@pytest.mark.parametrize("method", ["fork", "forkserver"])
@pytest.mark.parametrize("transport", ["docker", "ssh"])
def test_a_multiprocessing_child_leaves_no_container(transport: str, method: str, docker_ready: None,
                                                     tmp_path: Path) -> None:
    run_id = f"mp-child-{uuid.uuid4().hex[:12]}"
    script = tmp_path / "host.py"  # forkserver imports the main module by its path
    script.write_text(HOST.format(method=method, transport=transport, run_id=run_id))
    host = python_host(f"import runpy; runpy.run_path({str(script)!r}, run_name='__main__')")
    out, err = host.communicate(timeout=150)

    assert run_leftovers(run_id) == []  # the host and its child have exited
    facts = {k: v for line in out.splitlines() if line.startswith("{") for k, v in json.loads(line).items()}
    assert facts == {"child": "2", "exitcode": 0}, err[-2000:]
