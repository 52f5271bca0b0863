"""Handed case B43: values meant only for the sandbox leaked into logs, process argv, tracebacks
and reports (``docker ... -e KEY=value`` in a log, start payloads with API keys, traceback locals).

A canary secret given as the kernel's ``env`` must never appear, literally or base64-encoded
(a command line that carries the config as base64 JSON is a leak too), in:

* any process's argv, on this machine and in the run's containers, polled all the while kernels
  start and run cells (the filecell launch command used to carry the config in ``sh -c`` and
  ``python -c`` arguments);
* ``repr``/``str`` of the kit's objects (the handle, its options, the transport, results);
* exception text (a bad ``env`` value, a cell that raises the value) and cell output;
* the inner pytest run's output and JUnit XML under ``-l --tb=long --log-level=DEBUG``
  (``tests/plugin/test_secrets_in_reports.py``).

Variable *names* may appear. On every transport, and on both ways a runner starts (forked by a
kernel server, or spawned: ``server=False``); a spawned runner with the env in its argv (local,
docker) passed while only the server path ran.
"""

from __future__ import annotations

import base64
import os
import threading
from collections.abc import Iterator

import pytest

from pytest_hermes_kernel import ConfigError, KernelOptions, start_kernel
from pytest_hermes_kernel.containers.labels import LABEL_RUN_ID
from pytest_hermes_kernel.containers.sharing import current_run_id
from pytest_hermes_kernel.kernel.contract import Transport

CANARY = "s3cr3t-canary-7f" + "b43d9e"
ENV = {"HK_TEST_TOKEN": CANARY}


def secret_forms(secret: str) -> tuple[bytes, ...]:
    """The secret as it may show: literally, and base64-encoded at each of the three alignments."""
    raw = secret.encode()
    forms = [raw]
    for pad in range(3):
        text = base64.b64encode(b"\0" * pad + raw)
        forms.append(text[4 if pad else 0:-4])  # the characters that depend on the secret alone
    return tuple(forms)


FORMS = secret_forms(CANARY)


def leaks(blob: bytes | str) -> bool:
    data = blob.encode("utf-8", "replace") if isinstance(blob, str) else blob
    return any(form in data for form in FORMS)


def host_argvs() -> list[bytes]:
    """Every readable ``/proc/*/cmdline`` of this machine (this pid namespace)."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as fh:
                    found.append(fh.read())
            except OSError:
                continue
    return found


def container_argvs() -> list[bytes]:
    """Every ``/proc/*/cmdline`` in this run's containers (docker and the ssh transport's sshd)."""
    try:
        import docker
    except ImportError:
        return []
    client = docker.from_env()
    found = []
    try:
        # (ignore_removed: the list inspects each container it lists, and raised NotFound for one another
        # worker's test removed in between)
        for container in client.containers.list(filters={"label": f"{LABEL_RUN_ID}={current_run_id()}"},
                                                ignore_removed=True):
            try:
                code, out = container.exec_run(["sh", "-c", "cat /proc/[0-9]*/cmdline; echo"], user="root")
            except (docker.errors.NotFound, docker.errors.APIError):
                # another worker's container of the run, removed or stopped since the list (a
                # fresh container's test ended): nothing of this test's kernel runs there
                if _still_running(client, container.id):
                    raise
                continue
            found.append(out or b"")
    finally:
        client.close()
    return found


def _still_running(client, container_id: str) -> bool:  # noqa: ANN001 - a docker.DockerClient
    import docker

    try:
        return client.containers.get(container_id).status == "running"
    except docker.errors.NotFound:
        return False


class ArgvWatch:
    """Polls every argv on this machine (and, with ``remote``, in the run's containers) in a
    thread until stopped; ``hits`` holds every argv that carried the secret."""

    def __init__(self, *, remote: bool) -> None:
        self.remote = remote
        self.hits: list[str] = []
        self.scans = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="b43 argv watch", daemon=True)

    def __enter__(self) -> ArgvWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        self._scan()  # one more, after the last step

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._scan()

    def _scan(self) -> None:
        argvs = host_argvs() + (container_argvs() if self.remote else [])
        self.scans += 1
        self.hits += [argv.replace(b"\0", b" ")[:300].decode("utf-8", "replace") for argv in argvs if leaks(argv)]


@pytest.fixture
def watch(hermes_transport: Transport) -> Iterator[ArgvWatch]:
    with ArgvWatch(remote=hermes_transport.name in ("docker", "ssh")) as w:
        yield w
    assert w.scans >= 2
    assert not w.hits, f"the canary was in a process's argv: {w.hits[:3]}"


