"""A spare kernel (kernel/runner/spare.py) builds its supervisor before any kernel's config
exists, from an empty one, and takes the real config at its claim (``_take_config``). Every
attribute a supervisor and its parts derive from the config when built must then equal what a
supervisor built from that config holds: a field missed there (the output cap, the token, the
orphan timer, the OOM counter) would make kernels from a spare differ from kernels forked at the
request, silently. The same for the spare's worker, built before its claim too and given the
config then (``Worker.take_config``). Run in a child interpreter: a supervisor installs signal handlers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from pytest_hermes_kernel.kernel.runner import spare

SCRIPT = r"""
import json, sys
from pytest_hermes_kernel.kernel.runner import spare
from pytest_hermes_kernel.kernel.runner.supervisor import Supervisor
from pytest_hermes_kernel.kernel.runner.worker import Worker
import socket

config = json.loads(sys.argv[1])

FDS = {"wake_r", "wake_w", "out_r", "out_w", "err_r", "err_w", "write_ends", "stray", "_main"}  # differ between two builds

def plain(obj):
    return {name: value for name, value in vars(obj).items()
            if name not in FDS and isinstance(value, (str, int, float, bool, type(None), dict, list, tuple))}

def state(sup):
    parts = {"supervisor": sup, "link": sup.link, "worker": sup.worker, "pipes": sup.pipes,
             "out": sup.pipes.out, "err": sup.pipes.err, "cells": sup.cells}
    return {k: plain(v) for k, v in parts.items()}

fresh = Supervisor(config)
claimed = Supervisor({})
spare._take_config(claimed, config)
a, b = socket.socketpair()
fresh_worker, claimed_worker = Worker(a, config), Worker(b, {})
claimed_worker.take_config(config)
print(json.dumps({"fresh": {**state(fresh), "in_worker": plain(fresh_worker)},
                  "claimed": {**state(claimed), "in_worker": plain(claimed_worker)}}, default=repr))
"""

CONFIGS = [
    {"kernel_id": "k1", "token": "t0ken", "orphan_timeout": 12.5, "exit_grace": 0.7, "max_output_bytes": 12345,
     "oom_counter_file": "/sys/fs/cgroup/x/memory.events", "cgroup_own": True, "kernel_dir": "/tmp/kd"},
    {"kernel_id": "k2", "max_output_bytes": 0, "cgroup_own": False},
]


def _states(config: dict) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(spare.__file__).parents[3]),
                                                        os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(config)], capture_output=True, text=True,
                          env=env, timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_a_claimed_spare_holds_what_a_supervisor_built_from_the_config_holds() -> None:
    for config in CONFIGS:
        got = _states(config)
        differ = [f"{part}.{name}: built {value!r}, claimed {got['claimed'][part].get(name)!r}"
                  for part, fields in got["fresh"].items() for name, value in fields.items()
                  if got["claimed"][part].get(name) != value]
        assert not differ, differ
        assert got["claimed"].keys() == got["fresh"].keys()
        assert got["claimed"]["out"]["cap"] == config["max_output_bytes"]  # the comparison saw the fields
        assert got["claimed"]["in_worker"]["text_cap"] == config["max_output_bytes"]
