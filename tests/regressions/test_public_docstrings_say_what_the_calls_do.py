"""The public API's docstrings against what its calls do (a docstring check, 2026-12-06).

``KernelHandle.keep()`` said it returns ``already-exited`` on a handle that was shut down; it
returns that shutdown's own :class:`ExitInfo` (step ``request``, say), as every later end does.
``ExitInfo`` listed every step but the one ``keep()`` returns, ``kept``. The ``hermes_faults``
methods that refuse a kernel with ``ConfigError`` did not say so, and ``CellResult.ok``,
``CellResult.replace``, ``KernelInfo.replace``, ``KernelKey.child_id``, ``ByteStream``'s methods
and ``HermesFaults.close`` had no docstring at all.
"""

from __future__ import annotations

import importlib
import inspect
import json
import subprocess
import sys
import re

import pytest

from pytest_hermes_kernel import ExitInfo, start_kernel
from pytest_hermes_kernel.errors import ConfigError, TransportLostError
from pytest_hermes_kernel.kernel.handle import KernelHandle, attach_kept
from pytest_hermes_kernel.plugin.faults import HermesFaults
from pytest_hermes_kernel.transports.local import LocalTransport
from tests.support import gone, wait_until

PUBLIC = ["pytest_hermes_kernel", "pytest_hermes_kernel.api", "pytest_hermes_kernel.errors",
          "pytest_hermes_kernel.transports", "pytest_hermes_kernel.kernel.contract"]


def _undocumented() -> list[str]:
    """Public classes and functions of the public modules' ``__all__``, and the public methods and
    properties of those classes, that have no docstring of their own."""
    missing = []
    from pytest_hermes_kernel.faults.cgroup import MemoryCgroup

    classes = [HermesFaults, MemoryCgroup]  # (what hermes_faults.memory_cgroup() hands the test)
    for name in PUBLIC:
        module = importlib.import_module(name)
        for attr in module.__all__:
            obj = getattr(module, attr)
            if inspect.isclass(obj):
                classes.append(obj)
            elif inspect.isfunction(obj) and not (obj.__doc__ or "").strip():
                missing.append(f"{name}.{attr}")
    for cls in classes:
        for attr, value in vars(cls).items():
            func = value.fget if isinstance(value, property) else getattr(value, "__func__", value)
            if not attr.startswith("_") and inspect.isfunction(func) and not (func.__doc__ or "").strip():
                missing.append(f"{cls.__qualname__}.{attr}")
    return sorted(set(missing))


def test_every_public_method_of_the_public_api_has_a_docstring():
    assert _undocumented() == []


def test_keep_on_a_shut_down_handle_returns_its_end_as_keep_says():
    with start_kernel("local") as k:
        ended = k.shutdown()
        again = k.keep(30.0)
    assert ended.step == "request" and again == ended, (ended, again)
    assert "what ``shutdown()`` returned" in KernelHandle.keep.__doc__, KernelHandle.keep.__doc__


def test_the_step_keep_returns_is_one_exit_info_lists():
    local = LocalTransport(server=False)
    try:
        handle = KernelHandle(local).start()
        facts = (local.locator(handle.launched), handle.kernel_id, handle.token, handle.pid)
        info = handle.keep(30.0)
        try:
            attach_kept(local, facts[0], kernel_id=facts[1], token=facts[2]).shutdown()
        except TransportLostError:
            pass
        wait_until(lambda: gone(facts[3]), 10.0, what="the kept kernel to end")
    finally:
        local.close()
    assert info.step == "kept", info
    assert f"``{info.step}``" in ExitInfo.__doc__, ExitInfo.__doc__


def test_the_hermes_faults_calls_that_refuse_a_kernel_say_so(hermes_faults):
    k = start_kernel("local")
    try:
        with pytest.raises(ConfigError):  # not on a FaultyTransport: no drop can apply
            hermes_faults.transport_drop(k)
        with pytest.raises(ConfigError):  # its host is this process
            hermes_faults.host_sigkill(k)
    finally:
        k.shutdown()
    with pytest.raises(ConfigError):  # no worker left to kill
        hermes_faults.kernel_sigkill(k)
    for call in (HermesFaults.transport_drop, HermesFaults.host_sigkill, HermesFaults.kernel_sigkill):
        assert ":raises ConfigError:" in call.__doc__, call.__qualname__