#: Both ways a kernel starts: forked by a kernel server, and spawned (``server=False``, or a server
#: that failed): a runner spawned with the env in its argv passed when only the server path ran.
PATHS = ["server", pytest.param("spawn", marks=[pytest.mark.hermes_kernel(server=False),
                                                pytest.mark.hermes_transports("local", "docker", "ssh")])]


@pytest.mark.parametrize("path", PATHS)
def test_a_kernel_env_secret_is_in_no_argv_repr_error_or_output(hermes_transport: Transport, watch: ArgvWatch,
                                                                path: str):
    with start_kernel(hermes_transport, env=dict(ENV)) as k:
        r = k.execute("import os\nv = os.environ['HK_TEST_TOKEN']\nv[::-1]")
        assert r.status == "ok" and r.value == repr(CANARY[::-1])  # the kernel has it, exactly
        failing = k.execute("print('the value is', v)\nraise ValueError(v)")
        seen = {"handle": repr(k), "handle str": str(k), "options": repr(k.options), "transport": repr(k.transport),
                "describe": k.transport.describe(), "result": repr(failing), "info": repr(failing.kernel),
                "stdout": failing.stdout, "evalue": failing.evalue or "", "traceback": failing.traceback or ""}
        assert failing.status == "error" and failing.ename == "ValueError"
        seen["value"] = k.execute("v").value or ""
    assert not {what: text for what, text in seen.items() if leaks(text)}


def test_a_refused_env_value_is_not_echoed():
    with pytest.raises(ConfigError) as info:
        KernelOptions(env={"HK_TEST_TOKEN": CANARY + "\0"})
    with pytest.raises(ConfigError) as info2:
        KernelOptions(env=[("HK_TEST_TOKEN", CANARY)])  # type: ignore[arg-type]
    with pytest.raises(ConfigError) as info3:
        KernelOptions(env={"HK_TEST_TOKEN": CANARY, "N": 3})  # type: ignore[dict-item]
    assert "HK_TEST_TOKEN" in str(info.value) and "'N'" in str(info3.value)
    assert not [e for e in (info, info2, info3) if leaks(str(e.value))]


def _twice_encoded(secret: str) -> tuple[bytes, ...]:
    """The secret base64-encoded twice, at each alignment of each encoding: a filecell poll's
    frames are base64 inside its base64 JSON parameters."""
    return tuple(outer for inner in secret_forms(secret)[1:] for outer in secret_forms(inner.decode())[1:])


def test_a_tools_result_and_a_cells_code_stay_out_of_a_filecell_polls_argv():
    """The frames a filecell poll carries to the runner (a cell's code, a tool's result, which
    may hold a secret) were in its client's argv, base64 in base64, for as long as the poll ran:
    ``ps`` on the backend's host showed them. They go on the client's stdin now."""
    from pytest_hermes_kernel.transports.filecell.scripts import CLIENT_BOOT
    from pytest_hermes_kernel.transports.filecell.transport import FileCellTransport

    twice = _twice_encoded(CANARY)
    seen: list[bytes] = []
    stop = threading.Event()

    def look() -> None:
        while not stop.is_set():
            seen.extend(argv for argv in host_argvs() if CLIENT_BOOT.encode() in argv)  # a poll's client

    looker = threading.Thread(target=look, daemon=True)
    transport = FileCellTransport()
    looker.start()
    try:
        with start_kernel(transport, tools={"secret": lambda: CANARY}) as k:
            r = k.execute(f"import hermes_tools, time\ncode = {CANARY[::-1]!r}\ngot = hermes_tools.secret()\n"
                          "time.sleep(0.5)\ngot == code[::-1]")
            assert (r.status, r.value) == ("ok", "True")
            kdir = k.launched.kernel_dir.encode()
    finally:
        stop.set()
        looker.join(10)
        transport.close()
    seen = [argv for argv in seen if kdir in argv]  # this kernel's clients (another run may have its own)
    assert seen, "no poll's client was seen running"
    carried = [argv.replace(b"\0", b" ")[-120:] for argv in seen if any(f in argv for f in twice)
               or any(f in argv for f in _twice_encoded(CANARY[::-1]))]
    assert not carried, f"a poll's client argv carried the frames: {carried[:2]}"
    assert any(argv.split(b"\0")[-2:-1] == [b"-"] for argv in seen), "no poll read its parameters from stdin"
