"""What the docker and ssh transports share: the runner's config, its ``ready`` line, in-place scripts.

Both write the runner file (:mod:`.runner_zipapp`) into the kernel dir, start the same detached
runner (``python3 -B <dir>/hermes-runner-<hash>.pyz serve --listen <dir>/sock``), attach
through ``... relay <dir>/sock`` and end a kernel by killing its runner's whole *session*: the
runner calls ``setsid``, so its pid is its session id, and every process a cell started (in any
process group) is found by scanning ``/proc/*/stat`` where the kernel runs.
The scripts here are run with ``python3 -c`` on the far side, so they work on any host that can
run the kernel at all (no procps needed).
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Callable
from typing import Any

from ..kernel.contract import LaunchSpec
from ..kernel.runner.environ import SERVER_KERNEL_ID_PREFIX
from .far_code import RMTREE_CODE

SOCKET_NAME = "sock"
PIDFILE_NAME = "runner.pid"
LOG_NAME = "runner.log"
LOG_TAIL_LINES = 20


def log_tail_sh(path: str, lines: int) -> str:
    """``sh`` code printing the last ``lines`` lines of the log ``path`` when it is a regular file
    (its kernel dir is a cell's working dir: a cell made the log a fifo, and ``tail``'s open waited
    for a writer for good: a docker exec for ever, an ssh or filecell one 15 s, its ``tail`` left there)."""
    return f"[ ! -f {shlex.quote(path)} ] || exec tail -n {int(lines)} -- {shlex.quote(path)}"


#: Free KiB below which a failed runner's story names its disk (the runner file alone is ~214 KiB).
DISK_LOW_KIB = 256
_DISK_FREE = "HERMES-DISK-FREE "


def disk_free_sh(path: str) -> str:
    """``sh`` printing ``HERMES-DISK-FREE <KiB>`` for the file system of ``path`` (``df -P``), or
    nothing where the host cannot say (no ``df`` or ``awk``)."""
    return f"df -Pk {shlex.quote(path)} 2>/dev/null | awk 'NR == 2 {{print \"{_DISK_FREE}\" $4}}'"


def disk_words(out: str, path: str, disk: str, hint: str) -> tuple[str, str]:
    """``out`` without the line :func:`disk_free_sh` printed, and the words for a disk that is (all
    but) full (``""``: it has room, or cannot say): a runner that died of it at its start could
    not write even its log, and the start error said only "exit code 70".

    :param disk: whose disk, for the words ("the container's disk").
    :param hint: what to do, appended.
    """
    kept, free = [], None
    for line in out.splitlines():
        if line.startswith(_DISK_FREE) and line[len(_DISK_FREE):].strip().isdigit():
            free = int(line[len(_DISK_FREE):])
        else:
            kept.append(line)
    text = "\n".join(kept)
    if free is None or free >= DISK_LOW_KIB:
        return text, ""
    return text, f"{disk} has {free} KiB free at {path}: the kernel's files cannot be written there. {hint}"


#: Host variables that describe the host (paths, identity), not the kernel; they are not sent
#: to a container or ssh host unless the kernel's options set them to another value.
HOST_BOUND_ENV = frozenset({
    "PATH", "HOME", "PWD", "OLDPWD", "SHELL", "USER", "LOGNAME", "MAIL", "HOSTNAME", "TMPDIR",
    "TEMP", "TMP", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "VIRTUAL_ENV",
    "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "LD_LIBRARY_PATH", "LD_PRELOAD", "XDG_RUNTIME_DIR",
    "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "DISPLAY", "SSH_AUTH_SOCK",
    "SSH_CONNECTION", "SSH_CLIENT", "SSH_TTY", "DBUS_SESSION_BUS_ADDRESS", "TERM",
})

#: Where kernel dirs are made: in a container, and (relative to the login's home) on an ssh host.
DOCKER_KERNEL_ROOT = "/tmp/hermes-kernels"
SSH_KERNEL_ROOT = ".hermes-kernels"

#: The tail of the kill scripts: SIGKILL what ``members()`` lists until none is left (5 s at
#: most); prints ``gone`` or ``left <pids>``. Each kill goes through a pidfd opened *before*
#: ``is_member`` re-checks the process (B29: a pid listed a moment ago may be another process's
#: by now); without pidfds the re-check runs immediately before ``kill``.
_KILL_UNTIL_GONE = r"""
import signal
PIDFD = hasattr(os, 'pidfd_open') and hasattr(signal, 'pidfd_send_signal')
def members():
    return [int(n) for n in os.listdir('/proc') if n.isdigit() and int(n) != os.getpid() and is_member(n)]
