"""What a kept ssh kernel's record says about reaching it again, for a ``target=`` host (issue 12, point 2).

The sshd-container case runs end to end in tests/plugin/test_keep_failed_ssh.py; a ``target=``
host is any sshd the user names, so here the locator is checked as data: the later process must
connect to the same target with the same key file, known_hosts, policy and pinned key, start no
kernel server there, and nothing secret or unserialisable may be in it.
"""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

from pytest_hermes_kernel.containers.kept import KeptKernel, find, remove, save, save_secret
from pytest_hermes_kernel.kernel.contract import Launched
from pytest_hermes_kernel.transports.detached import NullStream
from pytest_hermes_kernel.transports.ssh.connection import SshTarget
from pytest_hermes_kernel.transports.ssh.transport import SshTransport


def test_a_target_kernels_locator_reaches_the_same_host_the_same_way(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # relative paths, as typed on a command line: the record has them absolute
    transport = SshTransport(target="ops@127.0.0.1:2222", key_filename="id_ed25519",
                             known_hosts="./known_hosts", host_key_policy="warn")
    try:
        conn = SimpleNamespace(target=SshTarget("127.0.0.1", 2222, "ops"))
        launched = Launched(stream=NullStream(), pid=4321, kernel_dir="/home/ops/.hermes-kernels/k1",
                            extra={"conn": conn, "python": "python3.11", "runner": "/home/ops/.hermes-kernels/k1/r.pyz"})

        locator = transport.locator(launched)
    finally:
        transport.close()

    assert json.loads(json.dumps(locator)) == locator
    assert locator["reach"] == {"target": "ops@127.0.0.1:2222", "key_filename": str(tmp_path / "id_ed25519"),
                                "known_hosts": str(tmp_path / "known_hosts"), "host_key_policy": "warn",
                                "server": False}
    assert (locator["runner_pid"], locator["python"], "container_id" in locator) == (4321, "python3.11", False)
    assert list(tmp_path.iterdir()) == [], "no key copy for a target host: its key file is the user's"


def test_a_records_secret_files_go_with_it(tmp_path):
    record = KeptKernel(kernel_id="k2", transport="ssh", locator={}, token="t", nodeid="n", kept_at=0.0,
                        detached_at=0.0, ttl_s=1.0, host_pid=1)
    save(record, str(tmp_path))
    key = save_secret("k2", "ssh-key", "PRIVATE", str(tmp_path))
    assert os.stat(key).st_mode & 0o777 == 0o600 and find("k2", str(tmp_path)) == record

    remove("k2", str(tmp_path))

    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == []
