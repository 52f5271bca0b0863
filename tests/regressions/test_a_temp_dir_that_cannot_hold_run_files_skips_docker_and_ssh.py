"""Seen by a new user following the README: with ``TMPDIR`` whose ``pytest-hermes-kernel-<uid>``
is not this user's private directory (a file there, a symlink, another user's 0777 directory),
``hermes-kernel doctor`` says ``docker NO`` and ``ssh NO`` (the README: such a leg "cannot run
here"), but ``pytest --hermes-transport=local,docker,ssh`` errored every docker and ssh test at
setup with a ~50-line ``UnsafeRunDirError`` traceback from the first kernel's start, and every
later test, local ones included, got a ``HermesLeakCheckIncompleteWarning`` from the docker
transport's probe ("3 errors, 8 warnings" for the 3-test quickstart on local,filecell,docker).
Now making the docker transport, or the ssh transport's sshd container, raises
``TransportUnavailableError`` with the doctor's reason and hint: the legs skip with it (fail under
``--hermes-require-transports``), and nothing else warns."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from pytest_hermes_kernel.containers.images import docker_status
from pytest_hermes_kernel.errors import TransportUnavailableError
from pytest_hermes_kernel.transports import make_transport

pytestmark = pytest.mark.skipif(not docker_status()[0], reason="needs a docker engine")


def _unusable_temp_dir(tmp_path: Path) -> Path:
    (tmp_path / f"pytest-hermes-kernel-{os.getuid()}").write_text("")  # a file where the dir goes
    return tmp_path / f"pytest-hermes-kernel-{os.getuid()}"


@pytest.mark.parametrize("name", ["docker", "ssh"])
def test_the_transport_cannot_run_here_naming_the_dir(name: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("paramiko")
    user_dir = _unusable_temp_dir(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # $TMPDIR, as tempfile caches it
    try:
        made = make_transport(name)
    except TransportUnavailableError as exc:
        said = str(exc)
    else:
        made.close()
        pytest.fail(f"make_transport({name!r}) made a transport whose run files cannot be kept in {user_dir}")
    assert f"refusing to keep run files in {user_dir}: it is not a directory" in said, said
    assert "Hint:" in said and "TMPDIR" in said, said


def test_the_legs_skip_with_the_reason_and_local_runs_unwarned(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytest.importorskip("paramiko")
    temp = tmp_path / "tmp"
    temp.mkdir()
    user_dir = _unusable_temp_dir(temp)
    pytester.makepyfile(test_one="def test_one(hermes_kernel):\n    assert hermes_kernel.execute('1 + 1').value == '2'\n")
    env = {**os.environ, "TMPDIR": str(temp)}
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        result = pytester.runpytest_subprocess("-rs", "-p", "no:cacheprovider", "--hermes-transport=local,docker,ssh")
    out = result.stdout.str()
    result.assert_outcomes(passed=1, skipped=2)
    assert out.count(f"refusing to keep run files in {user_dir}: it is not a directory") >= 2, out
    assert "HermesLeakCheckIncompleteWarning" not in out and "Traceback" not in out, out
