"""Kernel dirs on an ssh host: ``~/.hermes-kernels/<name>``, made over SFTP in a checked root.

The root must be a real directory owned by the ssh user and closed to group and others (B46:
another user of the host may have made it first, or planted a symlink); nothing is changed to
fit, the kit refuses. Both the spawn path and the kernel servers (:mod:`.kernel_server`) make
their dirs here.
"""

from __future__ import annotations

import stat
from typing import TYPE_CHECKING, Protocol

from ...errors import TransportLostError, UnsafeRunDirError
from ..detached import SSH_KERNEL_ROOT
from ..far_records import MadeDirs
from ..runner_zipapp import runner_zipapp
from .connection import SshConnection, put_file

if TYPE_CHECKING:
    import paramiko

KERNEL_ROOT = SSH_KERNEL_ROOT


class HomeOwner(Protocol):
    """What a kernel dir needs of the ssh transport: the login's home, once read, and the record of
    the dirs it made (for the leak probe)."""

    _home: str | None
    made_dirs: MadeDirs


def make_kernel_dir(transport: HomeOwner, conn: SshConnection, name: str) -> str:
    """Make ``<home>/.hermes-kernels/<name>`` (0700) holding the runner file, recorded in
    ``transport.made_dirs`` right before it is made.

    :param name: the dir's name: the kernel id (spawn path) or ``server-<random>`` (a server's).
    :returns: the dir's absolute path on the host.
    :raises UnsafeRunDirError: if the root is not private (:func:`check_private_root`).
    :raises TransportLostError: if SFTP fails, or the connection was cut meanwhile (said so).
    """
    sftp = conn.sftp()
    kdir = "the kernel dir"
    try:
        if transport._home is None:
            transport._home = login_home(conn, sftp)
        kdir = f"{transport._home}/{KERNEL_ROOT}"
        root = private_root(sftp, transport._home)
        kdir = f"{root}/{name}"
        transport.made_dirs.add(str(conn.target), kdir)
        put_runner(sftp, kdir)
        return kdir
    except UnsafeRunDirError:
        raise
    except Exception as exc:
        import paramiko

        if isinstance(exc, OSError) and conn.usable:  # the host answered: what it refused is named, not the connection
            raise TransportLostError(f"could not prepare {kdir} on {conn.target} over sftp: {exc}\nHint: the login user "
                                     "must be able to write there: is it read-only, or the host's disk full?") from None
        if isinstance(exc, (OSError, EOFError, paramiko.SSHException)):  # a cut link: "Socket is closed" (with that
            # hint), or paramiko's "Server connection dropped" out of start_kernel as is
            conn.close()  # seen dead now: the next start connects anew (it was still taken, and its sftp failed)
            raise TransportLostError(f"the ssh connection to {conn.target} was cut while {kdir} was prepared over "
                                     f"sftp ({type(exc).__name__}: {exc})\nHint: the next start tries a new connection") from None
        raise
    finally:
        try:
            sftp.close()
        except Exception:  # noqa: BLE001 - on a cut link its EOFError replaced the error above
            pass


class Login(Protocol):
    def run(self, command: str, *, timeout: float) -> tuple[int | None, bytes, bytes]: ...