def _documented_defaults() -> list[tuple[str, str, object, object]]:
    """``(owner, parameter, number the docstring calls its default, the signature's default)`` for
    each ``:param:`` of the public constructors that says "default N" (a default of ``None`` is
    described, not numbered: ``reap_interval``'s ``clamp(idle/6, 30, 300)``)."""
    from pytest_hermes_kernel import KernelOptions, WatchdogPolicy
    from pytest_hermes_kernel.kernel.registry import KernelRegistry
    from pytest_hermes_kernel.transports import transport_factory

    found = []
    for owner in [*(transport_factory(n) for n in ("local", "docker", "ssh", "filecell")), KernelOptions,
                  KernelRegistry, WatchdogPolicy]:
        params = inspect.signature(owner).parameters
        for m in re.finditer(r":param (\w+):(.*?)(?=\n\s*:param|\n\s*:raises|\Z)", inspect.getdoc(owner) or "", re.S):
            said = re.search(r"default[^0-9;.)]{0,30}?(\d[\d.]*)", " ".join(m.group(2).split()))
            default = params[m.group(1)].default if m.group(1) in params else None
            if said and default is not None:
                found.append((owner.__name__, m.group(1), float(said.group(1).rstrip(".")), default))
    return found


def test_a_default_a_constructors_docstring_numbers_is_its_default():
    # FileCellTransport's launch_timeout said "(default 30 s)": its default is 60 s (30 s is the
    # kernel's start_timeout, which cuts it)
    found = _documented_defaults()
    assert found, "no documented default found: the check reads nothing"
    assert [f for f in found if f[2] != f[3]] == []


def test_keep_of_a_handle_never_started_raises_what_keep_says():
    # its docstring named TransportLostError only for a runner that did not confirm
    local = LocalTransport(server=False)
    try:
        handle = KernelHandle(local)
        with pytest.raises(TransportLostError, match="has no runner to keep"):
            handle.keep(30.0)
    finally:
        local.close()
    assert "or there was none" in KernelHandle.keep.__doc__, KernelHandle.keep.__doc__


FORKED = """
import json, os
from pytest_hermes_kernel import start_kernel
k = start_kernel("local")
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    out = {}
    for name, call in [("start", k.start), ("execute", lambda: k.execute("1")), ("interrupt", k.interrupt),
                       ("restart", k.restart), ("keep", lambda: k.keep(5.0)), ("upload", lambda: k.upload(__file__, "x")),
                       ("download", lambda: k.download("x", "/nonexistent/x"))]:
        try:
            out[name] = repr(call())
        except Exception as exc:
            out[name] = type(exc).__name__
    os.write(w, json.dumps(out).encode())
    os._exit(0)
os.close(w)
os.waitpid(pid, 0)
print(os.read(r, 65536).decode())
k.shutdown()
"""


@pytest.mark.skipif(sys.platform != "linux", reason="os.fork: Linux")
def test_the_calls_that_raise_in_a_forked_child_are_the_ones_the_class_names(tmp_path):
    # KernelHandle's docstrings named KernelForkedError nowhere, though 7 of its calls raise it there
    script = tmp_path / "forked.py"
    script.write_text(FORKED)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    raised = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(raised.values()) == {"KernelForkedError"}, raised
    doc = " ".join(KernelHandle.__doc__.split())
    assert ":class:`KernelForkedError`" in doc and all(f"``{name}``" in doc for name in raised), doc


def test_the_registry_calls_that_refuse_after_close_say_so():
    # KernelRegistry.get_or_start and .execute named no error of the lease they take
    from pytest_hermes_kernel import KernelKey, KernelRegistry
    from pytest_hermes_kernel.errors import KernelShutdownError

    registry = KernelRegistry(background_reaper=False)
    registry.close()
    for call in (registry.get_or_start, registry.execute):
        with pytest.raises(KernelShutdownError):
            call(KernelKey(owner="a"), *(("1",) if call == registry.execute else ()))
        assert "KernelShutdownError" in call.__doc__, call.__qualname__