def kill(pid):
    fd = None
    try:
        if PIDFD:
            fd = os.pidfd_open(pid)
        if is_member(str(pid)):
            if fd is None:
                os.kill(pid, 9)
            else:
                signal.pidfd_send_signal(fd, 9)
    except OSError:
        pass
    finally:
        if fd is not None:
            os.close(fd)
deadline = time.monotonic() + 5.0
while True:
    pids = members()
    if not pids:
        print('gone')
        break
    for pid in pids:
        kill(pid)
    if time.monotonic() > deadline:
        print('left', *pids)
        break
    time.sleep(0.02)
"""

#: The kill scripts' reader of a process: ``live_env(name)`` is its environment (a list of
#: ``NAME=value`` bytes), or ``None`` when it is gone, unreadable or a zombie.
LIVE_ENV_CODE = r"""
def live_env(name):
    try:
        with open('/proc/%s/environ' % name, 'rb') as fh:
            env = fh.read().split(b'\0')
        with open('/proc/%s/stat' % name, 'rb') as fh:
            stat = fh.read()
    except OSError:
        return None
    return None if stat[stat.rfind(b')') + 2:].split()[0] == b'Z' else env
"""

#: A script's ``stat_fields(pid)``: the fields of ``/proc/PID/stat`` after the command name
#: (``[0]`` the state, ``[3]`` the session id); ``None`` when there is no such process.
STAT_FIELDS_CODE = r"""
def stat_fields(pid):
    try:
        with open('/proc/%s/stat' % pid, 'rb') as fh:
            stat = fh.read()
    except OSError:
        return None
    return stat[stat.rfind(b')') + 2:].split()
"""

#: argv[1]: the runner's session id; then optionally ``--kernel ID``: a live leader of that
#: session without that kernel id is another's (the pid was reused after a reboot): nothing is
#: killed then. SIGKILLs every non-zombie member until none is left (5 s at most); prints ``gone`` or ``left <pids>``.
KILL_SESSION_SCRIPT = ("import os, sys, time\nsid = int(sys.argv[1])\n" + STAT_FIELDS_CODE + LIVE_ENV_CODE + r"""
lead = stat_fields(sid)
foreign = (sys.argv[2:3] == ['--kernel'] and lead is not None and lead[0] != b'Z' and int(lead[3]) == sid
           and ('HERMES_KERNEL_ID=' + sys.argv[3]).encode() not in (live_env(str(sid)) or ()))
def is_member(name):
    fields = stat_fields(name)
    return not foreign and fields is not None and int(fields[3]) == sid and fields[0] != b'Z'
""" + _KILL_UNTIL_GONE)

#: argv[1]: the pid of a kernel a server forked a moment ago, run as a probe (a fork of that
#: server). As :data:`KILL_SESSION_SCRIPT`, and that pid itself while it is still the server's
#: child: the kernel may not have made its session yet (``setsid`` is its first step, after the
#: server has answered), and a session kill alone then found nothing and left it running.
KILL_FORKED_SCRIPT = ("import os, sys, time\nsid = int(sys.argv[1])\nserver = os.getppid()\n" + STAT_FIELDS_CODE + r"""
def is_member(name):
    fields = stat_fields(name)
    if fields is None or fields[0] == b'Z':
        return False
    return int(fields[3]) == sid or (int(name) == sid and int(fields[1]) == server)
""" + _KILL_UNTIL_GONE)

#: argv[1]: a pid. Exit status 0 when it exists and is not a zombie.
ALIVE_SCRIPT = r"""
import sys
try:
    with open('/proc/%s/stat' % sys.argv[1], 'rb') as fh:
        stat = fh.read()
except OSError:
    sys.exit(1)
