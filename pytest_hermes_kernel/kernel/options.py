"""KernelOptions: how a kernel is started and run; every default lives here, once.

Durations are float seconds (``None``: no limit), sizes int bytes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..errors import ConfigError
from .output import DEFAULT_MAX_OUTPUT_BYTES
from .rpc import DEFAULT_MAX_TOOL_CALLS
from .watchdog import WatchdogPolicy

__all__ = ["KernelOptions"]


@dataclass
class KernelOptions:
    """How a kernel is started and run. Durations in seconds, sizes in bytes.

    :param timeout: default per-cell budget; ``None`` is no limit.
    :param start_timeout: how long the runner may take to say hello.
    :param max_output_bytes: cap per stream per cell (head 40 % + tail 60 % kept).
    :param auto_restart: run the next cell on a fresh worker after a death (reported as
        ``state_lost``); when false, the next cell raises :class:`KernelDiedError` instead.
    :param env: extra environment variables for the kernel.
    :param env_allow: host variable names passed through even if they look secret.
    :param inherit_env: pass all non-secret host variables (default); else only the safe list.
    :param keepalive_interval: for re-attachable transports: a silent channel is pinged after
        this long, and declared lost after ``keepalive_missed`` intervals without any frame.
    :param reconnect_timeout: how long a broken channel may take to re-attach.
    :param shutdown_grace: each step of request -> SIGTERM -> SIGKILL waits this long.
    """

    timeout: float | None = None
    start_timeout: float = 30.0
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    auto_restart: bool = True
    cwd: str | None = None
    python: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    env_allow: tuple[str, ...] = ()
    inherit_env: bool = True
    watchdog: WatchdogPolicy = field(default_factory=WatchdogPolicy)
    max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS
    keepalive_interval: float = 3.0
    keepalive_missed: int = 3
    reconnect_timeout: float = 10.0
    orphan_timeout: float = 60.0
    shutdown_grace: float = 2.0
    exit_grace: float = 2.0
    oom_counter_file: str | None = None
    cgroup_procs: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.watchdog, Mapping):  # from TOML scenarios and marker kwargs
            self.watchdog = WatchdogPolicy(**self.watchdog)
        if self.max_output_bytes < 1024:
            raise ConfigError(f"max_output_bytes must be >= 1024, got {self.max_output_bytes}")
        if self.timeout is not None and not (math.isfinite(self.timeout) and self.timeout > 0):
            raise ConfigError(f"timeout must be a finite number of seconds > 0 or None, got {self.timeout!r}")
        for name in ("start_timeout", "keepalive_interval", "reconnect_timeout", "orphan_timeout",
                     "shutdown_grace", "exit_grace"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ConfigError(f"{name} must be a finite number of seconds >= 0, got {value!r}")
        if not isinstance(self.max_tool_calls, int) or self.max_tool_calls < 0:
            raise ConfigError(f"max_tool_calls must be an int >= 0, got {self.max_tool_calls!r}")
        bad = {k: v for k, v in self.env.items() if not isinstance(k, str) or not isinstance(v, str)}
        if bad:
            raise ConfigError(f"env names and values must be str, got {bad!r}")
        if self.cwd is not None and not isinstance(self.cwd, str):
            raise ConfigError(f"cwd must be a path string, got {self.cwd!r}")
