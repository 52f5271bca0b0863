"""The shell commands of the ``filecell`` transport, and the parser of the client's output.

Every function returns one command for ``ExecuteBackend.execute`` (``sh -c``). Nothing secret
is ever in a command: the token is made on the far side (``os.urandom``) into a 0600 file of
the 0700 kernel dir and read from there by the client; the command carries the runner file and
the config without the token, the kernel's (already scrubbed) environment in it as base64 JSON.

Identity: a kernel dir is ``<root>/k-<kernel id[:12]>-<16 hex nonce>``. The runner and its
worker run as ``python3 -B <dir>/hermes-runner-<hash>.pyz serve --listen <dir>/sock``, so "the
process ``pid`` has ``<dir>/sock`` in its ``/proc/<pid>/cmdline``" tells the kernel from a
process that reused its pid.

A poll runs the runner file's client (:mod:`pytest_hermes_kernel.kernel.runner.client`) through
:data:`CLIENT_BOOT` rather than as ``python3 <file> client``: running a zip as a script imports
``runpy`` first, about 5 ms of every poll; both forms run the same module.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import shlex
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...kernel.runner import client as runner_client
from ..local import LAUNCH_ENV_NAMES
from ..detached import KERNEL_PROCESSES_SCRIPT, KILL_KERNEL_SCRIPT, KILL_SESSION_SCRIPT, LOG_NAME, PIDFILE_NAME, SOCKET_NAME, launch_env, log_tail_sh
from ..runner_zipapp import ZIP_PACKAGE

#: ``python3 -I -S -B -c CLIENT_BOOT <runner file> DIR -`` with PARAMS on stdin (a poll's: they
#: carry its frames) or ``... DIR PARAMS`` (the launch's hello: no frames): the client mode of the runner
#: file without ``runpy`` (isolated, no site: a poll imports only the client and the frame codec),
#: ending without the interpreter's teardown (:func:`~pytest_hermes_kernel.kernel.runner.client.poll`).
CLIENT_BOOT = f"import sys; sys.path.insert(0, sys.argv[1]); from {ZIP_PACKAGE}.client import poll; poll(*sys.argv[2:4])"
TOKEN_NAME = "token"
ERROR_MARK = "HERMES-FILECELL-ERROR"
#: What sh, bash or Python say where no process can be made (a fork refused: EAGAIN, ENOMEM): the
#: backend host's process or memory limit, a CI job container's ``--pids-limit`` among them.
OUT_OF_PROCESSES = re.compile(r"Cannot fork|fork: (retry: )?(Resource temporarily unavailable|Cannot allocate memory)"
                              r"|\[Errno 1[12]\] (Resource temporarily unavailable|Cannot allocate memory)")
OUT_OF_PROCESSES_HINT = ("the backend's host has run out of processes or memory (ulimit -u, a pids or memory cgroup: "
                         "a CI job container's --pids-limit or --memory): end processes there, or raise the limit")
#: What Python, sh and coreutils say where a file system is full (ENOSPC, EDQUOT): the backend's root.
OUT_OF_SPACE = re.compile(r"No space left on device|Disk quota exceeded|\[Errno (28|122)\]")
#: A line of the runner's own saying why it will not start (a cgroup it cannot join, its Python too old).
RUNNER_REFUSED = re.compile(r"^(hermes-kernel runner: |the hermes kernel runner needs )", re.M)
#: The interpreter ran and died before the runner's hello (a ``sitecustomize`` that exits): its own words.
PYTHON_FAILED = re.compile(r"^(Traceback \(most recent call last\):|Fatal Python error: )", re.M)
RAISED_HINT = ("execute raises when it could not run the command (is what the backend calls reachable?); a command "
               "that ran and failed returns its exit status and output")
#: The launch's line naming the interpreter that ran it (its ``sys.executable``): the client's
#: polls run that file, with no PATH lookup and no version-manager shim in between (a pyenv shim
#: costs ~90 ms per start, measured here: most of a trivial cell). The client is stdlib-only
#: and isolated (``-I -S``), so what a wrapper would set does not reach it; the runner, which
#: runs the cells, still starts through ``python`` as given, wrapper and all.
PYTHON_MARK = "HERMES-FILECELL-PYTHON"
#: The same path in the kernel dir, for the launch's own hello.
PYTHON_FILE = "python.path"
#: Largest command text sent in one execute (Linux limits one argv string to 128 KiB).
MAX_COMMAND_BYTES = 100_000
#: Ends the here-document (quoted: no expansion) that carries the config (base64 never holds ``_``).
_HEREDOC_END = "HERMES_CONFIG_END"
#: Ends the here-document that carries a poll's parameters (its frames: a cell's code, a tool's
#: result) to the client's stdin: in its argv, ``ps`` on the backend's host showed them (B43).
#: The client reads one line, so a backend that appends to the command (``; echo $?``, which
#: spoils this end line) still hands it its parameters whole.
_PARAMS_END = "HERMES_PARAMS_END"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def b64(data: bytes) -> str:
    return binascii.b2a_base64(data, newline=False).decode("ascii")


def _q(text: str) -> str:
    return shlex.quote(text)


def _launch_env_lines(kernel_id: str, unset: list[str]) -> str:
    """The runner's launch environment: the far side's own, less ``unset``, plus the kernel markers.

    ``unset`` names are the host's (never a user's); the shell drops the identifiers among them
    but those an interpreter may need to start (:data:`~..local.LAUNCH_ENV_NAMES`); the runner
    config's ``env_unset`` removes every one of them from the kernel (``kernel/runner/environ.py``).
    """
    drop = " ".join(n for n in unset if _NAME.match(n) and n not in LAUNCH_ENV_NAMES)
    exports = " ".join(f"{name}={_q(value)}" for name, value in launch_env(kernel_id).items())
    return "; ".join(([f"unset {drop}"] if drop else []) + [f"export {exports}"])


#: Run in the new kernel dir: the config (base64 JSON, no token) on stdin (a here-document: it
#: holds the kernel's environment, which must be in no argv, B43), argv: pairs of file name and
#: zlib+base64 content. Makes the token here (never on a command line) and writes every
#: file 0600 with O_EXCL.
_SETUP = r"""
import base64, json, os, sys, zlib
def put(name, data):
    with os.fdopen(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), 'wb') as fh:
        fh.write(data)