def login_home(conn: Login, sftp: paramiko.SFTPClient) -> str:
    """The login's home on the host, resolved: ``~<user>`` by OpenSSH's ``expand-path@openssh.com``
    (8.7 and newer: its passwd entry, no exec), else the login shell's ``$HOME`` (one exec: a slow rc
    file's time again), else (neither says) the SFTP session's dir.

    Not the SFTP session's dir first: sshd runs the sftp subsystem through the login shell, and an
    rc file's ``cd /tmp`` put the kernels (and the check of their root) there; a bare ``~`` is that
    dir too (OpenSSH's sftp-server takes it as its cwd).

    :raises OSError: if the home cannot be resolved.
    """
    from paramiko.sftp import CMD_EXTENDED, CMD_NAME, SFTPError

    home, user = "", getattr(getattr(conn, "transport", None), "get_username", lambda: None)()
    if user and "/" not in user:
        try:
            kind, msg = sftp._request(CMD_EXTENDED, "expand-path@openssh.com", f"~{user}")
            if kind == CMD_NAME and msg.get_int() == 1:
                home = msg.get_text()
        except (OSError, SFTPError, EOFError):
            pass  # not offered by this server
    if not home.startswith("/"):
        try:
            code, out, _ = conn.run('printf "%s" "$HOME"', timeout=10.0)
        except (TransportLostError, TimeoutError):
            code, out = None, b""
        said = out.decode("utf-8", "surrogateescape") if code == 0 else ""
        home = said if said.startswith("/") and "\n" not in said else "."
    try:
        return sftp.normalize(home)
    except OSError as exc:  # a home that does not exist read "could not prepare //.hermes-kernels"
        raise OSError(f"the login's home {home} is not there ({exc})") from None


def put_runner(sftp: paramiko.SFTPClient, directory: str) -> str:
    """Make ``directory`` (0700) holding the runner file; its path.

    :raises OSError: if either cannot be written; what was made of them is removed first (a cut
        runner file on a full disk took the room left there, and stayed, each start one more).
    """
    sftp.mkdir(directory, 0o700)
    app = runner_zipapp()
    path = f"{directory}/{app.name}"
    try:
        sftp.chmod(directory, 0o700)  # whatever the login's umask (:func:`make_private_dir`)
        put_file(sftp, path, app.data)
    except OSError:
        for undo in (lambda: sftp.remove(path), lambda: sftp.rmdir(directory)):
            try:
                undo()
            except OSError:
                pass  # never made, or the host refuses: the refusal above is what the user reads
        raise
    return path


def make_private_dir(sftp: paramiko.SFTPClient, path: str) -> None:
    """``mkdir path`` 0700 whatever the login's umask: sshd runs the sftp subsystem through the login
    shell, so a ``umask 0277`` in its rc file made the dirs 0500, and nothing could be put in them
    (the root stayed so: later starts failed too).

    :raises OSError: if it cannot be made (it exists, say).
    """
    sftp.mkdir(path, 0o700)
    sftp.chmod(path, 0o700)


def private_root(sftp: paramiko.SFTPClient, home: str) -> str:
    """``<home>/.hermes-kernels``, made 0700 if missing, then checked (:func:`check_private_root`).

    :raises UnsafeRunDirError: if it is not private.
    :raises OSError: if SFTP fails.
    """
    root = f"{home}/{KERNEL_ROOT}"
    try:
        make_private_dir(sftp, root)
    except OSError as refused:
        try:
            sftp.lstat(root)  # it exists: checked below
        except OSError:
            raise refused from None  # not made (a home the user may not write): the refusal, not "No such file"
    check_private_root(sftp, root, owner=sftp.stat(home).st_uid)
    return root


def check_private_root(sftp: paramiko.SFTPClient, root: str, *, owner: int | None) -> None:
    """The remote kernel root must be a real directory (never a symlink), owned by ``owner`` (the
    owner of the login's home) and closed to group and others (B46).

    :raises UnsafeRunDirError: naming the path and what is wrong with it.
    """
    st = sftp.lstat(root)
    mode = st.st_mode or 0
    problem = ("it is a symlink" if stat.S_ISLNK(mode) else "it is not a directory" if not stat.S_ISDIR(mode)
               else f"it is owned by uid {st.st_uid}, not {owner}" if st.st_uid != owner
               else f"its mode is {stat.S_IMODE(mode):04o}, not 0700" if mode & 0o077 else None)
    if problem is not None:
        raise UnsafeRunDirError(f"refusing to keep kernels in {root} on the ssh host: {problem}. Hint: another "
                                "user may have made it first; remove it on the host", path=root, problem=problem)


__all__ = ["KERNEL_ROOT", "check_private_root", "login_home", "make_kernel_dir", "private_root", "put_runner"]
