"""The kernel runner as one file: a zipapp built from ``kernel/runner/``, as every transport ships it.

The runner is a package (stdlib only); a kernel host gets it as one file,
``hermes-runner-<hash12>.pyz``, written into the kernel's private dir (0700; local kernels too:
~0.1 ms a start, nothing shared between users or kernels to guard) and run as
``python -B <file> MODE ...``. Inside, the package is ``hermes_kernel_runner/`` and a three-line
``__main__.py`` calls its ``__main__.main`` (what ``zipapp`` itself writes for ``-m pkg.mod:fn``).

* **Deterministic**: members in sorted order, fixed timestamps and modes, hash-based bytecode
  (no mtimes), so the same sources give the same bytes and the same name (the first 12 hex
  digits of the bytes' SHA-256: two versions never share a name).
* **Built once per process**, from the package directory (an installed wheel has it as package
  files like any module), and kept in memory (:func:`runner_zipapp`).
* **Bytecode** of the building interpreter sits next to each source as unchecked hash-based
  ``.pyc`` (PEP 552): an interpreter of the same version starts without compiling (the sources
  take ~12 ms to compile on the 2-core reference machine), any other finds the magic number wrong
  and compiles the source. The ``compact`` flavour keeps the filecell launch command small: its
  sources lose their docstrings and comments (:func:`slim_source`; line numbers kept, so a
  traceback points at the same lines).
"""

from __future__ import annotations

import __future__
import ast
import contextlib
import functools
import hashlib
import importlib.util
import io
import marshal
import os
import subprocess
import sys
import threading
import tokenize
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..kernel import runner as _runner_package

#: The runner package's directory (read at build time: point it elsewhere to ship another runner).
RUNNER_SOURCE_DIR = Path(_runner_package.__file__).resolve().parent
#: The package's name inside the zipapp.
ZIP_PACKAGE = "hermes_kernel_runner"
NAME_PREFIX = "hermes-runner-"
NAME_SUFFIX = ".pyz"
_ENTRY = f"import sys\nfrom {ZIP_PACKAGE}.__main__ import main\nsys.exit(main(sys.argv[1:]))\n"
_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can carry
_MEMBER_MODE = 0o644 << 16
#: Flags word of a PEP 552 pyc: hash-based (bit 0), source not checked (bit 1 clear).
_UNCHECKED_HASH_PYC = (1).to_bytes(4, "little")


#: How a runner file is made: ``compiled`` (local, docker, ssh): every module as source and
#: bytecode, deflated; ``compact`` (filecell, shipped inside a command line of ~100 KB):
#: bytecode only for the modules a poll imports (:data:`POLL_MODULES`), stored uncompressed
#: (the command compresses the whole file; a poll then needs no ``zlib``), without the kernel
#: server's modules and the relay (:data:`COMPACT_OMITS`).
RunnerFlavour = Literal["compiled", "compact"]
#: The runner modules a filecell poll imports (its ``client`` mode).
POLL_MODULES = frozenset({"__init__", "client", "frames"})
#: Runner modules the ``compact`` flavour leaves out, which filecell never imports, so the file
#: stays small enough for a command line: the kernel server's and its site check (filecell runs
#: no server: every cell is its own execute), the docker exec relay and the local runners' renaming
#: remover. Not the kernel dir remover (``trees``): a runner that ends by its orphan timer (its host
#: gone) removes its own dir with it; without it that shutdown died on ``ModuleNotFoundError`` and
#: left every such dir behind.
COMPACT_OMITS = frozenset({"server", "server_remote", "sites", "relay", "stamp", "spare", "renamed_trees"})


@dataclass(frozen=True)
class RunnerZipapp:
    """The built runner file.

    :ivar name: ``hermes-runner-<hash12>.pyz``, from the content.
    :ivar data: the zip file's bytes.
    :ivar modules: the package's module names inside (``hermes_kernel_runner.frames``, ...).
    """

    name: str
    data: bytes
    modules: tuple[str, ...]


def _members(source_dir: Path, flavour: RunnerFlavour) -> list[tuple[str, bytes]]:
    members = [("__main__.py", _ENTRY.encode())]
    for path in sorted(source_dir.glob("*.py")):
        if flavour == "compact" and path.stem in COMPACT_OMITS:
            continue
        source = path.read_bytes() if flavour == "compiled" else slim_source(path.read_bytes())
        arcname = f"{ZIP_PACKAGE}/{path.name}"
        members.append((arcname, source))
        if flavour == "compiled" or path.stem in POLL_MODULES:
            members.append((arcname + "c", _pyc(source, arcname, flavour)))
    return sorted(members, key=lambda m: member_order(m[0]))