config = json.loads(base64.b64decode(sys.stdin.read().strip()))
config['token'] = os.urandom(24).hex()
put('TOKEN_NAME', config['token'].encode())
put('config.json', json.dumps(config).encode())
put('LOG_NAME', b'')
args = sys.argv[1:]
for i in range(0, len(args), 2):
    put(args[i], zlib.decompress(base64.b64decode(args[i + 1])))
exe = sys.executable or os.path.realpath('/proc/self/exe')  # '' with no PATH in the environment
put('PYTHON_FILE', exe.encode())
print('PYTHON_MARK', exe)
""".replace("TOKEN_NAME", TOKEN_NAME).replace("LOG_NAME", LOG_NAME).replace("PYTHON_MARK", PYTHON_MARK).replace("PYTHON_FILE", PYTHON_FILE)


def launch_command(*, root: str, kdir: str, python: str, runner: str, files: Mapping[str, bytes],
                   config: Mapping[str, Any], kernel_id: str, unset: list[str], hello_params: str,
                   setup_python: str | None = None) -> str:
    """One execute that makes the kernel dir, ships the files, starts the runner and says hello.

    The kernel's environment is in ``config`` (base64 JSON, so no name or value is ever shell
    text); the runner starts with the backend's own environment less ``unset``, plus the kernel id.

    :param runner: the runner file's name, one of ``files``.
    :param setup_python: the interpreter of the isolated setup step (default ``python``): what
        ``python`` resolved to at an earlier launch, which skips a wrapper such as a pyenv shim
        (~90 ms, measured); the runner itself always starts through ``python``.
    :returns: the command. It prints ``ready <pid>`` (the runner), then the client's output with
        the hello frame; on failure a line ``HERMES-FILECELL-ERROR ...`` and the runner log tail.
    """
    shipped = " ".join(f"{_q(name)} {b64(zlib.compress(data, 9))}" for name, data in files.items())
    # paths and the interpreter are written in as quoted words, never as shell variables: the
    # backend's environment (or the unset list) can hold any name and must not steer the launch
    r, d, py, setup_py = _q(root), _q(kdir), _q(python), _q(setup_python or python)
    exe = f'"$(cat {PYTHON_FILE})"'  # what ``python`` resolved to, from the file the setup wrote
    return "\n".join([
        "umask 077",
        f'command -v {py} >/dev/null 2>&1 || {{ echo "{ERROR_MARK} python: "{py}" not found"; exit 127; }}',
        # a root that cannot be made says why (a read-only file system, a parent it may not write):
        # its reason was thrown away, and the check below said "not a directory owned by ..."
        (f'mkdir -p {r} 2>/dev/null || [ -e {r} ] || [ -L {r} ] || {{ echo "{ERROR_MARK} root: "{r}" cannot be made: '
         f'$(mkdir -p {r} 2>&1 | tail -n 1)"; exit 1; }}'),
        (f'[ -d {r} ] && [ ! -L {r} ] && [ -O {r} ] || {{ echo "{ERROR_MARK} root: "{r}" is not a directory '
         'owned by $(id -un)"; exit 1; }'),
        (f'case $(ls -ld {r}) in d???------*) ;; *) echo "{ERROR_MARK} root: "{r}" is open to group or others '
         '(not 0700)"; exit 1;; esac'),
        f'mkdir -m 700 {d} || {{ echo "{ERROR_MARK} dir: cannot make "{d}; exit 1; }}',
        f"cd {d} || exit 1",
        (f'{setup_py} -I -S -c {_q(_SETUP)} {shipped} <<\'{_HEREDOC_END}\'\n{b64(json.dumps(dict(config)).encode())}\n'
         f'{_HEREDOC_END}\n[ $? = 0 ] || {{ echo "{ERROR_MARK} setup failed"; exit 1; }}'),
        (f"( {_launch_env_lines(kernel_id, unset)}; exec {py} -B {_q(f'{kdir}/{runner}')} serve --listen "
         f"{_q(f'{kdir}/{SOCKET_NAME}')} < config.json ) || {{ echo \"{ERROR_MARK} runner: exit $?\"; "
         f"rm -f config.json; tail -n 20 {LOG_NAME}; exit 1; }}"),
        "rm -f config.json",
        f"{exe} -I -S -B -c {_q(CLIENT_BOOT)} {_q(f'{kdir}/{runner}')} {d} {hello_params}",
    ])


def client_command(*, kdir: str, python: str, runner: str, params: str) -> str:
    """One long poll: the runner file's client (see :mod:`pytest_hermes_kernel.kernel.runner.client`).

    :param runner: the runner file's name in ``kdir``.
    :param params: from :func:`params`; a here-document to the client's stdin, never its argv.
    """
    app = _q(f"{kdir}/{runner}")
    return (f'[ -f {app} ] || {{ echo "{ERROR_MARK} the runner file "{app}" is gone: the runner ended, a cell removed its '
            'dir, or the backend did not keep the kernel dir from one execute to the next (every command must see the '
            'same filesystem)"; exit 1; }; '
            f"exec {_q(python)} -I -S -B -c {_q(CLIENT_BOOT)} {app} {_q(kdir)} - <<'{_PARAMS_END}'\n{params}\n{_PARAMS_END}")


def drop_commands(*, kdir: str, seq: int, data: bytes) -> list[str]:
    """Commands that put frames into the kernel dir for the running client to pick up."""
    name = f"{kdir}/{runner_client.CLIENT_DROP_PREFIX}{seq:010d}"
    text = b64(data)
    step = MAX_COMMAND_BYTES - 200
    chunks = [text[i:i + step] for i in range(0, len(text), step)] or [""]
    cmds = [f"umask 077; printf %s {c} >> {_q(name)}.tmp" for c in chunks]
    cmds[-1] += f" && mv -f {_q(name)}.tmp {_q(name)}"
    return cmds


def _verified(kdir: str, pid: int) -> str:
    return f"grep -qF -- {_q(f'{kdir}/{SOCKET_NAME}')} /proc/{int(pid)}/cmdline 2>/dev/null"


def alive_command(*, kdir: str, pid: int) -> str:
    """Prints ``ALIVE`` when ``pid`` runs and is this kernel's runner (a reused pid is not)."""
    return f"{_verified(kdir, pid)} && echo ALIVE || echo GONE"


