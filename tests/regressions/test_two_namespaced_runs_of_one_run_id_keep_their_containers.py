"""Seen (a breaker helper on neighbours, 2026-12-06): two CI jobs on one docker engine, each in a
pid and mount namespace of its own (a job's container with the host's network: the same hostname,
its own ``/tmp``), pytest pid 1 in both, and one ``--hermes-run-id`` (``PYTEST_HERMES_RUN_ID`` from
the pipeline). The leak check after a test of one run lists the containers of its run id made by
its own host pid: the other run's container, made during that test, had both, and its state file
was out of sight, so the check reported ``leaked container: container ... (docker-kernel-host,
running); no live process holds it`` and removed it (the other run's next cell: ``status='died'``).
A container whose process-table label names another pid namespace is not this process's."""

from __future__ import annotations

import shlex
import uuid
from pathlib import Path

from tests import namespaced
from tests.support import RUN_TIMEOUT_S, run_containers

INNER = namespaced.WAIT_FOR + """
ROLE = os.environ["KB_ROLE"]


def test_a_kernel_beside_the_other_job(hermes_kernel):
    if ROLE == "b":
        wait_for("a-up")  # b's container comes during a's test
    assert hermes_kernel.execute("x = 41").status == "ok"
    (OUT / f"{ROLE}-up").write_text(json.dumps({"pid": os.getpid()}))
    wait_for("b-up" if ROLE == "a" else "go")
    assert hermes_kernel.execute("x + 1").value == "42"
"""


def test_one_jobs_leak_check_leaves_the_other_jobs_container_alone(tmp_path: Path, docker_ready: None) -> None:
    out = namespaced.prepare(tmp_path, INNER)
    run_id = f"job-{uuid.uuid4().hex}"
    command = namespaced.pytest_command("--hermes-transport=docker", "--hermes-require-transports",
                                        f"--hermes-run-id={run_id}")
    runs = {}
    for role in "ab":
        tmp = tmp_path / f"tmp-{role}"
        tmp.mkdir()
        runs[role] = namespaced.start(tmp_path, command, before=f"mount -t tmpfs tmpfs {shlex.quote(str(tmp))}",
                                      mount=True, KB_OUT=str(out), KB_ROLE=role, TMPDIR=str(tmp))  # a /tmp of its own
    try:
        a_output = runs["a"].communicate(timeout=RUN_TIMEOUT_S)[0]
        assert runs["a"].returncode == 0 and "1 passed" in a_output and "leak" not in a_output, a_output[-3000:]
        b_output = namespaced.finish(runs["b"], out / "go")
    finally:
        namespaced.stop(runs.values(), out / "go")
    assert runs["b"].returncode == 0 and "1 passed" in b_output, b_output[-3000:]
    assert run_containers(run_id) == []
