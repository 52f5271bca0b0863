"""Where an ssh connection goes (:class:`SshTarget`), and what a user reads when it cannot get
there: a connect error they can fix on this side, or a host key that changed (B47).
"""

from __future__ import annotations

import ipaddress
import os
import random
import re
import socket
import time
from dataclasses import dataclass
from typing import Any

from ...errors import ConfigError, KernelStartError, TransportLostError
from ...kernel.output import REDACTED, redact

_PORT = re.compile(r"[0-9]{1,5}")
_NAME = re.compile(r"[^\s\x00-\x1f\x7f]+")  # no space or control character (a NUL cut the name there)


def _is_ipv6(host: str) -> bool:
    try:
        ipaddress.IPv6Address(host.partition("%")[0])  # fe80::1%eth0: the zone is the OS's
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class SshTarget:
    """Where to connect: ``user@host:port``."""

    host: str
    port: int = 22
    user: str | None = None

    @classmethod
    def parse(cls, text: str) -> SshTarget:
        """Parse ``[user@]host[:port]`` (``[v6addr]:port`` for IPv6).

        :raises ConfigError: if the port is not a number in 1..65535 (the OS takes 99999 modulo
            65536: another port), or the host or user is empty or holds a space or a control character,
            or the user a ``:`` (``user:password@host``: the password was taken as part of the user name
            and shown in every error, label and report; the message masks it).
        """
        user, at, hostport = text.rpartition("@")
        if ":" in user:  # no user name holds one: a password (never echoed, a ':' in it too) or a scheme
            shown = redact(text) if "://" in text else f"{user.partition(':')[0]}:{REDACTED}@{hostport}"
            raise ConfigError(f"ssh target must be user@host:port, with no scheme and no password (ssh targets log in with "
                              f"keys only: key_filename=, --hermes-ssh-key), not {shown!r}")
        host, port = hostport, "22"
        if hostport.startswith("["):
            host, bracket, rest = hostport[1:].partition("]")
            port = rest[1:] if rest.startswith(":") else ("22" if not rest and bracket else "")
        elif hostport.count(":") == 1:
            host, port = hostport.split(":")
        if not (_PORT.fullmatch(port) and 1 <= int(port) <= 65535 and _NAME.fullmatch(host)
                and (not at or _NAME.fullmatch(user)) and (":" not in host or _is_ipv6(host))):
            raise ConfigError(f"ssh target must be user@host:port (port 1..65535, [addr]:port for IPv6), not {text!r}")
        return cls(host=host, port=int(port), user=user or None)

    def known_hosts_name(self) -> str:
        return self.host if self.port == 22 else f"[{self.host}]:{self.port}"

    def __str__(self) -> str:
        """``user@host:port``, an IPv6 host in brackets: :meth:`parse` reads it back as the same target
        (``hermes@::1:2222`` read back as host ``::1:2222`` on port 22)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.user + '@' if self.user else ''}{host}:{self.port}"


def connect_hint(exc: BaseException) -> str:
    """What to do about a connect error a user can fix on this side (``""``: none known)."""
    if "not found in known_hosts" in str(exc):
        return ("\nHint: the host's key is not trusted yet: add it to a known_hosts file (e.g. `ssh-keyscan -p PORT "
                "HOST >> ci_known_hosts`) and pass it (--hermes-ssh-known-hosts, known_hosts=), or pin it with host_key=")
    return ""


#: The hint of a connect that ran into its timeout.
SILENT_HINT = ("\nHint: nothing answered as an sshd in time: is the host paused or overloaded, or a firewall or proxy "
               "in the way that drops or stalls?")


def chatty_shell_hint(noise: bytes) -> str:
    """Why SFTP broke when the login shell printed ``noise`` around a command (``""``: it printed nothing)."""
    return (f"; the login shell there prints {noise[:200]!r} in every session, before what it runs\nHint: make it "
            "print nothing in non-interactive sessions (an echo at the top of ~/.bashrc, ~/.profile or "
            "/etc/bash.bashrc)") if noise else ""


#: The hint of an sshd that closed every connection before its banner, for the whole connect timeout.
DROPPED_HINT = ("\nHint: sshd refuses new connections: past its MaxStartups (too many connections at once not yet "
                "logged in: fewer xdist workers on one host, or a higher MaxStartups in its sshd_config), or a tcp "
                "wrapper, fail2ban or firewall that drops this client")


def dropped_before_banner(target: SshTarget, deadline: float, tries: int) -> bool:
    """Whether a connect that failed reading the banner should be tried again (after a short random
    wait): sshd past ``MaxStartups`` closes new connections before its banner until others logged in
    (random early drop: 30 % of them past 10 by default), saying "Exceeded MaxStartups" (OpenSSH 8.2 and
    newer). ``False`` when the deadline is near, or a new connection gets neither that nor a banner: not
    an sshd, or one that is gone behind a proxy that closes at once (docker's): its error stays, at once.
    """
    time.sleep(min(0.5, 0.05 * 2 ** tries) * random.uniform(0.5, 1.5))  # concurrent clients spread out
    if deadline - time.monotonic() < 0.5:
        return False
    if tries:  # an sshd that drops, told by the first look: another look would take a slot of its own
        return True
    try:
        with socket.create_connection((target.host, target.port), timeout=deadline - time.monotonic()) as sock:
            first = sock.recv(64)
    except OSError:
        return False
    return first.startswith((b"SSH-", b"Exceeded MaxStartups"))


#: The hint of a host that refused the login a new process (``EAGAIN``).
NPROC_HINT = ("Hint: the login's process limit (ulimit -u: nproc in /etc/security/limits.conf) is reached, by its "
              "kernels or other processes: end some of them there, or raise it")


#: What a command that the login shell ran as given prints (the check after SFTP broke).
SHELL_CHECK = "hermes-shell-check"


def runs_no_command(run: Any) -> tuple[str, bytes | None]:
    """``(why, stdout)`` of one ``echo`` through the login shell: ``why`` says the host runs no command as
    given, with a hint (``""``: it ran it); ``stdout`` is ``None`` when the echo itself failed."""
    try:
        code, out, err = run(f"echo {SHELL_CHECK}", timeout=10.0)
    except (TransportLostError, TimeoutError):
        return "", None
    if SHELL_CHECK.encode() in out:
        return "", out
    said = f", stderr {err[-200:]!r}" if err else ""
    return (f"; the host runs no command as given: `echo {SHELL_CHECK}` came back with exit status {code}, "
            f"stdout {out[-200:]!r}{said}\nHint: a login shell that runs no command (nologin, /bin/false, "
            "git-shell: the login's /etc/passwd entry), a password that expired (sshd wants a new one first: "
            "`chage -l USER`), a ForceCommand in the host's sshd_config (`internal-sftp`: an sftp-only login), or an "
            "`exit` or `exec` in the login's rc files (~/.bashrc, ~/.profile, /etc/bash.bashrc) for non-interactive "
            "sessions ends every command before it runs: the ssh transport needs its commands run as given"), out


def sftp_broke_hint(run: Any, *, refused: bool, ended: str) -> str:
    """Why SFTP could not start on a host that let us in, with a hint (``""``: not known).

    :param run: the connection's ``run``, for one ``echo`` through the login shell.
    :param refused: sshd refused the sftp subsystem request.
    :param ended: how the subsystem ended, if it did (`` (exit status 1; stderr: ...)``).
    """
    if refused:
        try:
            run("true", timeout=10.0)
        except (TransportLostError, TimeoutError) as exc:  # no session at all, not SFTP's: sshd could not fork one
            return (f"; the host starts no session for this login now, an exec neither ({exc})\n{NPROC_HINT}")
        return ("; the host's sshd refused the sftp subsystem (none in its sshd_config?)\nHint: the ssh transport "
                "puts its runner there over SFTP: enable it (`Subsystem sftp internal-sftp` in sshd_config), or run "
                "kernels over ssh commands alone: make_transport('filecell', backend=SshExecBackend.over(ssh_transport))")
    refused, out = runs_no_command(run)
    if refused or out is None:
        return refused
    noise = out.replace(SHELL_CHECK.encode() + b"\n", b"", 1)
    if noise:
        return chatty_shell_hint(noise)
    try:  # sshd keeps a subsystem's stderr to itself: a command by its path, as sshd starts the sftp server
        code, _, err = run("/bin/sh -c true", timeout=10.0)
    except (TransportLostError, TimeoutError):
        code, err = 0, b""
    if code != 0:
        ended += f"; the login shell cannot run a command by its path either: `/bin/sh -c true` said {err[-300:]!r}"
    return (f"; the sftp subsystem ended before it answered{ended}\nHint: sshd runs it through the login's shell "
            "(its /etc/passwd entry): a restricted shell (rbash) or one that cannot run a command by its path stops "
            "it; give the login a POSIX shell that is not restricted (`chsh -s /bin/bash`): the ssh transport runs its "
            "commands (cd, exec) through it too")


def trusted_in(name: str, files: list[str | None]) -> list[str]:
    """Those of the known_hosts ``files`` (as the user named them) that hold an entry for ``name``."""
    import paramiko

    held = []
    for path in filter(None, files):
        try:
            if paramiko.HostKeys(os.path.expanduser(path)).lookup(name) is not None:
                held.append(path)
        except (OSError, paramiko.SSHException, ValueError, UnicodeDecodeError):
            continue  # unreadable: the connect read it the same way, so the key did not come from it
    return held


def changed_key_message(target: SshTarget, exc: Any, pinned: bool, known_hosts: str | None = None,
                        system: str = "~/.ssh/known_hosts") -> str:
    """What a user reads when ``target`` offers another host key than the one trusted (B47): the
    known_hosts file that holds the old key, and how to replace it there (a pytest run cannot pin one)."""
    name, got, want = target.known_hosts_name(), exc.key, exc.expected_key
    files = [] if pinned else trusted_in(name, [system, known_hosts])
    where = ("the key pinned for it" if pinned else f"the key trusted for it in {', '.join(files)}" if files
             else "the key seen for it earlier in this run")
    replace = "".join(f"`ssh-keygen -R '{name}' -f {path}`, " for path in files)
    replace = (f"remove the old entry ({replace[:-2]}) and add the new key there (`ssh-keyscan -p {target.port} "
               f"{target.host} >> {files[-1]}`), or " if files else "")
    return (f"the ssh host key of {name} changed: it offered {got.get_name()} {got.fingerprint}, but "
            f"{where} is {want.get_name()} {want.fingerprint}. This may be a man-in-the-middle; if the host "
            f"was recreated on purpose, check its new key out of band, then {replace}trust its new key explicitly: "
            f"SshTransport(target={str(target)!r}, host_key={got.get_name() + ' ' + got.get_base64()!r})")


def unreachable_error(exc: TransportLostError, conn: Any = None) -> KernelStartError:
    """The start error of a host that cannot be reached, with a hint (the connection's own, if it
    has one); a connection that went silent during the start says so (its keepalives' note).

    :param conn: the :class:`~.connection.SshConnection` the start used, if it had one.
    """
    if conn is not None and conn.unresponsive:
        return KernelStartError(f"ssh transport: {exc}; {conn.unresponsive}\nHint: the host stopped answering "
                                "during the start: is it paused, overloaded or cut off? The next start tries a new connection")
    # a permanent refusal (a changed host key) says what to do itself: the host is up, its key refused
    hint = "" if "Hint:" in str(exc) or exc.permanent else "\nHint: is the host up and the key accepted?"
    return KernelStartError(f"ssh transport: {exc}{hint}")