def state_command(*, kdir: str, pid: int) -> str:
    """Prints ``STATE <c>``, the runner's state letter of ``/proc/<pid>/stat`` (the field after the
    last ``)``: a command name may hold both), or ``GONE`` (not running, or a reused pid)."""
    return f"{_verified(kdir, pid)} && echo STATE $(sed 's/.*) //; s/ .*//' /proc/{int(pid)}/stat) || echo GONE"


def reap_command(*, kdir: str, pid: int, timeout: float) -> str:
    """Waits (on the far side) up to ``timeout`` s for the runner to end; prints GONE or ALIVE.

    Looks every 5 ms for the first 50 ms, then every 50 ms: a runner told to shut down is
    usually gone a few ms after the shutdown's execute returns, and one 50-ms step from the
    start made the median filecell shutdown 80 ms where it is 30 (2026-12-07, local shell)."""
    rounds = max(1, int(max(0.0, timeout - 0.05) / 0.05)) + 10
    return (f"i=0; d=0.005; while [ $i -lt {rounds} ]; do {_verified(kdir, pid)} || {{ echo GONE; exit 0; }}; "
            "sleep $d; i=$((i+1)); [ $i -lt 10 ] || d=0.05; done; echo ALIVE")


#: argv[1]: runner pid, argv[2]: its socket path. Exits quietly (printing ``gone``) when the pid
#: is alive but is not the runner (reused: its session cannot hold our processes any more).
_VERIFY_RUNNER = r"""
import sys
def _reused(pid, marker):
    try:
        with open('/proc/%d/stat' % pid, 'rb') as fh:
            stat = fh.read()
        with open('/proc/%d/cmdline' % pid, 'rb') as fh:
            cmdline = fh.read()
    except OSError:
        return False
    return stat[stat.rfind(b')') + 2:].split()[0] != b'Z' and marker not in cmdline
if _reused(int(sys.argv[1]), sys.argv[2].encode()):
    print('gone')
    sys.exit(0)
"""


