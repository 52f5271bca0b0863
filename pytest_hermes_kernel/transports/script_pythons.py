"""Which interpreter runs a docker or ssh transport's helper scripts where its kernels run.

The scans, kills, signals, the reaper's and the files' scripts run in a kernel's container or on
its ssh host as ``<python> -I -c SCRIPT ARGS``, one exec each. The transport's ``python``
(``python3``) need not be there: an image's or a host's Python may be only where a kernel's own
``python=`` names it (``/opt/py/bin/python3``). Every such exec then failed ("executable file not
found", ``sh: python3: not found``): on docker ``kill`` did nothing and said ``False`` (the runner
ran on), a leak scan or ``kernel_processes`` raised ``TransportLostError``, a spawn-path shutdown
was never ``confirmed``; on both, ``signal_pid`` (``hermes_kernel_sigkill``) found "no process"
(``tests/regressions/test_a_docker_kernel_whose_python_is_not_python3_is_probed_and_killed.py``,
``tests/regressions/test_an_ssh_kernel_whose_python_is_not_python3_is_signalled_and_listed.py``).

A script runs with the interpreter its caller names, else the one that last ran a script in that
place (a container id, an ssh target), else the transport's, then each ``python=`` a kernel of the
transport was launched or found with there (:class:`ScriptPythons`), until one starts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

#: Exit statuses of an exec whose program could not be started: docker's (runc: 126, "OCI runtime
#: exec failed: ... executable file not found in $PATH"; crun: 127) and a shell's (127, "not found").
_NOT_STARTED = (126, 127)
#: Places whose interpreters are remembered (the oldest forgotten first: fresh containers go).
MAX_PLACES = 256

Answer = tuple[int | None, bytes, bytes]


def program_missing(code: int | None, out: bytes, err: bytes) -> bool:
    """Whether an exec's answer is "could not start the program" (docker's, a shell's), not the script's."""
    said = out[-500:] + err[-500:]
    return code in _NOT_STARTED and (b"exec failed" in said or b"not found" in said or b"no such file" in said.lower())


class ScriptPythons:
    """The interpreters known in each place (container id, ssh target), for the helper scripts.

    :param default: the transport's ``python`` option.
    """

    def __init__(self, default: str) -> None:
        self.default = default
        self._lock = threading.Lock()
        self._known: dict[str, list[str]] = {}  # place -> the kernels' own interpreters there
        self._ran: dict[str, str] = {}  # place -> the one that ran a script there when the default did not

    def add(self, place: str, python: str | None) -> None:
        """A kernel was launched (or found) in ``place`` with ``python``: a candidate there."""
        if python and python != self.default:
            with self._lock:
                known = self._known.pop(place, [])
                self._known[place] = known if python in known else [*known, python]
                while len(self._known) > MAX_PLACES:
                    self._ran.pop(next(iter(self._known)), None)
                    del self._known[next(iter(self._known))]

    def candidates(self, place: str, python: str | None = None) -> list[str]:
        """The interpreters to try for a script in ``place``, in order, without repeats."""
        with self._lock:
            ran, known = self._ran.get(place), list(self._known.get(place, ()))
        return list(dict.fromkeys(p for p in (python, ran, self.default, *known) if p))

    def run(self, place: str, python: str | None, run: Callable[[str], Answer]) -> Answer:
        """``run(interpreter)`` for each candidate until one starts; the last answer.

        :param python: the caller's own (a kernel's), tried first; ``None``: none.
        :param run: execs the script with the interpreter it is given; ``(exit code, stdout, stderr)``.
        """
        answer: Answer = (None, b"", b"")
        for candidate in self.candidates(place, python):
            answer = run(candidate)
            if not program_missing(*answer):
                if candidate not in (python, self.default) and place in self._known:
                    with self._lock:
                        self._ran[place] = candidate
                return answer
        return answer


#: ``sh -c`` program: run the python script ``$1`` with the arguments after it by ``python3``, else
#: by the interpreter a kernel runner there was started with (the first word of the command line
#: ``PYTHON -B DIR/hermes-runner-HASH.pyz MODE``: readable without ptrace rights, as the environment
#: is not), else run the shell code that follows (no Python there: no kernel process runs either).
_FIND_PYTHON_SH = r"""p=$(command -v python3)
nl='
'
if [ -z "$p" ]; then
  for d in /proc/[0-9]*; do
    c=$(tr '\0' '\n' 2>/dev/null < "$d/cmdline") || continue
    case $c in *"$nl-B$nl"*/hermes-runner-*.pyz"$nl"*) p=$(printf '%s\n' "$c" | head -n 1) ;; *) continue ;; esac
    command -v "$p" >/dev/null && break
    p=
  done
fi
if [ -n "$p" ]; then exec "$p" -I -c "$@"; fi
shift
"""


def python_anywhere(script: str, args: list[str], without: str) -> list[str]:
    """An exec's argv that runs python ``script`` with ``args`` where no interpreter is known
    beforehand (a container claimed for reuse, one a crashed worker's kernels ran in): see
    :data:`_FIND_PYTHON_SH`.

    :param without: shell code run when no Python is there, with ``args`` as ``"$@"``.
    """
    return ["sh", "-c", _FIND_PYTHON_SH + without, "sh", script, *args]


#: :func:`python_anywhere`'s ``without`` for :data:`~.detached.CLEAR_KERNELS_SCRIPT` (no Python,
#: so no kernel process: only the kernel root ``$1`` to empty, ``~/`` as the script expands it).
CLEAR_WITHOUT_PYTHON_SH = ('case $1 in "~/"*) set -- "$HOME/${1#??}" ;; esac\n'
                           '[ ! -d "$1" ] || [ -L "$1" ] || rm -rf -- "$1"/* "$1"/.[!.]* 2>/dev/null; echo gone\n')