def member_order(arcname: str) -> tuple[bool, str]:
    """The sort key of the file's members: by name, every source before every bytecode file (the
    sources side by side compress better: the ``compact`` file ~570 b64 bytes smaller, 2026-12-07)."""
    return arcname.endswith(".pyc"), arcname


def slim_source(source: bytes) -> bytes:
    """``source`` without docstrings, comments and the bodies of its module-level ``if
    TYPE_CHECKING:`` blocks (annotations' imports: one ``pass``), every line where it was.

    A docstring becomes an empty string literal spanning as many lines (a body of only a
    docstring stays valid); a comment is cut off its line. The code compiles to the same
    operations (docstrings aside), and a traceback's line numbers still match the real source.

    :param source: a module's UTF-8 source.
    :returns: the slimmed UTF-8 source.
    """
    text = source.decode("utf-8")
    lines = text.splitlines(keepends=True)
    docstrings = {(first.lineno, first.col_offset) for node in ast.walk(ast.parse(source))
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  for first in node.body[:1]
                  if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                  and isinstance(first.value.value, str)}
    cuts = []  # (start, end, replacement): tokenize's (1-based row, column in characters)
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            cuts.append((tok.start, tok.end, ""))
        elif tok.type == tokenize.STRING and tok.start in docstrings:
            span = tok.end[0] - tok.start[0]
            cuts.append((tok.start, tok.end, '""' if span == 0 else '"""' + "\n" * span + '"""'))
    for (row, col), (end_row, end_col), new in sorted(cuts, reverse=True):
        head, tail = lines[row - 1][:col], lines[end_row - 1][end_col:]
        lines[row - 1:end_row] = ((head.rstrip() if not new else head) + new + tail).splitlines(keepends=True)
    for block in ast.parse("".join(lines)).body:  # ``if TYPE_CHECKING:`` (never true at run time): one ``pass``
        if isinstance(block, ast.If) and isinstance(block.test, ast.Name) and block.test.id == "TYPE_CHECKING" \
                and not block.orelse and block.end_lineno is not None:
            indent = lines[block.body[0].lineno - 1][:block.body[0].col_offset]
            lines[block.lineno:block.end_lineno] = [indent + "pass\n"] + ["\n"] * (block.end_lineno - block.lineno - 1)
    return "".join(lines).encode("utf-8")


#: Compiles stdin (``argv[1]``: its file name) to marshalled code on stdout; run by this interpreter
#: with ``-X no_debug_ranges`` (see :func:`_marshalled`).
#: Its output starts with its bytecode's magic number: a ``sys.executable`` of another version (an
#: embedded interpreter's, found on ``PATH``) or no Python at all is not taken at its word.
_COMPILE_SCRIPT = ("import marshal, sys; from importlib.util import MAGIC_NUMBER; sys.stdout.buffer.write(MAGIC_NUMBER + "
                   "marshal.dumps(compile(sys.stdin.buffer.read(), sys.argv[1], 'exec', int(sys.argv[2]), dont_inherit=True)))")
#: A module's ``from __future__ import annotations``: the ``compact`` bytecode is compiled with the
#: flag it sets (annotations stay strings) and without the statement itself, which imports the
#: ``__future__`` module at run time: ~0.15 ms of every filecell poll. (Its source keeps it: an
#: interpreter of another version compiles that.)
_FUTURE_ANNOTATIONS = b"from __future__ import annotations"


def _pyc(source: bytes, arcname: str, flavour: RunnerFlavour = "compiled") -> bytes:
    """Unchecked hash-based bytecode (PEP 552): no timestamp, so the bytes are reproducible."""
    code = _marshalled(source, arcname, flavour)
    return importlib.util.MAGIC_NUMBER + _UNCHECKED_HASH_PYC + importlib.util.source_hash(source) + code


