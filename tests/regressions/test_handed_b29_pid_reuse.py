"""Handed case B29: pid reuse never makes a kill or reap path signal a process that is not the kernel.

Each scenario runs in a pid namespace of its own (``unshare -Urpf --mount-proc``), where the
test owns ``/proc/sys/kernel/ns_last_pid`` and can put a decoy (``sleep 600`` in a session of
its own) on exactly the pid that was just freed: the window a real reuse needs, made certain.
The decoy must survive every operation.

* far side (the kernel runner): the worker is reaped and a decoy takes its pid (and so its
  process group id) at once; the runner's reap path must not ``killpg`` the reaped group
  (``WorkerProcess.wait`` and ``Supervisor.reap_children``);
* host side (``procs.kill_session``): a session member dies between the listing and the
  signal and a decoy takes its pid;
* host side (the local transport): the runner is SIGKILLed and reaped and a decoy takes its pid
  *and* its session id; ``interrupt()``, ``shutdown()`` and the registry's idle reaper then find
  an already-exited kernel and signal nobody.
* remote side (the ssh transport's kill, a script run where the kernel ran): the recorded runner
  pid now leads a session of another program; the script, told the kernel's id, kills nothing
  of it (no namespace needed: what the script sees is the same).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap

import pytest

from pytest_hermes_kernel.transports.detached import KILL_SESSION_SCRIPT

#: Seconds a scenario may take (one kernel start at most, inside the namespace).
SCENARIO_TIMEOUT_S = 60.0

PRELUDE = r"""
import os, signal, subprocess, sys, time

def decoy_at(pid):
    '''A ``sleep 600`` in a session of its own, on exactly ``pid`` (freed just now). Dead is not
    free: a zombie keeps its pid until its parent reaps it (a kernel server reaps its runners
    from its own loop, later under load), and another fork may take the pid first: wait, retry.'''
    for _ in range(5):
        wait_for(lambda: not os.path.exists('/proc/%d' % pid), 'pid %d to be free' % pid)
        with open('/proc/sys/kernel/ns_last_pid', 'w') as fh:
            fh.write(str(pid - 1))
        decoy = subprocess.Popen(['sleep', '600'], start_new_session=True)
        if decoy.pid == pid:
            return decoy
        decoy.kill()
        decoy.wait()
    raise AssertionError('pid %d was taken each time before the decoy' % pid)

def gone(pid):
    try:
        with open('/proc/%d/stat' % pid, 'rb') as fh:
            return fh.read().rsplit(b')', 1)[1].split()[0] == b'Z'
    except OSError:
        return True

