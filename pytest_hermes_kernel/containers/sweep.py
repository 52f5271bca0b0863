"""Sweeps: remove the containers of runs whose host is gone, and nothing else.

Only containers labelled by :mod:`.labels` are looked at; :func:`~.labels.host_is_gone` decides.
A session sweeps once, at its first use of docker (:func:`sweep_once_per_process`), never its
own run's containers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .labels import LABEL, LABEL_RUN_ID, host_is_gone
from .lifecycle import remove_container

if TYPE_CHECKING:
    import docker

__all__ = ["sweep_dead_runs", "sweep_once_per_process"]


def sweep_dead_runs(client: docker.DockerClient | None = None, *, keep_run_id: str | None = None) -> list[str]:
    """Remove containers whose host process (on this machine) is gone.

    Only containers labelled ``org.hermes-kernel=1`` and made on this hostname are looked at.
    A host counts as alive when its pid exists *and* that process started when the label says
    (within 1 s), so a reused pid does not keep a dead run's containers.

    :param client: docker-py client; ``None`` opens one from the environment.
    :param keep_run_id: never remove this run's containers (its creator may have exited while
        another xdist worker of the run still uses a shared one).
    :returns: ids of the containers removed.
    """
    import docker

    owned = client is None
    client = docker.from_env() if client is None else client
    removed: list[str] = []
    try:
        for summary in client.api.containers(all=True, filters={"label": f"{LABEL}=1"}):
            labels = summary.get("Labels") or {}
            if keep_run_id is not None and labels.get(LABEL_RUN_ID) == keep_run_id:
                continue
            if host_is_gone(labels) and remove_container(summary["Id"], client=client):
                removed.append(summary["Id"])
    finally:
        if owned:
            client.close()
    return removed


_swept_at_start = False


def sweep_once_per_process(client: docker.DockerClient, run_id: str) -> None:
    """At a session's first use of docker: remove containers of dead runs (never this run's)."""
    global _swept_at_start
    if _swept_at_start:
        return
    _swept_at_start = True
    try:
        sweep_dead_runs(client, keep_run_id=run_id)
    except Exception:  # noqa: BLE001 - a failed sweep must not stop the run; `hermes-kernel sweep` retries
        pass
