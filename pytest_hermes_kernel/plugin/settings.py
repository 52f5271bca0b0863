"""Options, ini keys, environment variables and the resolved settings of a run.

Precedence (STYLE.md): marker > CLI > env (``PYTEST_HERMES_*``) > ini (``hermes_*``) > default.

The run id is resolved here once per process and handed on explicitly: to this process's
shared containers (:func:`~pytest_hermes_kernel.containers.sharing.use_run_id`) and, from the
xdist controller, to each worker in its ``workerinput`` (so every worker of a run shares its
containers), with the controller's ``pid:start-time`` as the run's anchor
(:func:`~pytest_hermes_kernel.containers.sharing.use_run_anchor`). It is never written to ``os.environ``.
"""

from __future__ import annotations

import dataclasses
import os
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Literal

import pytest

from ..containers.reuse import DEFAULT_REUSE_IDLE_TIMEOUT_S, ReusePolicy
from ..containers.sharing import RUN_ID_PATTERN, process_anchor, use_run_anchor, use_run_id
from ..errors import ConfigError
from ..kernel.options import MAX_SECONDS, is_seconds
from ..kernel.output import REDACTED, redact
from ..transports import TRANSPORT_NAMES

LeakMode = Literal["off", "warn", "error"]


@dataclass(frozen=True)
class _Setting:
    name: str  # option/ini suffix: --hermes-<name>, hermes_<name>, PYTEST_HERMES_<NAME>
    help: str
    default: str | None
    parse: Callable[[str], Any]
    #: a list: commas or whitespace between entries (an ini value one entry per line, a TOML list)
    listed: bool = False

    @property
    def flag(self) -> str:
        return "--hermes-" + self.name.replace("_", "-")

    @property
    def env(self) -> str:
        return "PYTEST_HERMES_" + self.name.upper()

    @property
    def is_flag(self) -> bool:
        """A boolean setting: a bare ``--hermes-<name>`` on the command line (env and ini take a word)."""
        return self.parse is _bool