def wait_for(pred, what, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, 'timed out waiting for ' + what
        time.sleep(0.01)

def reap_orphans(keep=()):
    '''Reap the exited children of this namespace's init (us) but ``keep``: a zombie holds its ids.'''
    while True:
        try:
            seen = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return
        if seen is None or seen.si_pid in keep:
            return
        os.waitpid(seen.si_pid, 0)

def survives(decoy, what):
    time.sleep(0.2)  # (a signal sent is delivered at once; this only lets a late one land)
    assert decoy.poll() is None, 'the decoy on a reused pid was killed by ' + what
    decoy.kill()
    decoy.wait()
"""

WORKER_GROUP = PRELUDE + r"""
import selectors
from types import SimpleNamespace
from pytest_hermes_kernel.kernel.runner.supervisor import Supervisor
from pytest_hermes_kernel.kernel.runner.worker_process import WorkerProcess

def worker():
    pid = os.fork()
    if pid == 0:
        os.setpgid(0, 0)
        os.execvp('sleep', ['sleep', '600'])
    return pid

real_waitpid = os.waitpid
planted = {}
def waitpid(pid, flags):  # the reap frees the pid: a decoy takes it (and its group id) at once
    got, status = real_waitpid(pid, flags)
    if got and got == planted.get('worker'):
        planted['decoy'] = decoy_at(got)
    return got, status
os.waitpid = waitpid

for path in ('wait', 'reap_children'):
    wp = WorkerProcess({}, selectors.DefaultSelector(), (-1, -1))
    wp.pid = planted['worker'] = worker()
    os.kill(wp.pid, signal.SIGKILL)
    if path == 'wait':
        info = wp.wait(5.0)
    else:
        wait_for(lambda: gone(wp.pid), 'the worker to exit')
        Supervisor.reap_children(SimpleNamespace(worker=wp, cells=SimpleNamespace(cell=None)))
        info = wp.exit
    assert info == (137, 9), info
    survives(planted.pop('decoy'), 'WorkerProcess.' + path)
print('ok')
"""

SESSION_MEMBER = PRELUDE + r"""
from pytest_hermes_kernel import procs
leader = subprocess.Popen(['sh', '-c', 'sleep 600 & sleep 600 & wait'], start_new_session=True)
wait_for(lambda: len(procs.session_members(leader.pid)) == 3, 'the session to fill')
victim = min(p for p in procs.session_members(leader.pid) if p != leader.pid)
real_members = procs.session_members
planted = {}
def members(sid):  # the listing is done; the victim dies and a decoy takes its pid before the signal
    listed = real_members(sid)
    os.kill(victim, signal.SIGKILL)
    wait_for(lambda: not os.path.exists('/proc/%d' % victim), 'the victim to be reaped')
    planted['decoy'] = decoy_at(victim)
    return listed
procs.session_members = members
hit = procs.kill_session(leader.pid)
assert victim not in hit, hit
leader.wait()
survives(planted['decoy'], 'procs.kill_session')
print('ok')
"""

LOCAL_RUNNER = PRELUDE + r"""
from pytest_hermes_kernel import KernelKey, KernelRegistry, procs
from pytest_hermes_kernel.transports import LocalTransport

transport = LocalTransport()
now = [1000.0]
registry = KernelRegistry(transport_factory=lambda key: transport, idle_timeout=60.0, clock=lambda: now[0],
                          background_reaper=False)
key = KernelKey(owner='b29')
k = registry.get_or_start(key)
assert k.execute('x = 1').status == 'ok'
runner = k.runner_pid
procs.kill_session(runner)                          # the kernel is SIGKILLed from outside ...
wait_for(lambda: not transport.alive(k.launched), 'the runner to be reaped')   # ... and reaped
wait_for(lambda: not procs.session_members(runner), 'the worker to exit')
reap_orphans()                                      # (the worker, re-parented to us)
decoy = decoy_at(runner)                            # its pid, and so its session id, reused
assert procs.session_id(decoy.pid) == runner
k.interrupt()
survives_interrupt = decoy.poll() is None
now[0] += 120.0
registry.reap_once()                                # the idle reaper ends the dead kernel
info = k.shutdown()
assert survives_interrupt, 'interrupt() killed the decoy'
assert info.step == 'already-exited' or info.step == 'unreachable', info
survives(decoy, 'shutdown / the idle reaper')
registry.close()
print('ok')
"""


def _unshare() -> list[str]:
    probe = ["unshare", "-Urpf", "--mount-proc", "sh", "-c", "echo 9 > /proc/sys/kernel/ns_last_pid"]
    if shutil.which("unshare") is None or subprocess.run(probe, capture_output=True).returncode != 0:
        pytest.skip("needs a pid namespace with a writable ns_last_pid (unshare -Urpf --mount-proc)")
    return probe[:3]


def _run(script: str) -> None:
    # Its own kernel dir root: inside the pid namespace every other process's pid looks dead, so
    # the registry's stale-dir sweep (reap_once) would take the live kernel dirs of every other
    # process in the shared temp dir (it did: a parallel test's runner lost its file mid-start).
    with tempfile.TemporaryDirectory(prefix="b29-kernels-") as kernel_dirs:
        proc = subprocess.run([*_unshare(), sys.executable, "-c", textwrap.dedent(script)], capture_output=True,
                              text=True, timeout=SCENARIO_TIMEOUT_S,
                              env={**os.environ, "PYTEST_HERMES_KERNEL_DIR": kernel_dirs})
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stdout + proc.stderr


def test_runner_never_signals_the_group_of_a_reaped_worker():
    _run(WORKER_GROUP)


def test_kill_session_never_signals_a_member_whose_pid_was_reused():
    _run(SESSION_MEMBER)


def test_a_dead_kernel_whose_runner_pid_was_reused_is_left_alone():
    _run(LOCAL_RUNNER)


def test_a_remote_kill_never_signals_the_session_of_a_reused_runner_pid():
    """The ssh transport ends a runner by its session id, with ``--kernel ID``; a session leader on
    that pid whose environment lacks that kernel id is another program, left alone with its
    session. One that has it is the kernel, killed (the guard does not stop a real kill)."""
    env = {key: value for key, value in os.environ.items() if key != "HERMES_KERNEL_ID"}
    decoy = subprocess.Popen(["sh", "-c", "sleep 600 & sleep 600; wait"], start_new_session=True, env=env)
    kernel = subprocess.Popen(["sh", "-c", "sleep 600 & sleep 600; wait"], start_new_session=True,
                              env={**env, "HERMES_KERNEL_ID": "b29kernel"})
    try:
        said = [subprocess.run([sys.executable, "-c", KILL_SESSION_SCRIPT, str(proc.pid), "--kernel", "b29kernel"],
                               capture_output=True, text=True, timeout=SCENARIO_TIMEOUT_S, check=True).stdout.strip()
                for proc in (decoy, kernel)]
        assert kernel.wait(10) == -9 and said[1] == "gone", said
        assert decoy.poll() is None, "the remote kill script killed a session whose leader is not the kernel"
    finally:
        for proc in (decoy, kernel):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
