"""Unit: the kernel runner shipped as one file, a zipapp built from ``kernel/runner/``.

The file is what every transport runs (``python -B <file> MODE``); these tests run it the way
the far side does, in isolated mode without ``site`` (``-I -S``), as a separate interpreter.
"""

from __future__ import annotations

import ast
import io
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import zipfile
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pytest_hermes_kernel.transports import runner_zipapp as runner_zipapp_module
from pytest_hermes_kernel.transports.filecell import scripts
from pytest_hermes_kernel.transports.runner_zipapp import (POLL_MODULES, RUNNER_SOURCE_DIR, COMPACT_OMITS, ZIP_PACKAGE,
                                                           RunnerFlavour, RunnerZipapp, build_zipapp, runner_zipapp,
                                                           member_order, slim_source, write_runner)

ISOLATED = [sys.executable, "-I", "-S", "-B"]


@pytest.fixture
def sources(tmp_path: Path) -> Path:
    """A copy of the runner package's sources (a build from it is a fresh build)."""
    copy = tmp_path / "runner-src"
    shutil.copytree(RUNNER_SOURCE_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


@pytest.fixture(params=["compiled", "compact"])
def runner_file(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    return Path(write_runner(str(tmp_path), runner_zipapp(request.param)))


def loaded_runner_modules(stderr: str) -> set[str]:
    """The runner's modules a ``-X importtime`` run imported (its stderr lists every import)."""
    names = {line.rsplit("|", 1)[-1].strip() for line in stderr.splitlines() if line.startswith("import time:")}
    return {n for n in names if n == ZIP_PACKAGE or n.startswith(ZIP_PACKAGE + ".")}


@pytest.mark.parametrize("flavour", ["compiled", "compact"])
def test_the_same_sources_build_the_same_bytes_and_name(sources: Path, flavour: RunnerFlavour) -> None:
    first, second = build_zipapp(sources, flavour=flavour), build_zipapp(sources, flavour=flavour)

    assert first.data == second.data and first.name == second.name
    assert re.fullmatch(r"hermes-runner-[0-9a-f]{12}\.pyz", first.name)
    infos = zipfile.ZipFile(io.BytesIO(first.data)).infolist()
    assert [i.filename for i in infos] == sorted((i.filename for i in infos), key=member_order)
    assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}


def test_a_changed_source_changes_the_name(sources: Path) -> None:
    before = build_zipapp(sources)
    (sources / "relay.py").write_text((sources / "relay.py").read_text() + "\n# changed\n")

    assert build_zipapp(sources).name != before.name


def test_kernels_started_at_once_build_the_file_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Concurrent first starts (a registry starting 8 filecell kernels from a thread pool) share
    one build: parallel builds ran ``ast.parse`` in parallel, which CPython 3.11 can fail with
    ``SystemError: AST constructor recursion depth mismatch`` (gh-106905)."""
    builds: list[str] = []
    real_build = runner_zipapp_module.build_zipapp

    def slow_build(source_dir: Path, *, flavour: RunnerFlavour) -> RunnerZipapp:
        builds.append(threading.current_thread().name)
        time.sleep(0.05)  # widen the window in which other threads ask for the same file
        return real_build(source_dir, flavour=flavour)

    monkeypatch.setattr(runner_zipapp_module, "build_zipapp", slow_build)
    runner_zipapp_module._cached.cache_clear()
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            apps = list(pool.map(lambda _: runner_zipapp("compact"), range(8)))
    finally:
        runner_zipapp_module._cached.cache_clear()

    assert len(builds) == 1, f"built {len(builds)} times by {builds}"
    assert all(app is apps[0] for app in apps)


@pytest.mark.parametrize("flavour, compiled, omitted", [
    ("compiled", {p.stem for p in RUNNER_SOURCE_DIR.glob("*.py")}, set()),
    ("compact", POLL_MODULES, COMPACT_OMITS)])
def test_the_file_holds_the_runner_package_and_nothing_else(flavour: RunnerFlavour, compiled: set[str],
                                                            omitted: set[str]) -> None:
    zf = zipfile.ZipFile(io.BytesIO(runner_zipapp(flavour).data))
    shipped = {n for n in zf.namelist() if n.endswith(".py")}
    sources = [p for p in RUNNER_SOURCE_DIR.glob("*.py") if p.stem not in omitted]
    package = {f"{ZIP_PACKAGE}/{p.name}" for p in sources}

    assert shipped == package | {"__main__.py"}
    for path in sources:
        source = path.read_bytes()
        assert zf.read(f"{ZIP_PACKAGE}/{path.name}") == (source if flavour == "compiled" else slim_source(source))
    assert {n for n in zf.namelist() if n.endswith(".pyc")} == {f"{ZIP_PACKAGE}/{m}.pyc" for m in compiled}
    assert _imports_outside_the_stdlib_and_the_package(zf, shipped) == []


def test_the_compact_file_fits_a_filecell_launch_command() -> None:
    """filecell ships it zlib-compressed and base64-encoded inside one command (see scripts.MAX_COMMAND_BYTES)."""
    size = len(scripts.b64(zlib.compress(runner_zipapp("compact").data, 9)))
    assert size < scripts.MAX_COMMAND_BYTES // 2, size


@pytest.mark.parametrize("path", sorted(RUNNER_SOURCE_DIR.glob("*.py")), ids=lambda p: p.name)
def test_the_compact_sources_lose_docstrings_and_comments_but_keep_their_lines(path: Path) -> None:
    source = path.read_bytes()
    slim = slim_source(source)

    assert slim.count(b"\n") == source.count(b"\n")
    assert _code_lines(slim, path.name) == _code_lines(source, path.name), "a traceback would point elsewhere"
    assert not [n for n in ast.walk(ast.parse(slim)) if _docstring(n)]
    assert not [n for n in ast.parse(slim).body if isinstance(n, ast.If) and isinstance(n.test, ast.Name)
                and n.test.id == "TYPE_CHECKING" and not (len(n.body) == 1 and isinstance(n.body[0], ast.Pass))]
    assert b"#" not in b"".join(line for line in slim.splitlines() if b"'" not in line and b'"' not in line)
    assert len(slim) < len(source)


def _code_lines(source: bytes, name: str) -> list[tuple[str, int]]:
    """(name, first line) of every code object a module compiles to, nested ones included."""
    found, todo = [], [compile(source, name, "exec", dont_inherit=True)]
    while todo:
        code = todo.pop()
        found.append((code.co_name, code.co_firstlineno))
        todo += [c for c in code.co_consts if hasattr(c, "co_code")]
    return sorted(found)


def _docstring(node: ast.AST) -> bool:
    return isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and bool(ast.get_docstring(node))


def _imports_outside_the_stdlib_and_the_package(zf: zipfile.ZipFile, names: set[str]) -> list[str]:
    own = {p.stem for p in RUNNER_SOURCE_DIR.glob("*.py")}  # the package's modules, shipped or not
    bad = []
    for name in sorted(names):
        for node in ast.walk(ast.parse(zf.read(name))):
            if isinstance(node, ast.ImportFrom) and node.level:
                bad += [f"{name}: .{node.module}" for m in [node.module] if node.level > 1 or m not in own]
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                bad += [f"{name}: {m}" for m in modules
                        if m.split(".")[0] not in sys.stdlib_module_names and m.split(".")[0] != ZIP_PACKAGE]
    return bad


def test_client_mode_runs_isolated_and_imports_only_the_client_and_the_codec(runner_file: Path,
                                                                              tmp_path: Path) -> None:
    params = scripts.params(wait=[], deadline_s=1.0)

    out = subprocess.run([*ISOLATED, "-X", "importtime", str(runner_file), "client", str(tmp_path), params],
                         capture_output=True, text=True, timeout=30)

    parsed = scripts.parse_client_output(out.stdout)
    assert (out.returncode, parsed.began, parsed.status) == (0, True, "gone"), out  # no supervisor here
    assert loaded_runner_modules(out.stderr) == {ZIP_PACKAGE, f"{ZIP_PACKAGE}.__main__", f"{ZIP_PACKAGE}.client",
                                                 f"{ZIP_PACKAGE}.frames"}


def test_the_poll_form_imports_even_less(runner_file: Path, tmp_path: Path) -> None:
    out = subprocess.run([*ISOLATED, "-X", "importtime", "-c", scripts.CLIENT_BOOT, str(runner_file), str(tmp_path),
                          scripts.params(wait=[])], capture_output=True, text=True, timeout=30)

    assert scripts.parse_client_output(out.stdout).status == "gone", out
    assert loaded_runner_modules(out.stderr) == {ZIP_PACKAGE, f"{ZIP_PACKAGE}.client", f"{ZIP_PACKAGE}.frames"}
    imported = {line.rsplit("|", 1)[-1].strip() for line in out.stderr.splitlines()}
    assert "runpy" not in imported
    # a filecell cell is one poll: json (re, enum: 6.6 ms) and socket (enum, selectors: 1.9 ms) were
    # most of its 10 ms of imports; the codec uses _json's C parts and the client _socket; os
    # (_collections_abc, stat, posixpath: 1.4 ms) and struct were most of what was left: posix, _struct
    assert imported.isdisjoint({"json", "re", "enum", "socket", "selectors", "os", "struct"}), sorted(imported)


def _echo_server(path: str) -> threading.Thread:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)

    def serve() -> None:
        with listener:
            conn, _ = listener.accept()
            with conn:
                while data := conn.recv(65536):
                    conn.sendall(data.upper())

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


def test_relay_mode_runs_isolated_and_copies_both_ways(tmp_path: Path) -> None:
    """The ``compiled`` file's (docker's relay); the ``compact`` one, filecell's, has no relay (:data:`COMPACT_OMITS`)."""
    runner_file = Path(write_runner(str(tmp_path), runner_zipapp("compiled")))
    path = str(tmp_path / "sock")
    server = _echo_server(path)
    with subprocess.Popen([*ISOLATED, "-X", "importtime", str(runner_file), "relay", path],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        try:
            proc.stdin.write(b"ping")
            proc.stdin.flush()
            assert proc.stdout.read(4) == b"PING"
            proc.stdin.close()  # the host side ends: the relay ends, cleanly
            assert proc.wait(timeout=10) == 0
        finally:
            proc.kill()
            proc.wait()
        imports = proc.stderr.read().decode()
    server.join(5.0)
    assert loaded_runner_modules(imports) == {ZIP_PACKAGE, f"{ZIP_PACKAGE}.__main__", f"{ZIP_PACKAGE}.relay"}


def test_bytecode_of_another_interpreter_falls_back_to_the_sources(tmp_path: Path) -> None:
    """A kernel host with another Python finds the bytecode's magic number wrong and compiles."""
    app = runner_zipapp()
    buf = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(app.data)) as src, zipfile.ZipFile(buf, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            dst.writestr(info, b"\x00\x00\r\n" + data[4:] if info.filename.endswith(".pyc") else data)
    path = write_runner(str(tmp_path), RunnerZipapp(name="other.pyz", data=buf.getvalue(), modules=app.modules))

    out = subprocess.run([*ISOLATED, path, "client", str(tmp_path), scripts.params(wait=[])],
                         capture_output=True, text=True, timeout=30)

    assert scripts.parse_client_output(out.stdout).status == "gone", out


def test_a_bad_mode_is_a_usage_error(runner_file: Path) -> None:
    out = subprocess.run([*ISOLATED, str(runner_file), "nonsense"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and out.stderr.startswith("usage:")


def test_the_runner_file_is_private_and_never_written_over_a_planted_file(tmp_path: Path) -> None:
    app = runner_zipapp()
    path = write_runner(str(tmp_path), app)
    assert os.stat(path).st_mode & 0o777 == 0o600 and Path(path).read_bytes() == app.data

    other = tmp_path / "other"
    other.mkdir()
    (other / app.name).symlink_to(tmp_path / "elsewhere")
    with pytest.raises(FileExistsError):
        write_runner(str(other), app)
    assert not (tmp_path / "elsewhere").exists()


def _another_python() -> str | None:
    """A Python of another minor version than this one (pyenv's, or ``python3.N`` on ``PATH``)."""
    found = [str(p) for p in Path.home().glob(".pyenv/versions/3.*/bin/python3")]
    found += [w for n in range(8, 16) if (w := shutil.which(f"python3.{n}"))]
    for path in found:
        out = subprocess.run([path, "-c", "import sys; print(sys.version_info[1])"], capture_output=True, text=True,
                             timeout=30)
        if out.returncode == 0 and out.stdout.strip() not in ("", str(sys.version_info[1])):
            return path
    return None


@pytest.mark.parametrize("executable", ["another-python", "a-program-that-says-nothing"])
def test_a_compact_file_built_where_sys_executable_is_no_python_of_this_version_runs(
        executable: str, sources: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An embedded interpreter's ``sys.executable`` may be its application, or the ``python3`` on
    ``PATH`` of another version: the compact file's bytecode, compiled by running it, carried this
    interpreter's magic number over that one's code (``bad marshal data``, or a segfault, at every
    filecell poll); now such an answer is dropped and the code compiled here."""
    if executable == "another-python":
        program = _another_python()
        if program is None:
            pytest.skip("no Python of another version on this machine")
    else:
        program = str(tmp_path / "app")
        Path(program).write_text("#!/bin/sh\ncat >/dev/null\nexit 0\n")
        os.chmod(program, 0o755)
    monkeypatch.setattr(sys, "executable", program)
    app = build_zipapp(sources, flavour="compact")
    monkeypatch.undo()
    path = write_runner(str(tmp_path), app)

    out = subprocess.run([*ISOLATED, path, "client", str(tmp_path), scripts.params(wait=[])],
                         capture_output=True, text=True, timeout=30)

    assert (out.returncode, scripts.parse_client_output(out.stdout).status) == (0, "gone"), out.stderr[-800:]