def kill_command(*, kdir: str, pid: int, python: str) -> str:
    """SIGKILLs every process of the runner's session (its pid is its sid); prints ``gone``."""
    script = _VERIFY_RUNNER + KILL_SESSION_SCRIPT
    return f"exec {_q(python)} -I -S -c {_q(script)} {int(pid)} {_q(f'{kdir}/{SOCKET_NAME}')}"


def kill_kernel_command(*, kernel_id: str, python: str) -> str:
    """SIGKILLs every process carrying kernel ``kernel_id``'s marker (a launch cut short before
    the runner's pid was known); prints ``gone`` or ``left <pids>``."""
    return f"exec {_q(python)} -I -S -c {_q(KILL_KERNEL_SCRIPT)} {_q(kernel_id)}"


def processes_command(*, kernel_id: str, python: str) -> str:
    return f"exec {_q(python)} -I -S -c {_q(KERNEL_PROCESSES_SCRIPT)} {_q(kernel_id)}"


def log_command(*, kdir: str, lines: int) -> str:
    return f"{log_tail_sh(f'{kdir}/{LOG_NAME}', lines)} 2>/dev/null"  # (a cell's fifo there: no tail waits)


def pidfile_command(*, kdir: str) -> str:
    return f"cat {_q(kdir)}/{PIDFILE_NAME} 2>/dev/null"


def cleanup_command(*, root: str, kdir: str) -> str:
    if not kdir.startswith(root.rstrip("/") + "/k-"):
        raise ValueError(f"refusing to remove {kdir!r}: not a kernel dir under {root!r}")
    return f"rm -rf -- {_q(kdir)}"


# --------------------------------------------------------------------------------- parsing
@dataclass
class ClientOutput:
    """What one client run printed: the frames (raw bytes), whether it sent, and how it ended."""

    frames: list[bytes] = field(default_factory=list)
    began: bool = False
    sent: bool = False
    status: str | None = None
    noise: list[str] = field(default_factory=list)
    chars: int = 0  # how much output the backend returned
    code: object = None  # the exit status the backend returned with it (never read as the poll's outcome)

    @property
    def cut(self) -> str | None:
        """Which end of the output is missing (``"start"``: an end line with no begin line before
        it; ``"end"``: a begin line and no end line), or ``None``."""
        if self.status is not None and not self.began:
            return "start"
        return "end" if self.began and self.status is None else None


