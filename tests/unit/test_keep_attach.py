"""KernelHandle.keep() and attach_kept(): a local kernel outlives its handle, is reached again from
its locator with its token, and ends by its own orphan timer (issue 12, point 2); its record is
a private file (containers/kept.py)."""

from __future__ import annotations

import os
import stat
import tempfile
import time

import pytest

from pytest_hermes_kernel.containers import kept
from pytest_hermes_kernel.errors import TransportLostError, UnsafeRunDirError
from pytest_hermes_kernel.kernel.handle import KernelHandle, attach_kept
from pytest_hermes_kernel.transports.local import LocalTransport
from tests.support import gone, wait_until


@pytest.fixture(params=[True, False], ids=["server", "spawn"])
def local(request: pytest.FixtureRequest):
    transport = LocalTransport(server=request.param)
    yield transport
    transport.close()


@pytest.fixture
def kept_kernel(local: LocalTransport):
    """A kernel with ``x = 41`` that was kept; ended afterwards whatever the test did."""
    handle = KernelHandle(local).start()
    handle.execute("x = 41")
    facts = (local.locator(handle.launched), handle.kernel_id, handle.token, handle.pid)
    assert handle.keep(30.0).step == "kept"
    yield facts
    try:
        attach_kept(local, facts[0], kernel_id=facts[1], token=facts[2]).shutdown()
    except TransportLostError:
        pass  # ended by the test
    wait_until(lambda: gone(facts[3]), 5.0, what="the kept kernel to end")


def test_a_kept_kernel_is_reached_again_from_its_locator(local, kept_kernel):
    locator, kid, token, pid = kept_kernel
    handle = attach_kept(local, locator, kernel_id=kid, token=token)
    r = handle.execute("x + 1")
    assert r.status == "ok" and r.value == "42" and r.kernel.pid == pid
    assert handle.keep(30.0).step == "kept" and not handle.alive and not gone(pid)
    sock = os.stat(locator["listen"])
    assert stat.S_ISSOCK(sock.st_mode) and stat.S_IMODE(sock.st_mode) == 0o600
    assert stat.S_IMODE(os.stat(locator["kernel_dir"]).st_mode) == 0o700


def test_keep_switches_a_local_kernel_off_its_lease_and_its_ttl_ends_it(local):
    handle = KernelHandle(local).start()
    pid, locator = handle.pid, local.locator(handle.launched)

    kept_at = time.monotonic()  # (before keep(): its TTL cannot have begun earlier; a stamp after it,
    info = handle.keep(1.0)     # the test held up there, made the TTL look cut short)

    assert info.step == "kept" and not gone(pid), "a kept kernel outlives its handle's channel"
    wait_until(lambda: gone(pid), 10.0, what="the kept kernel's orphan timer to end it")
    assert time.monotonic() - kept_at >= 0.9
    wait_until(lambda: not os.path.exists(locator["kernel_dir"]), 5.0, what="its kernel dir to go")
    with pytest.raises(TransportLostError):
        attach_kept(local, locator, kernel_id=handle.kernel_id, token=handle.token)


def test_a_wrong_token_is_refused(local, kept_kernel):
    locator, kid, token, pid = kept_kernel

    with pytest.raises(TransportLostError, match="did not answer"):
        attach_kept(local, locator, kernel_id=kid, token="not-" + token)

    handle = attach_kept(local, locator, kernel_id=kid, token=token)
    assert handle.execute("x").value == "41"
    handle.keep(30.0)


def test_a_kept_record_is_a_private_file(tmp_path):
    record = kept.KeptKernel(kernel_id="k1", transport="local", locator={"kernel_dir": "/nowhere"}, token="secret",
                             nodeid="t.py::t", kept_at=time.time(), detached_at=time.time(), ttl_s=60.0,
                             host_pid=os.getpid())
    path = kept.save(record, str(tmp_path))

    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    assert kept.find("k", str(tmp_path)) == record and "secret" not in repr(record)
    assert kept.unexpired(str(tmp_path)) == [record]
    assert kept.load_all(str(tmp_path))[0].expired(record.expires_at)


def test_a_symlinked_kept_dir_is_refused(tmp_path):
    root = tmp_path / f"pytest-hermes-kernel-{os.getuid()}"
    root.mkdir(mode=0o700)
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    (root / "kept").symlink_to(tmp_path / "elsewhere")

    with pytest.raises(UnsafeRunDirError, match="symlink"):
        kept.load_all(str(tmp_path))
    assert kept.unexpired(str(tmp_path)) == []  # a sweep trusts no record there


def test_a_local_kernel_under_a_long_tmpdir_is_kept_and_reached_again(private_tmp, monkeypatch, local):
    """Found by the breaker session (2026-12-05): a kept local kernel listens on ``<kernel
    dir>/sock``, and under a ``TMPDIR`` of more than ~66 characters (a build tool's sandbox, an
    xdist worker's ``tmp_path``) that path does not fit a unix socket address (108 bytes): the
    runner died binding it, and ``--hermes-keep-failed`` shut the failed test's kernel down with
    "did not confirm it is kept: ... end of stream (the kernel runner or its relay is gone)". The
    socket is bound and reached through its directory's ``/proc/self/fd`` entry now."""
    deep = private_tmp / ("d" * 100)
    deep.mkdir(mode=0o700)
    monkeypatch.setenv("TMPDIR", str(deep))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    handle = KernelHandle(local).start()
    handle.execute("x = 41")
    locator, kid, token, pid = local.locator(handle.launched), handle.kernel_id, handle.token, handle.pid
    assert len(locator["listen"]) > 108, locator

    assert handle.keep(30.0).step == "kept" and not gone(pid)
    again = attach_kept(local, locator, kernel_id=kid, token=token)
    assert again.execute("x + 1").value == "42" and again.pid == pid
    again.shutdown()
    wait_until(lambda: gone(pid), 5.0, what="the kept kernel to end")
    assert not os.path.exists(locator["kernel_dir"])