sys.exit(0 if stat[stat.rfind(b')') + 2:].split()[0] != b'Z' else 1)
"""

#: Seconds a reap exec (:data:`REAP_SCRIPT`) waits at most for a runner that said it is exiting.
REAP_WAIT_S = 3.0

#: argv[1]: a pid, argv[2]: seconds to wait for it to end, argv[3] (optional): its kernel dir,
#: removed once it ended. Prints ``gone`` (``gone left``: the dir stayed) or ``alive``: the reap and
#: cleanup of a spawned runner asked to exit, in one exec, not a probe, maybe a kill, and an ``rm``.
REAP_SCRIPT = "import os, sys, time\n" + STAT_FIELDS_CODE + RMTREE_CODE + r"""
def alive(pid):
    fields = stat_fields(pid)
    return fields is not None and fields[0] != b'Z'
deadline = time.monotonic() + float(sys.argv[2])
while alive(sys.argv[1]) and time.monotonic() < deadline:
    time.sleep(0.005)
if alive(sys.argv[1]):
    print('alive')
else:
    if len(sys.argv) > 3:
        rmtree(sys.argv[3])
    print('gone left' if len(sys.argv) > 3 and os.path.lexists(sys.argv[3]) else 'gone')
"""

#: argv[1]: a pid, argv[2]: a signal number.
SIGNAL_SCRIPT = "import os, sys; os.kill(int(sys.argv[1]), int(sys.argv[2]))"

#: argv[1]: a kernel id. Prints ``pid<TAB>cmdline`` of every live process whose environment
#: carries ``HERMES_KERNEL_ID=<id>`` (run as root or as the kernel's user).
KERNEL_PROCESSES_SCRIPT = r"""
import os, sys
want = b'HERMES_KERNEL_ID=' + sys.argv[1].encode()
for name in os.listdir('/proc'):
    if not name.isdigit() or int(name) == os.getpid():
        continue
    try:
        with open('/proc/%s/environ' % name, 'rb') as fh:
            env = fh.read().split(b'\0')
        with open('/proc/%s/stat' % name, 'rb') as fh:
            stat = fh.read()
        with open('/proc/%s/cmdline' % name, 'rb') as fh:
            cmd = fh.read().replace(b'\0', b' ').decode('utf-8', 'replace').strip()
    except OSError:
        continue
    if want in env and stat[stat.rfind(b')') + 2:].split()[0] != b'Z':
        print('%s\t%s' % (name, cmd[:160]))
"""

#: argv[1]: a host pid; argv[2:]: kernel dirs, and ``left:<pid>:<start ticks>:<kernel id>`` for
#: each process a spawned runner said its cells left behind (:class:`~.far_records.LeftBehind`). Prints
#: ``pid<TAB>start ticks<TAB>kernel id<TAB>cmdline`` of every live process whose environment
#: carries ``HERMES_KERNEL_HOST_PID=<pid>`` (the kernels of that host, for the leak probe that
#: lists them where they run), of every unmarked child of that host's kernel servers (kernel id
#: ``?``: what a server, a subreaper, adopted from its kernels: a process a cell started with an
#: environment of its own), and of each left-behind process that still runs; then
#: ``dir<TAB>path`` for each of the given kernel dirs that still exists.
HOST_PROCESSES_SCRIPT = r"""
import os, sys
left = {}
for arg in sys.argv[2:]:
    if arg.startswith('left:'):
        _, pid, start, kid = arg.split(':')
        left[(pid, start)] = kid
    elif os.path.isdir(arg):
        print('dir\t' + arg)
want = b'HERMES_KERNEL_HOST_PID=' + sys.argv[1].encode()
servers, unmarked = set(), []
for name in os.listdir('/proc'):
    if not name.isdigit() or int(name) == os.getpid():
        continue
    try:
        with open('/proc/%s/environ' % name, 'rb') as fh:
            env = fh.read().split(b'\0')
        with open('/proc/%s/stat' % name, 'rb') as fh:
            stat = fh.read()
        with open('/proc/%s/cmdline' % name, 'rb') as fh:
            cmd = fh.read().replace(b'\0', b' ').decode('utf-8', 'replace').strip()
    except OSError:
        continue
    fields = stat[stat.rfind(b')') + 2:].split()
    if fields[0] == b'Z':
        continue
    if want not in env:
        unmarked.append((fields[1], name, fields[19].decode(), cmd))
        continue
    kid = [e[17:].decode() for e in env if e.startswith(b'HERMES_KERNEL_ID=')] or ['?']
    if kid[0].startswith('SERVER_PREFIX'):  # a kernel server is the transport's, not a kernel
        servers.add(name.encode())
    else:
        print('%s\t%s\t%s\t%s' % (name, fields[19].decode(), kid[0], cmd[:160]))