def _transports(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    if not names:
        raise ConfigError("--hermes-transport needs at least one name, e.g. local,docker")
    return names


def _leak_mode(text: str) -> LeakMode:
    if text not in ("off", "warn", "error"):
        raise ConfigError(f"--hermes-leak-check must be off, warn or error, not {text!r}")
    return text  # type: ignore[return-value]


def _seconds(text: str) -> float | None:
    """A duration in seconds; ``none``, ``off`` or any spelling of zero (``0``, ``0.0``) is ``None``
    (no limit). NaN and infinity are refused: a leak grace of ``nan`` re-checked a leak forever, and a
    cell timeout of ``nan`` or ``inf`` errored every test at its kernel's start instead of here."""
    if text.strip().lower() in ("", "none", "off"):
        return None
    value = _number(text, float)
    if value is None or not is_seconds(value, positive=False):
        raise ConfigError(f"a duration must be a finite number of seconds >= 0 (at most {MAX_SECONDS:g}) or none, "
                          f"not {text!r}")
    return value or None


def _positive_seconds(text: str) -> float:
    """A kept kernel's TTL: finite and > 0, and with no bound of :data:`MAX_SECONDS`: the runner
    holds any TTL (``1e300`` keeps a kernel until it is swept, README 'Post-mortem'); no wait of
    the host's is that long."""
    value = _number(text, float)
    if value is None or not value > 0 or value == float("inf"):
        raise ConfigError(f"expected a number of seconds > 0, not {text!r}")
    return value


def _number(text: str, kind: Callable[[str], Any]) -> Any:
    """``kind(text)``, or ``None`` when ``text`` is no such number: the caller's message says what
    it expects (``float('abc')``'s own, "could not convert string to float", names no setting)."""
    try:
        return kind(text)
    except ValueError:
        return None


#: Default TTL of a kernel kept for post-mortem: one hour (issue 12).
DEFAULT_KEEP_TTL_S = 3600


def _bool(text: str) -> bool:
    word = text.strip().lower()
    if word not in _TRUE + _FALSE:
        raise ConfigError(f"expected one of {', '.join(_TRUE + _FALSE)}, not {text!r}")
    return word in _TRUE


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _run_id(text: str) -> str:
    if not RUN_ID_PATTERN.fullmatch(text):
        raise ConfigError(f"a run id must be 1-128 letters, digits, '_', '.' or '-', not {text!r}")
    return text


def _image(text: str) -> str:
    from ..containers.image_check import check_image_name

    return check_image_name(text)


def _engines(text: str) -> tuple[str, ...]:
    from ..containers.engines import parse_engine_list

    return parse_engine_list(text)


def _positive_int(text: str) -> int:
    value = _number(text, int)
    if value is None or value < 1:
        raise ConfigError(f"expected an integer >= 1, not {text!r}")
    return value


def _cap(text: str) -> int | None:
    if text.strip().lower() in ("none", "off"):
        return None
    value = _number(text, int)
    if value is None or value < 1:
        raise ConfigError(f"expected an integer >= 1, or none for no cap, not {text!r}")
    return value


def _ssh_targets(text: str) -> tuple[str, ...]:
    from ..transports.ssh.targets import parse_targets

    return parse_targets(text)


def _existing_file(text: str) -> str:
    path = os.path.abspath(os.path.expanduser(text.strip()))  # a kept kernel's record is read from anywhere
    if not os.path.isfile(path):
        raise ConfigError(f"no such file: {path!r}")
    return path


def _ssh_key_file(text: str) -> str:
    """An existing file that holds a private key the ssh transport can use (checked before the run)."""
    from ..transports.ssh.credentials import read_key_file

    path = _existing_file(text)
    try:
        read_key_file(path)
    except ImportError:  # no paramiko: the ssh leg says so itself, a local run needs no key
        pass
    return path


def _known_hosts_file(text: str) -> str:
    """An existing known_hosts file the ssh transport can read (checked before the run)."""
    path = _existing_file(text)
    try:
        import paramiko

        from ..transports.ssh.credentials import load_known_hosts
    except ImportError:  # no paramiko: the ssh leg says so itself
        return path
    load_known_hosts(paramiko.HostKeys(), path)
    return path


SETTINGS = (
    _Setting("transport", f"transports to run kernels on, comma-separated ({', '.join(TRANSPORT_NAMES)}); "
             "more than one makes a matrix", "local", _transports, listed=True),
    _Setting("timeout", "default per-cell budget in seconds for fixture kernels (none or 0: no limit)", "60", _seconds),
    _Setting("leak_check", "after each test: off | warn (HermesLeakWarning) | error (the test errors)",
             "warn", _leak_mode),
    _Setting("keep_failed", "keep a failed test's kernels alive after pytest exits, for post-mortem (local, "
             "docker and ssh transports; see README 'Post-mortem')", "false", _bool),
    _Setting("keep_failed_ttl", "seconds a kept kernel lives without a client before it ends by itself",
             str(DEFAULT_KEEP_TTL_S), _positive_seconds),
    _Setting("keep_failed_max", "at most this many kernels a pytest process (each xdist worker) keeps for post-mortem; "
             "a failed test's kernels past it are shut down, the summary saying so (none: no cap)", "10", _cap),
    _Setting("max_kernels", "LRU cap of the hermes_registry fixture", "4", _positive_int),
    _Setting("idle_timeout", "idle reap timeout in seconds of the hermes_registry fixture (none or 0: never reaped)", "1800", _seconds),
    _Setting("require_transports", "fail (instead of skip) tests whose transport cannot run here; "
             "set it in CI, so a matrix leg that cannot run fails instead of passing as skipped", "false", _bool),
    _Setting("leak_grace", "seconds the leak check retries to let reaping finish (none or 0: no retry)", "3", _seconds),
    _Setting("image", "kernel host image of the docker and ssh transports (default: the kit's own, built "
             "locally on first use); see docs/reference.md 'Images'", None, _image),
    _Setting("docker_hosts", "docker engines to spread docker kernels over, a comma list of URLs (unix:///path, "
             "tcp://host:port; 'default' is the environment's, DOCKER_HOST; default: that one alone): each new kernel goes "
             "to the engine with the fewest live kernels of this process; see README 'Several docker engines'", None, _engines,
             listed=True),
    _Setting("reuse", "keep the run's docker kernel host and sshd containers when it ends and use them again in "
             "the next run with reuse on (local runs; never two runs at once); see README 'Warm containers'",
             "false", _bool),
    _Setting("reuse_idle_timeout", "seconds a container kept by --hermes-reuse waits unused before a sweep "
             "removes it (none or 0: until `hermes-kernel sweep --reused`)", f"{DEFAULT_REUSE_IDLE_TIMEOUT_S:g}", _seconds),
    _Setting("ssh_targets", "run the ssh transport's kernels on these hosts instead of an sshd container: "
             "user@host:port, comma-separated (default: none, an sshd container); each kernel goes to the one with the "
             "fewest live kernels; see README 'Several ssh hosts'", None, _ssh_targets, listed=True),
    _Setting("ssh_key", "private key file for --hermes-ssh-targets (default: your agent and ~/.ssh keys)", None,
             _ssh_key_file),
    _Setting("ssh_known_hosts", "extra known_hosts file for --hermes-ssh-targets (read, never written; "
             "~/.ssh/known_hosts is read too)", None, _known_hosts_file),
    _Setting("run_id", "id of this test run, shared by its xdist workers and the processes it starts: it labels "
             "and names the run's shared containers (default: a new id per run)", None, _run_id),
)


@dataclass(frozen=True)
class HermesSettings:
    """The resolved settings of a run (see :data:`SETTINGS` for meanings)."""

    transport: tuple[str, ...]
    timeout: float | None
    leak_check: LeakMode
    keep_failed: bool
    keep_failed_ttl: float
    keep_failed_max: int | None
    max_kernels: int
    idle_timeout: float | None
    require_transports: bool
    leak_grace: float | None
    image: str | None
    docker_hosts: tuple[str, ...] | None
    reuse: bool
    reuse_idle_timeout: float | None
    ssh_targets: tuple[str, ...] | None
    ssh_key: str | None
    ssh_known_hosts: str | None
    run_id: str | None
    sources: dict[str, str]
    #: ``PYTEST_HERMES_X=value`` set but not used: an option on the command line won (``addopts`` too)
    env_not_used: tuple[str, ...] = ()


settings_key = pytest.StashKey[HermesSettings]()


def transport_defaults(config: pytest.Config, name: str) -> dict[str, Any]:
    """Constructor options the run's settings give a built-in transport: for docker and ssh,
    ``image`` when ``--hermes-image`` is set and ``reuse`` when ``--hermes-reuse`` is on, for docker
    ``docker_hosts`` when ``--hermes-docker-hosts`` is set; for ssh with ``--hermes-ssh-targets``,
    ``targets`` (and the key and known_hosts files) instead: there is no sshd container then;
    ``{}`` otherwise."""
    settings = config.stash[settings_key]
    if name not in ("docker", "ssh"):
        return {}
    if name == "ssh" and settings.ssh_targets:
        given = {"key_filename": settings.ssh_key, "known_hosts": settings.ssh_known_hosts}
        return {"targets": settings.ssh_targets, **{k: v for k, v in given.items() if v}}
    options: dict[str, Any] = {"image": settings.image} if settings.image else {}
    if name == "docker" and settings.docker_hosts:
        options["docker_hosts"] = settings.docker_hosts
    if settings.reuse:
        options["reuse"] = ReusePolicy(idle_timeout=settings.reuse_idle_timeout)
    return options


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hermes-kernel", "session-persistent kernels (pytest-hermes-kernel)")
    for s in SETTINGS:
        where = f"[env {s.env}, ini hermes_{s.name}{f'; default {s.default}' if s.default else ''}]"  # else the help says it
        if s.is_flag:  # a bare flag: a value argument would swallow the test path after it
            group.addoption(s.flag, dest=f"hermes_{s.name}", default=None, action="store_const", const="true",
                            help=f"{s.help} {where}")
            # and its off switch, over the env or the ini (a CI profile's PYTEST_HERMES_KEEP_FAILED=1
            # could not be turned off for one run); the last of the two on the line wins
            group.addoption(s.flag.replace("--", "--no-", 1), dest=f"hermes_{s.name}", default=None,
                            action="store_const", const="false", help=f"turn {s.flag} off, over {s.env} and the ini")
        else:
            group.addoption(s.flag, dest=f"hermes_{s.name}", default=None, metavar="VALUE",
                            help=f"{s.help} {where}")
        # a list is "args": one entry per line in an ini file, a list in pyproject.toml
        parser.addini(f"hermes_{s.name}", s.help, type="args" if s.listed else None, default=None)


#: pyproject.toml's minimum (tests/unit/test_declared_minimums.py): pytest 7's getini gave ``''`` for
#: an unset ini key registered with ``default=None``, and every run said it was set but empty.
MIN_PYTEST = (8, 0)


def resolve(config: pytest.Config, environ: dict[str, str] | None = None) -> HermesSettings:
    """Resolve every setting by precedence CLI > env > ini > default.

    :raises pytest.UsageError: naming the setting and its source when a value is bad.
    """
    environ = dict(os.environ) if environ is None else environ
    values: dict[str, Any] = {s.name: None for s in SETTINGS if s.default is None}
    sources: dict[str, str] = {}
    unused: list[str] = []
    for s in SETTINGS:
        # `--hermes-transport=$LEG`, or `PYTEST_HERMES_TRANSPORT: ${{ matrix.leg }}`, with the CI
        # variable unset ran the local leg as if no transport had been named: a false green. A blank
        # value (spaces only) is empty too: `--hermes-timeout=" "` was read as `none`, no limit
        if _blank(config.getoption(f"hermes_{s.name}")):
            raise pytest.UsageError(f"pytest-hermes-kernel: {s.flag} was given an empty value (an unset variable "
                                    f"in the command line?): give a value, or leave {s.flag} out for the default")
        if _blank(environ.get(s.env)):
            raise pytest.UsageError(f"pytest-hermes-kernel: {s.env} is set but empty (an unset CI variable?): "
                                    f"give it a value, or unset it for the default")
        ini = _ini(config, f"hermes_{s.name}")
        if ini is not None and (not ini or _blank(ini)):  # `hermes_transport =` with a templated value left unset
            raise pytest.UsageError(f"pytest-hermes-kernel: ini hermes_{s.name} is set but empty: give it a value, "
                                    f"or remove the line for the default")
        for source, raw in ((s.flag, config.getoption(f"hermes_{s.name}")), (s.env, environ.get(s.env)),
                            (f"ini hermes_{s.name}", ini), ("default", s.default)):
            if raw not in (None, ""):
                text = ",".join(raw) if isinstance(raw, list) else str(raw)
                try:
                    values[s.name] = s.parse(",".join(text.split()) if s.listed else text)
                except (ConfigError, ValueError) as exc:  # a value holding a password is not echoed: the error masks it
                    shown = "" if REDACTED in str(exc) or redact(text) != text else f" {raw!r}"
                    raise pytest.UsageError(f"pytest-hermes-kernel: bad value{shown} from {source}: {exc}") from None
                sources[s.name] = source
                break
        env = environ.get(s.env)
        if sources.get(s.name) == s.flag and env is not None and _parsed(s, env) != values[s.name]:
            unused.append(f"{s.env}={env}")
    return HermesSettings(sources=sources, env_not_used=tuple(unused), **values)


def _ini(config: pytest.Config, key: str) -> Any:
    """``config.getini(key)``; a number or switch of pytest 9's native ``[tool.pytest]`` table
    (``hermes_timeout = 30``) as its text, and a string for a list key (``hermes_transport = "local"``)
    as it is: pytest refused both (``expects a string, got int``, ``expects a list ..., got str``)."""
    try:
        return config.getini(key)
    except (TypeError, pytest.UsageError):  # pytest 9.2 says UsageError, 9.0 TypeError
        raw = getattr(getattr(config, "_inicfg", {}).get(key), "value", None)  # pytest 9's ConfigValue
        if isinstance(raw, (bool, int, float, str)):  # a str: a list key's, split as the ini's text is
            return raw if isinstance(raw, str) else str(raw).lower()  # True -> "true", 30 -> "30"
        raise


def _parsed(s: _Setting, text: str) -> object:
    """``text`` as setting ``s`` reads it, or ``text`` itself when it is no value of ``s``."""
    try:
        return s.parse(",".join(text.split()) if s.listed else text)
    except (ConfigError, ValueError):
        return text


def _blank(value: object) -> bool:
    """Whether ``value`` (an option's, a variable's or an ini key's) is a string of spaces or nothing."""
    return isinstance(value, str) and not value.strip()


_previous_run_id_key = pytest.StashKey[str | None]()


def _run_id_of(config: pytest.Config, settings: HermesSettings) -> str:
    """The run id: the xdist controller's (on a worker), else the setting, else the one of the
    shared transports a ``conftest.py`` made at import (before this hook: they join this run),
    else a new uuid."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and workerinput.get("hermes_run_id"):
        return str(workerinput["hermes_run_id"])
    return settings.run_id or _early_run_id() or uuid.uuid4().hex


def _early_run_id() -> str | None:
    """The run id the shared transports made before the run was configured run under, if any."""
    return next((made_in for _, made_in, _ in _shared_run_ids()), None)


def _shared_run_ids() -> list[tuple[str, str, str]]:
    """``(name, run id, where it was made)`` of each shared transport that runs under a run id."""
    from ..transports import shared_transports

    return [(name, made_in, shared.made_by) for name, shared in shared_transports().items()
            if isinstance(made_in := getattr(shared.transport, "run_id", None), str)]


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if int(pytest.__version__.split(".")[0]) < MIN_PYTEST[0]:  # pip refuses it; a later downgrade does not
        raise pytest.UsageError(f"pytest-hermes-kernel needs pytest {'.'.join(map(str, MIN_PYTEST))} or newer, "
                                f"this is {pytest.__version__}: pip install -U 'pytest>={MIN_PYTEST[0]}.{MIN_PYTEST[1]}'")
    settings = resolve(config)
    settings = dataclasses.replace(settings, run_id=_run_id_of(config, settings))
    config.stash[settings_key] = settings
    config.stash[_previous_run_id_key] = use_run_id(settings.run_id)
    _warn_of_transports_made_outside_the_run(config, settings.run_id)
    workerinput = getattr(config, "workerinput", None)
    use_run_anchor(workerinput.get("hermes_run_anchor") if workerinput is not None else None)
    config.addinivalue_line(
        "markers", "hermes_kernel(**options): options for this test's kernels: any KernelOptions field "
        "(timeout=, max_output_bytes=, auto_restart=, env=, tools=, watchdog=WatchdogPolicy(...)), "
        "transport=NAME to pin one transport, and transport options such as container='fresh', "
        "mem_limit_bytes=N (docker/ssh)")
    config.addinivalue_line(
        "markers", "hermes_transports(*names): run this test only on these transports of the matrix")
    # registered here, not by the leak checker, so that `-p no:...leakcheck` keeps it known
    config.addinivalue_line("markers", "hermes_allow_leaks(reason): this test may leave resources behind")
    # a misspelled hermes_* marker errors its test at setup with a did-you-mean (plugin/markers.py):
    # pytest's own unknown-mark warning for it would report the same typo a second time
    config.addinivalue_line("filterwarnings", r"ignore:Unknown pytest\.mark\.hermes_:pytest.PytestUnknownMarkWarning")


def _warn_of_transports_made_outside_the_run(config: pytest.Config, run_id: str) -> None:
    """A shared docker or ssh transport made before the run had its id (a ``conftest.py`` that
    calls ``get_transport`` at import: initial conftests load before ``pytest_configure``) runs
    under the run id it was made with. The run adopts it when nothing else names one
    (:func:`_run_id_of`); when ``--hermes-run-id`` or the xdist controller does, that id does not
    reach its containers' labels, and each xdist worker starts a container of its own instead of
    sharing the run's (B21): warned here."""
    for name, made_in, made_by in _shared_run_ids():
        if made_in != run_id:
            config.issue_config_time_warning(pytest.PytestConfigWarning(
                f"the shared {name} transport was made before pytest set this run's id, by {made_by}: "
                f"it runs under run id {made_in}, not the run's {run_id} (--hermes-run-id does not reach its "
                f"containers, and each xdist worker starts a container of its own)\nHint: take the "
                f"hermes_transport fixture's transport, or call get_transport() in a fixture or test, not at "
                f"conftest.py import"), stacklevel=2)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist, on the controller: send each worker this run's id (see module docstring)."""
    node.workerinput["hermes_run_id"] = node.config.stash[settings_key].run_id
    node.workerinput["hermes_run_anchor"] = process_anchor()  # the controller outlives crashed workers


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    if _previous_run_id_key in config.stash:
        use_run_id(config.stash[_previous_run_id_key])
        use_run_anchor(None)
