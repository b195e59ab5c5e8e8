"""``--engine ray``: one Ray task per scene on a Ray cluster (docs/batch.md).

Ray (``pip install 'vistest[ray]'``) schedules the tasks; each declares ``num_cpus`` (the
scene's CPUs) and ``memory`` (its modelled peak, bytes), so Ray runs on each node only as
many scenes as fit. The task is :func:`vistest.batch.task.run_task_or_exit`, imported by the
workers from their own vistest installation (the same version on every node); every node
must see the scene files and the run folder at the same paths (a shared filesystem).

Retries are Ray's own: ``max_retries=retries`` re-runs a task whose worker process died or
whose node was lost, and ``retry_exceptions=False`` never re-runs a task that raised. The
task returns bad input and bugs as outcomes (it raises nothing; it ends its worker process
when a child process of it was lost), so only infrastructure failures are retried. A task
still lost after its retries surfaces here as a Ray error (WorkerCrashedError, NodeDiedError,
OutOfMemoryError, ...) and becomes an infrastructure failure. Ctrl-C cancels the tasks in
flight (Ray raises KeyboardInterrupt in them, and the pipeline cleans up as for Ctrl-C) and disconnects.
"""
from __future__ import annotations

import logging
import os
import socket
from collections import deque
from typing import Callable, Sequence

from ..errors import InputError
from .failures import ERROR, Failure
from .task import Outcome, SceneTask, lost, run_task_or_exit

LOCAL = "local"  # --address local: start a private Ray instance on this machine
LOCAL_OBJECT_STORE_MB = 100  # tasks exchange a few kB; Ray's minimum is 75 MB
CANCEL_SECONDS = 60.0


def import_ray():
    """The ``ray`` module, or InputError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise InputError("--engine ray: Ray is not installed; pip install 'vistest[ray]'") from None
    return ray


def cluster_address(address: str | None) -> str:
    """``--address``, else ``$RAY_ADDRESS``; InputError when neither is set."""
    address = address or os.environ.get("RAY_ADDRESS")
    if not address:
        raise InputError("--address: expected the Ray cluster's address (HOST:PORT, or set RAY_ADDRESS), or "
                         f"'{LOCAL}' to start Ray on this machine")
    return address


CONNECT_TIMEOUT_S = 5.0  # seconds a cluster address may take to accept a connection before it is refused


def check_reachable(address: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """A ``HOST:PORT`` (or ``ray://HOST:PORT``) cluster address that accepts no TCP connection within
    ``timeout_s`` seconds is an InputError naming ``--address`` (issue #44: ``ray.init`` waited more
    than 300 s on ``127.0.0.1:1``, where nothing listens). ``local`` and ``auto`` are not probed (Ray
    looks for a cluster on this machine itself); an address that answers but is not Ray is left to
    Ray's own timeouts."""
    if address in (LOCAL, "auto"):
        return
    hostport = address.split("://", 1)[1] if "://" in address else address
    host, sep, port = hostport.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InputError(f"--address: expected HOST:PORT (or ray://HOST:PORT, '{LOCAL}', 'auto'), got {address!r}")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            pass
    except OSError as e:
        why = "timed out" if isinstance(e, socket.timeout) else (e.strerror or str(e))
        raise InputError(f"--address: {address}: no Ray cluster answers there ({why}, within {timeout_s:g} s); start "
                         f"the cluster (ray start --head) or give its address, or '{LOCAL}' to start Ray on this "
                         f"machine") from None


def connect(ray, address: str, local_cpus: int | None) -> None:
    """``ray.init`` at ``address`` (:func:`cluster_address`'s; ``local``: a private instance of
    ``local_cpus`` CPUs), probed first (:func:`check_reachable`); a cluster Ray cannot connect to (an
    address that answers but is not Ray's: Ray gives up after about 20 s) is an InputError naming
    ``--address``, not a ConnectionError traceback."""
    common = dict(log_to_driver=False, logging_level=logging.WARNING, namespace="vistest")
    if address == LOCAL:
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        ray.init(num_cpus=local_cpus, include_dashboard=False, object_store_memory=LOCAL_OBJECT_STORE_MB * 2**20,
                 **common)
        return
    check_reachable(address)
    try:
        ray.init(address=address, **common)
    except ConnectionError as e:
        raise InputError(f"--address: {address}: cannot connect to a Ray cluster there "
                         f"({str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__})") from None


class RayEngine:
    """Run tasks as Ray tasks on the cluster at ``address`` (or a private local instance of
    ``local_cpus`` CPUs). ``cpus``/``memory_mb``: what each task declares; ``in_flight``: at
    most that many tasks submitted at once (None: all; Ray queues them)."""

    name = "ray"

    def __init__(self, address: str | None, retries: int, cpus: int, memory_mb: float,
                 in_flight: int | None = None, local_cpus: int | None = None):
        self.address = cluster_address(address)
        check_reachable(self.address)
        self.retries = max(0, retries)
        self.cpus = cpus
        self.memory_mb = memory_mb
        self.in_flight = in_flight
        self.local_cpus = local_cpus

    def describe(self) -> str:
        where = "a local Ray instance" if self.address == LOCAL else f"Ray cluster {self.address}"
        return f"{where}, {self.cpus} CPU(s) and {self.memory_mb:.0f} MB per scene"


    def run(self, tasks: Sequence[SceneTask], done: Callable[[Outcome], None]) -> None:
        """Run every task; ``done(outcome)`` is called here as each scene ends."""
        ray = import_ray()
        connect(ray, self.address, self.local_cpus)
        remote = ray.remote(run_task_or_exit)
        declared = dict(num_cpus=self.cpus, memory=int(self.memory_mb * 2**20), max_retries=self.retries,
                        retry_exceptions=False)
        todo = deque(tasks)
        refs: dict = {}
        try:
            while todo or refs:
                while todo and (self.in_flight is None or len(refs) < self.in_flight):
                    task = todo.popleft()
                    refs[remote.options(name=f"vistest:{task.scene_id}", **declared).remote(task)] = task
                ready, _ = ray.wait(list(refs), num_returns=1)
                for ref in ready:
                    done(self._outcome(ray, ref, refs.pop(ref)))
        except BaseException:
            for ref in refs:
                ray.cancel(ref)
            if refs:
                ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=CANCEL_SECONDS)
                for ref in ready:  # scenes that finished before they could be cancelled are kept
                    try:
                        outcome = ray.get(ref)
                    except ray.exceptions.RayError:
                        continue
                    if outcome.status == "done":
                        done(outcome)
            raise
        finally:
            ray.shutdown()

    def _outcome(self, ray, ref, task: SceneTask) -> Outcome:
        try:
            return ray.get(ref)
        except ray.exceptions.TaskCancelledError:
            raise KeyboardInterrupt from None
        except ray.exceptions.RayTaskError as e:  # raised out of the task (not InputError/Exception: caught there)
            return Outcome(task.scene_id, "failed", 1, 0.0, "", failure=Failure(ERROR, None, str(e).strip()))
        except ray.exceptions.RayError as e:  # worker or node lost, retries used up
            return lost(task, self.retries + 1, f"{type(e).__name__}: {str(e).strip().splitlines()[0]}")