for ppid, name, start, cmd in unmarked:
    if ppid in servers or (name, start) in left:
        print('%s\t%s\t%s\t%s' % (name, start, left.get((name, start), '?'), cmd[:160]))
""".replace("SERVER_PREFIX", SERVER_KERNEL_ID_PREFIX)

#: The line a read-only ``docker exec`` prints last (see :func:`until_complete`); the python code
#: that prints it, appended to a scan's script; the shell command that prints it.
SCAN_END_LINE = b"hermes-scan-end\n"
SCAN_END_CODE = "\nimport sys as _hk_sys\n_hk_sys.stdout.write('hermes-scan-end\\n')\n"
SCAN_END_SH = "echo hermes-scan-end"
#: How many times :func:`until_complete` asks.
SCAN_TRIES = 3


def until_complete(ask: Callable[[], tuple[int | None, bytes | None]],
                   tries: int = SCAN_TRIES) -> tuple[bytes | None, int | None, bytes]:
    """Run a read-only exec until its answer is complete: ``(stdout without the end line, or None
    when no answer of ``tries`` was; the last exit code; the last stdout)``.

    ``ask()`` runs the exec, whose command prints :data:`SCAN_END_LINE` last, and returns ``(exit code,
    stdout)``. A loaded engine can answer an exec with exit code 0 and its output lost or cut
    (moby/moby#27289, docker/docker-py#2042; 5 in 1200 reads under load): read as is, a scan sees no process
    where there is one. An answer without the end line is asked again (the exec only reads: no harm).
    """
    code, out = None, b""
    for _ in range(tries):
        code, answer = ask()
        out = answer or b""
        if code == 0 and out.endswith(SCAN_END_LINE):
            return out[:-len(SCAN_END_LINE)], code, out
    return None, code, out

#: argv[1]: a pid, argv[2]: its start ticks (field 22 of /proc/<pid>/stat). SIGKILLs it only if
#: it is still that process (never a reused pid); exit status 0 when it was.
KILL_IF_SAME_SCRIPT = r"""
import os, sys
try:
    with open('/proc/%s/stat' % sys.argv[1], 'rb') as fh:
        stat = fh.read()
except OSError:
    sys.exit(1)
if stat[stat.rfind(b')') + 2:].split()[19].decode() != sys.argv[2]:
    sys.exit(1)
os.kill(int(sys.argv[1]), 9)
"""


def parse_host_processes(output: bytes) -> list[tuple[str, str, str, str]]:
    """``(pid, start ticks, kernel id, cmdline)`` rows of :data:`HOST_PROCESSES_SCRIPT` output."""
    rows = []
    for line in output.decode("utf-8", "replace").splitlines():
        parts = line.split("\t", 3)
        if len(parts) == 4 and parts[0].isdigit():
            rows.append((parts[0], parts[1], parts[2], parts[3]))
    return rows


def parse_existing_dirs(output: bytes) -> list[str]:
    """The kernel dirs :data:`HOST_PROCESSES_SCRIPT` found still there."""
    return [line[4:] for line in output.decode("utf-8", "replace").splitlines() if line.startswith("dir\t")]


#: argv[1]: a kernel id. SIGKILLs every live process whose environment carries
#: ``HERMES_KERNEL_ID=<id>`` until none is left (5 s at most); prints ``gone`` or ``left <pids>``.
#: For a launch that failed before the runner's pid was known: nothing it started may outlive it.
KILL_KERNEL_SCRIPT = (r"""
import os, sys, time
want = b'HERMES_KERNEL_ID=' + sys.argv[1].encode()
""" + LIVE_ENV_CODE + r"""
def is_member(name):
    env = live_env(name)
    return env is not None and want in env
""" + _KILL_UNTIL_GONE)


#: argv[1]: a kernel root (``~`` expanded). Before a container kept between runs is handed out
#: (``--hermes-reuse``): SIGKILLs every live process carrying the kit's kernel marker
#: (``HERMES_KERNEL_ID``, kernel servers included) until none is left (5 s at most), prints
#: ``gone`` or ``left <pids>``, then removes what is in the kernel root (a symlink in its place is
#: left alone; a link in it is unlinked, never followed).
CLEAR_KERNELS_SCRIPT = (r"""
import os, sys, time
""" + LIVE_ENV_CODE + RMTREE_CODE + r"""
def is_member(name):
    env = live_env(name)
    return env is not None and any(e.startswith(b'HERMES_KERNEL_ID=') for e in env)
""" + _KILL_UNTIL_GONE + r"""
root = os.path.expanduser(sys.argv[1])
if os.path.isdir(root) and not os.path.islink(root):
    for name in os.listdir(root):
        path = os.path.join(root, name)
        if os.path.isdir(path) and not os.path.islink(path):
            rmtree(path)
        else:
            try:
                os.unlink(path)
            except OSError:
                pass
""")


def portable_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` without the host-bound variables that still hold the host's own value.

    :param env: the kernel environment the handle built (scrubbed of secrets already).
    :returns: what to set on the far side; the far side's own ``PATH``/``HOME`` stay.
    """
    return {k: v for k, v in env.items() if not (k in HOST_BOUND_ENV and os.environ.get(k) == v)}


def launch_env(kernel_id: str) -> dict[str, str]:
    """What a runner's start adds to the far side's own environment: the kernel markers only.

    The kernel's environment is no part of the launch: it travels in the runner config and the worker
    applies it (``kernel/runner/environ.py``), so no name a user passes changes which interpreter starts
    or how. ``HERMES_KERNEL_ID`` and ``HERMES_KERNEL_HOST_PID`` are in the runner's own environment
    (``/proc/<pid>/environ``): the leak probes, ``hermes-kernel sweep`` and :data:`KILL_KERNEL_SCRIPT`
    find a kernel's processes by them.
    """
    return {"HERMES_KERNEL_ID": kernel_id, "HERMES_KERNEL_HOST_PID": str(os.getpid())}


def runner_config(spec: LaunchSpec, kernel_dir: str, orphan_timeout: float | None) -> bytes:
    """The JSON config for ``serve --listen`` (goes to the runner's stdin, never argv).

    It carries the kernel's environment (``env``: :func:`portable_env`, set over the far side's own by the worker).

    :param orphan_timeout: seconds; when not ``None`` it replaces the kernel option's value.
    """
    config: dict[str, Any] = dict(spec.config, kernel_dir=kernel_dir, env=portable_env(spec.env),
                                  pidfile=f"{kernel_dir}/{PIDFILE_NAME}", log=f"{kernel_dir}/{LOG_NAME}")
    if orphan_timeout is not None:
        config["orphan_timeout"] = orphan_timeout
    return json.dumps(config).encode("utf-8")


def parse_ready(output: bytes) -> int | None:
    """The runner pid from ``serve --listen``'s ``ready <pid>`` line, or ``None``."""
    for line in output.decode("utf-8", "replace").splitlines():
        word, _, rest = line.strip().partition(" ")
        if word == "ready" and rest.strip().isdigit():
            return int(rest)
    return None


def parse_kernel_processes(output: bytes) -> list[str]:
    """``"pid: cmdline"`` lines from :data:`KERNEL_PROCESSES_SCRIPT` output."""
    found = []
    for line in output.decode("utf-8", "replace").splitlines():
        pid, sep, cmd = line.partition("\t")
        if sep and pid.isdigit():
            found.append(f"{pid}: {cmd}")
    return found


class NullStream:
    """Stand-in stream of a launch record that has none: one made only to reach a kept runner again, or to
    clean up a launch that never got one (never used for traffic)."""

    def send(self, data: bytes) -> None:
        raise OSError("no stream")

    def recv(self, timeout: float | None) -> bytes:
        return b""

    def close(self) -> None:
        pass