def _marshalled(source: bytes, arcname: str, flavour: RunnerFlavour) -> bytes:
    """``source`` compiled and marshalled. For the ``compact`` flavour, without column positions
    where this interpreter keeps them (3.11+: a table per instruction, 2.4 of the client's 8.1 KB
    compressed): compiled by this interpreter started with ``-X no_debug_ranges`` (the flag is
    fixed at start). Its tracebacks name lines, as before 3.11, not columns. Where that cannot
    run, or is not this version's Python (its magic number differs), compiled here, with them."""
    flags, lines = 0, source.split(b"\n")
    if flavour == "compact" and _FUTURE_ANNOTATIONS in lines:  # (a line of its own: a statement, never a string)
        lines[lines.index(_FUTURE_ANNOTATIONS)] = b""
        flags, source = __future__.annotations.compiler_flag, b"\n".join(lines)
    if flavour == "compact" and sys.executable:
        try:
            done = subprocess.run([sys.executable, "-I", "-X", "no_debug_ranges", "-c", _COMPILE_SCRIPT, arcname,
                                   str(flags)], input=source, capture_output=True, timeout=60, check=True)
            magic, code = done.stdout[:4], done.stdout[4:]
            if magic == importlib.util.MAGIC_NUMBER and isinstance(marshal.loads(code), type(_members.__code__)):
                return code
        except (OSError, subprocess.SubprocessError, ValueError, EOFError, TypeError):
            pass
    return marshal.dumps(compile(source, arcname, "exec", flags, dont_inherit=True))


def build_zipapp(source_dir: Path | None = None, *, flavour: RunnerFlavour = "compiled") -> RunnerZipapp:
    """Build the runner zipapp from ``source_dir`` (default :data:`RUNNER_SOURCE_DIR`).

    :param source_dir: a directory of the runner's ``*.py`` files (subdirectories are not shipped).
    :param flavour: see :data:`RunnerFlavour`.
    :returns: the file's name, bytes and module names.
    """
    members = _members(source_dir or RUNNER_SOURCE_DIR, flavour)
    compress = zipfile.ZIP_DEFLATED if flavour == "compiled" else zipfile.ZIP_STORED
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for arcname, data in members:
            info = zipfile.ZipInfo(arcname, date_time=_EPOCH)
            info.external_attr = _MEMBER_MODE
            info.compress_type = compress
            zf.writestr(info, data, compresslevel=9 if compress == zipfile.ZIP_DEFLATED else None)
    data = buf.getvalue()
    modules = tuple(f"{ZIP_PACKAGE}.{n[len(ZIP_PACKAGE) + 1:-3]}".removesuffix(".__init__")
                    for n, _ in members if n.startswith(ZIP_PACKAGE + "/") and n.endswith(".py"))
    return RunnerZipapp(name=f"{NAME_PREFIX}{hashlib.sha256(data).hexdigest()[:12]}{NAME_SUFFIX}",
                        data=data, modules=modules)


@functools.lru_cache(maxsize=8)
def _cached(source_dir: Path, flavour: RunnerFlavour) -> RunnerZipapp:
    return build_zipapp(source_dir, flavour=flavour)


#: Held while a zipapp is built: kernels started at once from several threads build it once.
#: ``lru_cache`` alone lets each thread build its own copy, and parallel ``ast.parse`` calls in
#: :func:`slim_source` can fail in CPython 3.11 with ``SystemError: AST constructor recursion
#: depth mismatch`` (CPython gh-106905; seen here as a failed start of 1 of 8 concurrent
#: filecell kernels).
_BUILDING = threading.Lock()


def runner_zipapp(flavour: RunnerFlavour = "compiled") -> RunnerZipapp:
    """The runner zipapp of :data:`RUNNER_SOURCE_DIR`, built once per process on first use (by
    one thread; others starting at the same time wait for it) and kept in memory.

    :param flavour: see :data:`RunnerFlavour`.
    """
    with _BUILDING:
        return _cached(RUNNER_SOURCE_DIR, flavour)


#: The lists :func:`runner_dirs_written` is recording into (one per ``with`` block open).
_RECORDING: list[list[str]] = []


@contextlib.contextmanager
def runner_dirs_written() -> Iterator[list[str]]:
    """Record, while inside, each directory :func:`write_runner` writes a runner file into, in
    this process (absolute paths, in order): the contract suite's check that a start that failed
    left no kernel dir behind (a transport's ``launch`` that raised after it made one)."""
    written: list[str] = []
    _RECORDING.append(written)
    try:
        yield written
    finally:
        _RECORDING.remove(written)


def write_runner(directory: str, app: RunnerZipapp | None = None) -> str:
    """Write the runner file into ``directory`` (a kernel dir), mode 0600, never over a file.

    :param app: the file to write; default :func:`runner_zipapp`.
    :returns: its path.
    :raises OSError: if the file exists already or cannot be written.
    """
    app = app or runner_zipapp()
    path = os.path.join(directory, app.name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    for written in _RECORDING:
        written.append(os.path.abspath(directory))
    with os.fdopen(fd, "wb") as fh:
        fh.write(app.data)
    return path
