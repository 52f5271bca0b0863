"""What the README and docs/ say, checked against the code: no in-house words, links that
resolve, a fault-marker table with every option of every marker, and troubleshooting entries
that quote the messages the package really gives (each produced here, then matched)."""

from __future__ import annotations

import inspect
import os
import re
import shutil
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_hermes_kernel.faults import spec
from tests.docs.readme import fresh_env, missing_lines, readme_text, run_command
from tests.support import REPO_ROOT

DOCS = sorted((REPO_ROOT / "docs").glob("*.md"))
IN_HOUSE = re.compile(r"(?i:handed|\bseeds?\b)|DESIGN|issue #\d+")
CATALOG_ID = re.compile(r"\bB\d\d\b")


def section(title: str) -> str:
    text = readme_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else None]


def text_blocks(text: str) -> list[str]:
    return re.findall(r"```text\n(.*?)```", text, re.S)


def test_the_readme_has_no_in_house_words() -> None:
    found = [f"README.md:{n}: {line.strip()}" for n, line in enumerate(readme_text().splitlines(), 1)
             if IN_HOUSE.search(line)]
    assert found == [], "words a newcomer cannot look up:\n" + "\n".join(found)


def test_docs_name_no_document_a_user_cannot_open() -> None:
    found = [f"{page.name}:{n}: {line.strip()}" for page in DOCS
             for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"handed case|DESIGN|issue #\d+", line)]
    assert found == [], "\n".join(found)


def test_catalog_ids_are_explained_before_the_readme_uses_one() -> None:
    text = readme_text()
    explained = text.find("Ids such as B28 number the cases of this\nproject's regression catalog")
    first_id = CATALOG_ID.search(text)
    assert explained != -1, "the README never says what ids like B28 are"
    assert first_id is None or first_id.start() >= explained, f"{first_id.group()} is used before it is explained"
    assert "](https://github.com/" in text[explained:explained + 600], "the explanation links no public source"


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {_slug(h) for h in re.findall(r"^#+ (.*)$", text, re.M)}