def test_start_kernel_names_the_type_error_of_tools_that_are_no_dict():
    with pytest.raises(TypeError, match="tools must be a dict"):
        start_kernel("local", tools=["lookup"])
    assert ":raises TypeError: if ``tools``" in start_kernel.__doc__, start_kernel.__doc__


def test_the_memory_cgroup_attributes_its_docstring_tells_to_pass_exist():
    # it said "pass ``cgroup_procs``/``oom_counter_file`` from it": a MemoryCgroup has no
    # cgroup_procs (AttributeError); its file is procs_file
    from pytest_hermes_kernel.faults.cgroup import MemoryCgroup

    named = re.findall(r"cg\.(\w+)", HermesFaults.memory_cgroup.__doc__)
    assert named and all(isinstance(getattr(MemoryCgroup, n, None), property) for n in named), named


def test_the_errors_execute_and_keep_refuse_with_are_the_ones_they_name():
    # execute() named no TypeError (code=b"1"), ConfigError (timeout=0, or a call from a tool of its
    # own running cell) nor FrameTooLargeError; keep() named no ConfigError from a tool of the cell
    with start_kernel("local") as k:
        k.tools.register("nested", lambda: k.execute("1"))
        k.tools.register("keeper", lambda: k.keep(30.0))
        with pytest.raises(TypeError):
            k.execute(b"1")
        with pytest.raises(ConfigError):
            k.execute("1", timeout=0)
        for tool, says in (("nested", "a tool cannot run a cell on kernel"), ("keeper", "a tool cannot keep kernel")):
            r = k.execute(f"import hermes_tools\nmsg = ''\ntry:\n    hermes_tools.{tool}()\n"
                          "except hermes_tools.ToolError as e:\n    msg = str(e)\nmsg")
            assert r.status == "ok" and says in (r.value or ""), r.summary()
    execute_doc, keep_doc = (" ".join(m.__doc__.split()) for m in (KernelHandle.execute, KernelHandle.keep))
    assert all(f":raises {e}:" in execute_doc for e in ("TypeError", "ConfigError", "FrameTooLargeError")), execute_doc
    assert "from a tool of its cell" in execute_doc and "from a tool of the kernel's running cell" in keep_doc, keep_doc


def test_what_kernel_handle_refuses_when_made_is_what_its_docstring_says():
    # its :param: lines named no error, and kernel_id no length bound (1-128)
    local = LocalTransport(server=False)
    try:
        for made, error in ((lambda: KernelHandle("local"), TypeError),
                            (lambda: KernelHandle(local, {"timeout": 5}), TypeError),
                            (lambda: KernelHandle(local, tools=["lookup"]), TypeError),
                            (lambda: KernelHandle(local, kernel_id="k" * 129), ConfigError),
                            (lambda: KernelHandle(local, kernel_id="a b"), ConfigError)):
            with pytest.raises(error):
                made()
        assert KernelHandle(local, kernel_id="k" * 128).kernel_id == "k" * 128
    finally:
        local.close()
    doc = " ".join(KernelHandle.__doc__.split())
    for said in ("its name is a ``TypeError``", "a dict is a ``TypeError``", "no dict: a ``TypeError``",
                 "1-128 letters, digits, ``_`` or ``-`` (else a ``ConfigError``)"):
        assert said in doc, doc


def test_the_ssh_target_forms_the_transport_takes_are_the_ones_it_names():
    # SshTransport's :param target: said ``user@host:port``; a target without the user or the port
    # is taken too (paramiko's user name, port 22), as SshTarget.parse says: ``[user@]host[:port]``
    from pytest_hermes_kernel.transports.ssh.address import SshTarget
    from pytest_hermes_kernel.transports.ssh.transport import SshTransport

    assert (SshTarget.parse("box").port, SshTarget.parse("box").user) == (22, None)
    assert SshTarget.parse("me@box:2222").port == 2222
    assert "``[user@]host[:port]``" in SshTransport.__doc__, SshTransport.__doc__
