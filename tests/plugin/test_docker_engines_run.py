"""Runs over two docker engines (issue 12 point 7): the first one the machine's, the second one this
session starts itself (``second_docker_engine``, :mod:`tests.engines`).

An ``-n 2`` inner run with ``--hermes-docker-hosts`` spreads its kernels over both engines (each
kernel's engine is in its report section) and leaves nothing on either; a kernel kept on the
second engine is reached by the CLI from its record, whatever ``DOCKER_HOST`` says then.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_hermes_kernel.containers.labels import LABEL_RUN_ID
from tests.plugin.test_keep_failed import FAILING_TEST
from tests.engines import containers_on

SPREAD_TESTS = """
import pytest

@pytest.mark.parametrize("n", range(6))
def test_kernel(hermes_kernel, n):
    r = hermes_kernel.execute("x = 20 + 1; x * 2")
    assert (r.status, r.value) == ("ok", "42")
    assert "on docker engine unix://" in r.kernel.note
"""


def test_an_n2_run_spreads_its_kernels_over_both_engines_and_leaves_nothing(run, pytester, second_docker_engine,
                                                                             first_docker_engine):
    run_id = f"engines-{uuid.uuid4().hex[:12]}"
    pytester.makepyfile(test_spread=SPREAD_TESTS)

    result = run("-n", "2", "-rA", "--hermes-transport=docker", f"--hermes-run-id={run_id}",
                 "--hermes-leak-check=error", f"--hermes-docker-hosts={first_docker_engine},{second_docker_engine}")

    out = result.stdout.str()
    result.assert_outcomes(passed=6)
    placed = set(re.findall(r"^where: docker [0-9a-f]{12} pid \d+ on ([^\s,]+)", out, re.M))
    assert placed == {first_docker_engine, second_docker_engine}, out
    for engine in (first_docker_engine, second_docker_engine):
        assert containers_on(engine, f"{LABEL_RUN_ID}={run_id}") == set(), f"the run left a container on {engine}"


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_hermes_kernel.cli", *args], capture_output=True, text=True,
                          timeout=120, env=env, stdin=subprocess.DEVNULL)


@pytest.fixture
def private_tmp(monkeypatch: pytest.MonkeyPatch, second_docker_engine: str) -> Iterator[Path]:
    """A private ``TMPDIR`` (the kept records are this test's alone); afterwards what was kept is
    swept and the second engine's containers of the test's runs are removed by id."""
    from pytest_hermes_kernel.containers.engines import engine_client
    from pytest_hermes_kernel.containers.lifecycle import remove_container

    tmp = Path(tempfile.mkdtemp(prefix="hk-", dir="/tmp"))
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    try:
        yield tmp
    finally:
        cli("sweep", "--kept", env=dict(os.environ))
        client = engine_client(second_docker_engine)
        try:
            for cid in containers_on(second_docker_engine, f"{LABEL_RUN_ID}=kept-on-2"):
                remove_container(cid, client=client)
        finally:
            client.close()
        shutil.rmtree(tmp, ignore_errors=True)


def test_a_kernel_kept_on_the_second_engine_is_reached_from_its_record(run, pytester, private_tmp,
                                                                       second_docker_engine):
    pytester.makepyfile(test_keep=FAILING_TEST)
    result = run("--hermes-transport=docker", "--hermes-run-id=kept-on-2", "--hermes-keep-failed",
                 "--hermes-leak-check=error", f"--hermes-docker-hosts={second_docker_engine}")
    result.assert_outcomes(failed=1)
    kid = json.loads(Path(pytester.path, "kernel.json").read_text())["id"]
    record = json.loads((private_tmp / f"pytest-hermes-kernel-{os.getuid()}" / "kept" / f"{kid}.json").read_text())
    cid = record["locator"]["container_id"]
    env = {k: v for k, v in os.environ.items() if k != "DOCKER_HOST"}  # the CLI's engine is the first one

    shown = cli("exec", kid, "evidence", env=env)
    listed = cli("ls", env=env)
    swept = cli("sweep", "--kept", env=env)

    result.stdout.fnmatch_lines([f"    docker -H {second_docker_engine} exec -it {cid[:12]} sh    a shell in its *"])
    assert record["locator"]["docker_host"] == second_docker_engine
    assert (shown.returncode, shown.stdout) == (0, "'what went wrong'\n"), shown.stderr
    assert " yes " in next(line for line in listed.stdout.splitlines() if line.startswith(kid)), listed.stdout
    assert f"removed kept kernel {kid}" in swept.stdout and f"removed container {cid[:12]}" in swept.stdout, \
        swept.stdout + swept.stderr
    assert containers_on(second_docker_engine, f"{LABEL_RUN_ID}=kept-on-2") == set()