@pytest.mark.parametrize("page", [REPO_ROOT / "README.md", *DOCS, REPO_ROOT / "benchmarks" / "README.md"],
                         ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_every_local_link_resolves(page: Path) -> None:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no file {file}")
        elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
            broken.append(f"{target}: no heading with anchor #{anchor} in {file.name}")
    assert broken == [], f"{page.name}:\n" + "\n".join(broken)


def _marker_rows() -> dict[str, str]:
    """The fault-marker table's rows, joined per marker (continuation rows start with ``| |``)."""
    rows: dict[str, str] = {}
    current = ""
    table = section("Using it").split("### Fault markers", 1)[1].split("What the kit checks", 1)[0]
    for line in table.splitlines():
        m = re.match(r"\| `(hermes_\w+)` \|", line)
        if m:
            current = m.group(1)
        if current and line.startswith("|"):
            rows[current] = rows.get(current, "") + line + "\n"
    return rows


@pytest.mark.parametrize("marker", list(spec.MARKERS))
def test_the_fault_marker_table_lists_every_option_with_its_default(marker: str) -> None:
    rows = _marker_rows()
    assert marker in rows, f"README's fault-marker table has no row for {marker}"
    for name, param in inspect.signature(spec.MARKERS[marker]).parameters.items():
        option_cells = re.findall(r"^\|\s*(?:`hermes_\w+`)?\s*\|([^|]*)\|([^|]*)\|", rows[marker], re.M)
        cell = next(((names, default) for names, default in option_cells if f"`{name}`" in names), None)
        assert cell, f"{marker}: option {name} is not in the table"
        want = "required" if param.default is inspect.Parameter.empty else f"`{param.default!r}`".replace("'", '"')
        assert cell[1].strip() == want, f"{marker}({name}=...): the table says {cell[1].strip()}, the code {want}"


def _checks_row(marker: str) -> list[str]:
    """The cells of ``marker``'s row in the "What the kit checks" table."""
    table = section("Using it").split("What the kit checks for each:", 1)[1].split("\n\n", 2)[1]
    row = next(line for line in table.splitlines() if line.startswith(f"| `{marker}` |"))
    return [cell.strip() for cell in row.strip().strip("|").split("|")]


def test_the_drop_row_names_every_built_in_transport_it_skips_on() -> None:
    """A drop skips where the transport declares no re-attach (``faults.apply.skip_reason``): the
    row's "skips where" names exactly those built-in transports (it said local only; filecell skips too)."""
    from pytest_hermes_kernel import transports

    classes = {"local": transports.LocalTransport, "docker": transports.DockerTransport,
               "ssh": transports.SshTransport, "filecell": transports.FileCellTransport}
    assert set(classes) == set(transports.TRANSPORT_NAMES)
    skips_where = _checks_row("hermes_transport_drop")[-1]
    named = {name for name in classes if re.search(rf"\b{name}\b", skips_where)}
    assert named == {name for name, cls in classes.items() if not cls.reattachable}, skips_where


# ------------------------------------------------------------------ troubleshooting quotes

def _quote(title: str) -> str:
    """The text blocks of one troubleshooting entry, joined."""
    entry = section("Troubleshooting").split(f"\n### {title}\n", 1)[1].split("\n### ", 1)[0]
    return "\n".join(text_blocks(entry))


def _assert_quoted(title: str, real: str) -> None:
    shown = [line for line in _quote(title).splitlines() if line.strip()]
    assert shown, f"troubleshooting entry {title!r} quotes nothing"
    unmatched = [line for line in shown if _matches_none(line, real)]
    assert unmatched == [], f"{title}: the README quotes\n" + "\n".join(unmatched) + f"\nbut the package says\n{real}"


def _matches_none(line: str, real: str) -> bool:
    """``...`` in a quoted line stands for any text; the rest must be found in ``real``."""
    pieces = [p.strip() for p in line.split("...")]
    return bool(missing_lines(".*".join(pieces), real)) if len(pieces) == 1 else not re.search(
        ".*".join(_pattern(p) for p in pieces), real)


def _pattern(piece: str) -> str:
    from tests.docs.readme import line_pattern

    return line_pattern(piece).pattern if piece else ""


SUITE = "def test_one(hermes_kernel):\n    assert hermes_kernel.execute('1 + 1').value == '2'\n"


def test_no_docker_engine_quotes_the_skip_reason(tmp_path: Path) -> None:
    (tmp_path / "test_kernel_suite.py").write_text("\n\n\n" + SUITE)
    short = Path(tempfile.mkdtemp(prefix="hk-", dir="/tmp"))  # a unix socket path has 108 bytes; tmp_path may be longer
    env = fresh_env(DOCKER_HOST=f"unix://{short}/no-engine.sock")
    try:
        skipped = run_command("python -m pytest -q -rs --hermes-transport=docker,ssh", tmp_path, env)
        required = run_command("python -m pytest -q --hermes-transport=docker --hermes-require-transports", tmp_path, env)
    finally:
        shutil.rmtree(short, ignore_errors=True)
    _assert_quoted("No docker engine", skipped.stdout)
    entry = section("Troubleshooting").split("### No docker engine", 1)[1].split("\n### ", 1)[0]
    for quoted in re.findall(r"`((?:the ssh transport|required transport unavailable)[^`]*?): \.\.\.`", entry):
        assert quoted in skipped.stdout + required.stdout, quoted


def test_no_cgroup_for_oom_quotes_the_skip_reason_and_every_variant(tmp_path: Path) -> None:
    v2 = tmp_path / "cgroup2"
    v2.mkdir()
    (v2 / "cgroup.controllers").write_text("cpu memory\n")
    (v2 / "cgroup.subtree_control").write_text("cpu\n")
    (tmp_path / "conftest.py").write_text(
        "import pytest_hermes_kernel.faults.cgroup as cgroup\n"
        f"cgroup.V1_ROOT = {str(tmp_path / 'no-v1')!r}\ncgroup.V2_ROOT = {str(v2)!r}\n")
    (tmp_path / "test_oom.py").write_text(
        "import pytest\n\n@pytest.mark.hermes_oom(limit_bytes=256 * 2**20)\n"
        "def test_oom(hermes_kernel):\n    pass\n")
    ran = run_command("python -m pytest -q -rs", tmp_path)
    _assert_quoted("No cgroup for OOM", ran.stdout)
    entry = section("Troubleshooting").split("### No cgroup for OOM", 1)[1].split("\n### ", 1)[0]
    quoted = " ".join(re.findall(r"`([^`]*)`", entry.replace("\n", " ")))
    assert [r for r in _other_cgroup_reasons(tmp_path) if r not in quoted] == []


def _other_cgroup_reasons(tmp_path: Path) -> set[str]:
    """The reasons :func:`create_memory_cgroup` gives, as the README writes them (paths as ``...``)."""
    from pytest_hermes_kernel.errors import TransportUnavailableError
    from pytest_hermes_kernel.faults import cgroup

    reasons = set()
    v1 = tmp_path / "v1"
    v1.mkdir()
    (v1 / "memory.limit_in_bytes").write_text("")
    (v1 / "taken").write_text("")
    v2 = tmp_path / "v2-ok"
    v2.mkdir()
    (v2 / "cgroup.controllers").write_text("memory\n")
    (v2 / "cgroup.subtree_control").write_text("memory\n")
    (v2 / "taken").write_text("")  # mkdir fails: a file has the cgroup's name
    for v1_root, v2_root, name in ((tmp_path / "none", tmp_path / "none", None),
                                   (tmp_path / "none", tmp_path / "cgroup2", None), (tmp_path / "none", v2, "taken"),
                                   (v1, tmp_path / "none", "taken"), (v1, tmp_path / "none", "no-counter")):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(cgroup, "V1_ROOT", str(v1_root))
            mp.setattr(cgroup, "V2_ROOT", str(v2_root))
            with pytest.raises(TransportUnavailableError) as err:
                cgroup.create_memory_cgroup(64 * 2**20, name=name)
        reasons.add(str(err.value).split(" at /")[0])  # what follows names a path and an errno
    return reasons


def test_an_engine_of_the_list_that_does_not_answer_is_named(docker_ready: None, tmp_path: Path) -> None:
    (tmp_path / "test_kernel_suite.py").write_text(SUITE)
    ran = run_command(f"python -m pytest -q -rs --hermes-transport=docker "
                      f"--hermes-docker-hosts=default,unix://{tmp_path}/engine2.sock", tmp_path)
    bad = run_command("python -m pytest -q --hermes-transport=docker --hermes-docker-hosts=ftp://x", tmp_path)
    _assert_quoted("A docker engine of the list does not answer", ran.stdout)
    assert "bad docker engine URL 'ftp://x': expected unix:///path/docker.sock, tcp://host:port" in bad.stdout, bad.stdout


def test_image_missing_quotes_the_error_and_the_build_hint(docker_ready: None, tmp_path: Path) -> None:
    from pytest_hermes_kernel.containers.base_image import HINT

    (tmp_path / "test_kernel_suite.py").write_text(SUITE)
    ran = run_command("python -m pytest -q --hermes-transport=docker --hermes-image no-such-image:1", tmp_path)
    _assert_quoted("Image missing", ran.stdout + "\n" + HINT)


def test_a_shared_transport_made_with_other_options_quotes_the_error(docker_ready: None, tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(
        "from pytest_hermes_kernel.transports import get_transport\n\nEARLY = get_transport('docker')\n")
    (tmp_path / "test_suite.py").write_text(SUITE.replace("test_one", "test_cell"))
    ran = run_command("python -m pytest -q --hermes-transport=docker --hermes-image=my-image:1", tmp_path)
    _assert_quoted("A shared transport made with other options", ran.stdout)


def test_ssh_entry_quotes_sshd_connection_and_host_key_errors(tmp_path: Path) -> None:
    script = tmp_path / "ssh_errors.py"
    script.write_text(SSH_ERRORS)
    ran = run_command(f"python {script}", tmp_path)
    assert ran.returncode == 0, ran.stdout
    _assert_quoted("ssh: port busy, or host key changed", ran.stdout + "\n" + _sshd_not_answering() + "\n"
                   + _changed_key(tmp_path))


SSH_ERRORS = """
import socket, threading
from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.errors import KernelStartError
from pytest_hermes_kernel.transports import SshTransport

listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen()

def answer_http():
    while True:
        conn, _ = listener.accept()
        conn.sendall(b"HTTP/1.1 400 Bad Request\\r\\n\\r\\n")
        conn.close()

threading.Thread(target=answer_http, daemon=True).start()
silent = socket.socket()  # takes connections (the backlog) and never answers
silent.bind(("127.0.0.1", 0))
silent.listen()
dropping = socket.create_server(("127.0.0.1", 0))  # closes each before a banner, as an sshd past MaxStartups

def drop():
    while True:
        conn = dropping.accept()[0]
        conn.sendall(b"Exceeded MaxStartups\\r\\n")
        conn.close()

threading.Thread(target=drop, daemon=True).start()
for port in (listener.getsockname()[1], 1, silent.getsockname()[1], dropping.getsockname()[1]):
    try:
        start_kernel(SshTransport(target=f"hermes@127.0.0.1:{port}", connect_timeout=5.0))
    except KernelStartError as exc:
        print(f"KernelStartError: {exc}")
"""


def _sshd_not_answering() -> str:
    from pytest_hermes_kernel.containers import lifecycle
    from pytest_hermes_kernel.errors import ContainerStartError

    container = SimpleNamespace(id="c0ffee" * 10, short_id="c0ffee12", logs=lambda tail: b"sshd: no hostkeys")
    with pytest.raises(ContainerStartError) as err:
        lifecycle._fail(container, f"sshd did not answer on {lifecycle.LOOPBACK}:32768 after 20s")
    return f"ContainerStartError: {err.value}"


def _changed_key(directory: Path) -> str:
    """The message for a host whose old key is in ``ci_known_hosts`` (``--hermes-ssh-known-hosts``), run from
    ``directory``."""
    from pytest_hermes_kernel.transports.ssh.address import SshTarget, changed_key_message

    def key(fingerprint: str) -> SimpleNamespace:
        return SimpleNamespace(get_name=lambda: "ssh-ed25519", fingerprint=fingerprint, get_base64=lambda: "AAAAC3")

    (directory / "ci_known_hosts").write_text("[127.0.0.1]:2222 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHkYvktB+yb15L"
                                              "divyFD130b7em6V6Jwr9hD6LKDMDTf\n")
    exc = SimpleNamespace(key=key("SHA256:new"), expected_key=key("SHA256:old"))
    cwd = os.getcwd()
    os.chdir(directory)
    try:
        message = changed_key_message(SshTarget.parse("hermes@127.0.0.1:2222"), exc, pinned=False,
                                      known_hosts="ci_known_hosts", system=str(directory / "no_such_file"))
    finally:
        os.chdir(cwd)
    return f"KernelStartError: ssh transport: {message}"


def test_leak_check_entry_quotes_the_warning(tmp_path: Path) -> None:
    (tmp_path / "test_leak.py").write_text(
        "def test_leaks_a_helper(hermes_kernel):\n    hermes_kernel.execute(\"import subprocess; "
        "subprocess.Popen(['sleep', '300'], start_new_session=True)\")\n")
    ran = run_command("python -m pytest -q --hermes-leak-grace=0.5", tmp_path)  # the helper never ends: 0.5 s of re-checks, not 3
    _assert_quoted("A leak check failed", ran.stdout.replace(str(tmp_path), "/home/me/proj"))  # the test's own path


# ------------------------------------------------------------------ the doctor's sample output

def _doctor_sample(name: str) -> str:
    return readme_text().split(f"<!-- doctor: {name} -->\n```\n", 1)[1].split("```", 1)[0]


@pytest.mark.parametrize("case", ["ok", "no engine"])
def test_the_doctor_sample_is_what_doctor_prints(docker_ready: None, tmp_path: Path, case: str) -> None:
    """Each line of the README's sample (``...``: text cut) is in the real output, once the parts
    that name this machine (the interpreter's path, the engine's version) are put as the sample
    shows them."""
    env = fresh_env(DOCKER_HOST="unix:///var/run/hermes-no-engine.sock") if case == "no engine" else None
    done = run_command("hermes-kernel doctor", tmp_path, env)
    assert done.returncode == (1 if case == "no engine" else 0), done.stdout
    real = re.sub(r"^(local +ok +)\S+", r"\1/home/me/project/.venv/bin/python3", done.stdout, flags=re.M)
    real = re.sub(r"docker engine \S+ at", "docker engine 20.10.24+dfsg1 at", real)
    unmatched = [line for line in _doctor_sample(case).splitlines() if line.strip() and _matches_none(line, real)]
    assert unmatched == [], "the README shows\n" + "\n".join(unmatched) + f"\nbut doctor prints\n{real}"