def parse_client_output(text: str) -> ClientOutput:
    """Split a client's output into frames and markers; other lines are kept as ``noise``.

    An end line is read even with no begin line before it: a backend that keeps only the tail of
    an output (a sandbox API's cap) cut the begin line off, and the client did run (:attr:`ClientOutput.cut`).
    """
    r = runner_client
    out = ClientOutput(chars=len(text))
    for line in text.splitlines():
        line = line.strip()
        if line == r.CLIENT_BEGIN:
            out.began = True
        elif line.startswith(r.CLIENT_END):
            out.status = line[len(r.CLIENT_END):].strip().rstrip("@").strip() or None
        elif not out.began:
            out.noise.append(line)
        elif line == r.CLIENT_SENT:
            out.sent = True
        elif line:
            try:
                out.frames.append(base64.b64decode(line, validate=True))
            except (binascii.Error, ValueError):
                out.noise.append(line)
    return out


def parse_ready(text: str) -> int | None:
    """The runner pid from ``ready <pid>``, or ``None``."""
    for line in text.splitlines():
        word, _, rest = line.strip().partition(" ")
        if word == "ready" and rest.strip().isdigit():
            return int(rest)
    return None


def parse_python(text: str) -> str | None:
    """The interpreter the launch ran (its :data:`PYTHON_MARK` line: an absolute path), or ``None``."""
    for line in text.splitlines():
        word, _, rest = line.strip().partition(" ")
        if word == PYTHON_MARK and rest.startswith("/") and "\n" not in rest:
            return rest
    return None


def params(**values: Any) -> str:
    """Encode client parameters (base64 JSON: no quoting needed), for the client's stdin."""
    return b64(json.dumps(values, separators=(",", ":")).encode())


def fork_hint(said: object) -> str:
    r"""``\nHint: ...`` where ``said`` (an error, its text) is a fork refused, else ``""``."""
    return f"\nHint: {OUT_OF_PROCESSES_HINT}" if OUT_OF_PROCESSES.search(str(said)) else ""


def needs(python: str, root: str) -> str:
    """The hint of a launch that printed something but not why it failed."""
    return f"the backend needs sh, python3 ({python!r}) and a writable {root!r}"


def start_hint(out: str, python: str, root: str) -> str:
    """The hint of a failed filecell launch, from what it printed (``out``)."""
    if re.search(f"^{re.escape(ERROR_MARK)} root: .* cannot be made: ", out, re.M):
        return "make it, or point root= elsewhere: a directory the backend's user may make (closed to group and others)"
    if f"{ERROR_MARK} python: " in out:
        return f"install Python 3 on the backend, or pass python= the path of an interpreter there ({python!r} is not one)"
    if f"{ERROR_MARK} root: " in out:
        return ("root= must be a real directory of the backend's user, closed to group and others (0700); "
                "nothing is chmodded or removed to fit: point root= elsewhere")
    if RUNNER_REFUSED.search(out):  # sh, python3 and the root did their part: the runner said what it lacks
        return f"the kernel runner itself refused to start ({python!r}), saying why above"
    if OUT_OF_SPACE.search(out):  # (it said "the backend needs ... a writable root": the root is there, full)
        return (f"the file system of {root!r} on the backend is full (the runner alone is about 200 KB): free space "
                "there, or point root= at another")
    if OUT_OF_PROCESSES.search(out):  # (a fork refused, "sh: 1: Cannot fork", is the host's process limit, not a missing sh)
        return OUT_OF_PROCESSES_HINT
    if PYTHON_FAILED.search(out):  # python3 is there and ran: the hint named it as missing (handed-2 B32)
        return (f"the interpreter {python!r} started and failed before the kernel runner said hello, saying why "
                "above (a sitecustomize or .pth file of its site, or a broken installation?)")
    if out.strip():
        return needs(python, root)
    return ("the launch printed nothing at all: it prints the runner's pid and hello, so the backend lost the "
            "command's output (what it may have started was ended)")
