"""RayExecutor: tide's placements carried out on the nodes of a Ray cluster.

tide decides; Ray only runs. Every tide node is a Ray node, and on each one
tide keeps a node agent (tide.exec.ray.agent): a detached, named actor
(`tide-node-<name>` in namespace "tide") pinned there with hard node affinity
(NodeAffinitySchedulingStrategy(soft=False)), so Ray never picks where
anything of a job runs. A job's batch script runs under tide's own supervisor
on its first node's agent; its srun reaches the other nodes' agents through
tide.exec.ray.task. Ray supplies membership and health (ray.nodes()), process
placement and the calls between them.

A Ray node that dies is a node failure: its jobs are ended (the survivors'
processes killed) and reported with reason "node_fail" and that node. The
server marks the node DOWN first (node_changes), so --requeue jobs requeue.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import tempfile
import threading
import time
from dataclasses import replace
from typing import Any

from tide.exec import jobdir
from tide.exec.base import Executor, ExitReport, LaunchSpec, PartlyUnknown
from tide.exec.ray import NAMESPACE, agent_name, require_ray
from tide.exec.ray.cluster import RayNode, node_names, ray_nodes

log = logging.getLogger("tide.exec.ray")
HEALTH_EVERY = 1.0  # seconds between looks at Ray's node table from poll()
# A failed job one of whose agents no longer answers waits this long for Ray to
# declare that node dead (its health check: ~10-30 s with Ray's defaults), so
# it ends as a node failure, not as the task error the lost node caused.
HOLD_MAX = 60.0
SWEEP_EVERY = 10.0  # seconds between polls of every agent, not only batch nodes'


def connect(address: str = "", namespace: str = NAMESPACE) -> Any:
    """Join the Ray cluster at `address` as a driver (once per process); returns ray."""
    ray = require_ray()
    if ray.is_initialized():
        return ray
    _reachable(address)
    try:
        ray.init(
            address=address or "auto",
            namespace=namespace,
            log_to_driver=False,
            logging_level=logging.WARNING,
            include_dashboard=False,
        )
    except Exception as e:  # ConnectionError and Ray's own kinds
        raise RuntimeError(
            f"cannot join the Ray cluster at {address or 'auto'!r}: {e}; start one with "
            "`ray start --head` and pass its address (HOST:6379) as --ray-address"
        ) from None
    return ray


def _reachable(address: str) -> None:
    """Fail in seconds, with the fix, when nothing listens at HOST:PORT (ray.init
    would retry for minutes, printing C++ warnings)."""
    host, colon, port = address.rpartition(":")
    if not colon or not port.isdigit() or "://" in address:
        return  # "auto" and ray:// addresses: ray.init says what is wrong
    try:
        socket.create_connection((host, int(port)), timeout=10).close()
    except OSError as e:
        raise RuntimeError(
            f"cannot join the Ray cluster at {address!r}: nothing answers there "
            f"({e.strerror or e}); start its head with `ray start --head --port {port}` "
            "or fix --ray-address"
        ) from None


def default_state_root(nodes: list[RayNode] | None = None, namespace: str = NAMESPACE) -> str:
    """Where agents keep job directories on their node (local disk): one
    folder per Ray cluster (its head node's id, new at each start) and tide
    namespace. Shared by two clusters on one machine (CI's parallel test
    workers), job ids collided in it: one controller collected the other's
    ends and its own jobs stayed COMPLETING; a restarted cluster's agents
    offered the ends of a dead cluster's jobs."""
    base = os.path.join(tempfile.gettempdir(), f"tide-ray-{os.getuid()}")
    heads = sorted(n.node_id for n in nodes or () if "node:__internal_head__" in n.resources)
    cluster = heads[0][:16] if heads else "cluster"
    return os.path.join(base, f"{namespace}-{cluster}")


class RayExecutor(Executor):
    """Run jobs on the nodes of the Ray cluster at `address` ("auto", "HOST:6379").

    state_root: per-node job directories, `<state_root>/<node>/jobs/<id>`, on
        each node's own disk.
    checkpoint_root: `<checkpoint_root>/<job id>` is every job's checkpoint
        directory; on a real cluster it must be shared by the nodes, since a
        requeued job may restart elsewhere ("" = on the batch node's disk).
    auto_health: poll() looks at Ray's node table itself; the server turns it
        off and calls node_changes() first, so it can mark nodes DOWN before
        their jobs' ends are collected.
    """

    def __init__(
        self,
        address: str = "auto",
        *,
        state_root: str = "",
        checkpoint_root: str = "",
        kill_wait: float = 30.0,
        step_grace: float = 3.0,
        cluster_name: str = "tide",
        namespace: str = NAMESPACE,
        auto_health: bool = True,
    ) -> None:
        self.ray = require_ray()
        self.address = address or "auto"
        self.namespace = namespace
        self._connect()
        self.state_root = state_root or default_state_root(ray_nodes(self.ray), namespace)
        self.checkpoint_root = checkpoint_root
        self.local_opts = dict(
            kill_wait=kill_wait, step_grace=step_grace, cluster_name=cluster_name
        )
        self.kill_wait = kill_wait
        self.auto_health = auto_health
        self._lock = threading.RLock()
        self._agents: dict[str, Any] = {}
        self._nodes: dict[str, RayNode] = {}
        self._alive: set[str] = set()
        self._checked = 0.0
        self._swept = 0.0
        self._jobs: dict[int, list[str]] = {}  # job -> its nodes, batch node first
        self._failed: dict[int, str] = {}  # job -> the dead node that ended it
        self._records: dict[int, jobdir.ExitRecord] = {}
        self._held: dict[int, tuple[ExitReport, dict[str, Any] | None, str, float]] = {}
        self._cancelling: set[int] = set()  # jobs this executor was asked to end
        self._refresh()
        self._adopt()

    def _connect(self) -> None:
        connect(self.address, self.namespace)

    # -- nodes --------------------------------------------------------------

    def _refresh(self) -> tuple[list[str], list[str]]:
        """Re-read Ray's node table: (names that died, names that (re)joined)."""
        nodes = node_names(ray_nodes(self.ray))
        alive = {n for n, rn in nodes.items() if rn.alive}
        with self._lock:
            died = sorted(self._alive - alive)
            joined = sorted(alive - self._alive)
            for name in died + joined:  # a new Ray node needs a new agent
                self._agents.pop(name, None)
            self._nodes, self._alive = nodes, alive
            self._checked = time.monotonic()
        for name in died:
            self._node_died(name)
        return died, joined

    def node_changes(self) -> tuple[list[str], list[str]]:
        """(nodes that died, nodes that joined) since the last look."""
        return self._refresh()

    def alive_nodes(self) -> set[str]:
        with self._lock:
            return set(self._alive)

    def ray_node_table(self) -> dict[str, RayNode]:
        """tide name -> its Ray node, as of the last look (dead ones too)."""
        with self._lock:
            return dict(self._nodes)

    def _node_died(self, name: str) -> None:
        """End every job that had `name`: its agent is gone with the node."""
        with self._lock:
            hit = [j for j, nodes in self._jobs.items() if name in nodes]
            for job_id in hit:
                self._failed.setdefault(job_id, name)
        for job_id in hit:
            log.warning("Ray node %s died: ending job %s", name, job_id)
            self._end_job(job_id, grace=0.0)

    def agent(self, name: str) -> Any:
        """The node agent of tide node `name`, started on first use."""
        with self._lock:
            if name in self._agents:
                return self._agents[name]
            rn = self._nodes.get(name)
            if rn is None or not rn.alive:
                raise RuntimeError(f"node {name} is not a live node of the Ray cluster")
        from tide.exec.ray.agent import NodeAgent

        strategy = self.ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(
            node_id=rn.node_id, soft=False
        )
        relay_args = ["--address", self._gcs_address(), "--namespace", self.namespace]
        handle = (
            self.ray.remote(NodeAgent)
            .options(
                name=agent_name(name),
                namespace=self.namespace,
                lifetime="detached",  # jobs outlive the controller
                get_if_exists=True,
                scheduling_strategy=strategy,
                num_cpus=0,  # tide's allocations own the node's CPUs, not the agent
                max_concurrency=64,  # task relays wait in task_poll
            )
            .remote(name, os.path.join(self.state_root, name), relay_args, **self.local_opts)
        )
        with self._lock:
            self._agents[name] = handle
        return handle

    def _gcs_address(self) -> str:
        return str(self.ray.get_runtime_context().gcs_address)

    def _adopt(self) -> None:
        """After a controller restart: the jobs that live agents still run."""
        for name in sorted(self._alive):
            try:
                running = self.ray.get(self.agent(name).jobs.remote(), timeout=60)
            except Exception as e:  # its jobs are found by the periodic sweep of all nodes
                log.warning("node %s's agent did not list its jobs: %s", name, e)
                continue
            with self._lock:
                for job_id, nodes in running.items():
                    self._jobs.setdefault(int(job_id), list(nodes) or [name])

    # -- Executor -----------------------------------------------------------

    def launch(self, spec: LaunchSpec) -> None:
        if not spec.nodes:
            raise ValueError(f"job {spec.job_id}: LaunchSpec.nodes is empty; give it one node")
        names = [n.node for n in spec.nodes]
        dead = [n for n in names if n not in self.alive_nodes()]
        if dead:
            raise RuntimeError(f"job {spec.job_id}: node(s) {', '.join(dead)} not alive in Ray")
        if not spec.checkpoint_dir and self.checkpoint_root:
            spec = replace(
                spec, checkpoint_dir=os.path.join(self.checkpoint_root, str(spec.job_id))
            )
        agents = [self.agent(n) for n in dict.fromkeys(names)]  # every node's agent is up
        self.ray.get([a.info.remote() for a in agents[1:]], timeout=120)
        self.ray.get(agents[0].launch.remote(jobdir.spec_to_json(spec)), timeout=120)
        with self._lock:
            self._jobs[spec.job_id] = names
            self._failed.pop(spec.job_id, None)
            self._records.pop(spec.job_id, None)
            self._cancelling.discard(spec.job_id)

    def _batch_agent(self, job_id: int) -> Any | None:
        with self._lock:
            nodes = self._jobs.get(job_id)
            if not nodes or nodes[0] not in self._alive:
                return None
        return self.agent(nodes[0])

    def signal(self, job_id: int, sig: int) -> None:
        a = self._batch_agent(job_id)
        if a is not None:
            self.ray.get(a.signal.remote(job_id, int(sig)), timeout=60)

    def cancel(self, job_id: int, grace: float = 30.0) -> None:
        with self._lock:
            self._cancelling.add(job_id)
        self._end_job(job_id, grace)

    def _end_job(self, job_id: int, grace: float) -> None:
        a = self._batch_agent(job_id)
        if a is None:
            return  # its batch node is dead: poll() reports the job
        try:
            self.ray.get(a.cancel.remote(job_id, float(grace)), timeout=60)
        except Exception:
            log.warning("cannot cancel job %s on its batch node", job_id, exc_info=True)

    def poll(self) -> list[ExitReport]:
        if self.auto_health and time.monotonic() - self._checked >= HEALTH_EVERY:
            self._refresh()
        reports: list[ExitReport] = []
        for name, ended in self._ask_agents():
            for fields, rec in ended:
                report = ExitReport(**fields)
                with self._lock:  # ended while no controller watched: forget() finds it
                    nodes = self._jobs.setdefault(report.job_id, [name])
                if nodes[0] != name:  # an earlier run's end, on the node it ran on then
                    self._drop_stale_end(name, report.job_id)
                    continue
                lost = self._lost_node(report)
                if lost:
                    with self._lock:
                        self._held[report.job_id] = (report, rec, lost, time.monotonic())
                else:
                    reports.append(self._ended(report, rec))
        reports += self._release_held()
        reports += self._orphans()
        return reports

    def _drop_stale_end(self, name: str, job_id: int) -> None:
        """A job requeued elsewhere: its old node's agent still offers the
        earlier run's end (its forget was lost); taken in, it would end the
        new run."""
        log.info("job %s: dropping an earlier run's end from %s", job_id, name)
        with contextlib.suppress(Exception):  # else offered again, and dropped again
            self.ray.get(self.agent(name).forget.remote(job_id), timeout=10)

    def _ask_agents(self) -> list[tuple[str, list[Any]]]:
        """(node, ends) from the batch nodes of known jobs, and every
        SWEEP_EVERY s from all nodes (ends of jobs started before a restart);
        the questions go out at once, so a slow node delays only itself. An
        agent offers each end until forget() says the store has it."""
        now = time.monotonic()
        with self._lock:
            names = {nodes[0] for nodes in self._jobs.values()} & self._alive
            if now - self._swept >= SWEEP_EVERY:
                names, self._swept = set(self._alive), now
        refs = []
        for name in sorted(names):
            try:
                refs.append((name, self.agent(name).poll.remote()))
            except Exception:
                continue
        out = []
        for name, ref in refs:
            try:
                out.append((name, self.ray.get(ref, timeout=10)))
            except Exception:  # died since the last look: the next refresh says so
                continue
        return out

    def _lost_node(self, report: ExitReport) -> str:
        """A node of a failed job whose agent does not answer (its Ray node is
        probably dying: its task relay failed first), or ""."""
        with self._lock:
            nodes = list(self._jobs.get(report.job_id, []))[1:]
            if report.job_id in self._failed or (report.exit_code == 0 and not report.signal):
                return ""
            if report.job_id in self._cancelling:
                return ""  # ended because it was asked to: no node to suspect
        for name in dict.fromkeys(nodes):
            try:
                self.ray.get(self.agent(name).info.remote(), timeout=5)
            except Exception:
                return name
        return ""

    def _release_held(self) -> list[ExitReport]:
        """Held ends whose node Ray has now declared dead (node_fail), or that
        waited HOLD_MAX (the agent died without its node: node_fail too)."""
        out = []
        with self._lock:
            held = list(self._held.items())
        for job_id, (report, rec, lost, since) in held:
            if lost in self.alive_nodes() and time.monotonic() - since < HOLD_MAX:
                continue
            with self._lock:
                del self._held[job_id]
                self._failed.setdefault(job_id, lost)
                self._agents.pop(lost, None)  # a new agent next time, if the node lives
            out.append(self._ended(report, rec))
        return out

    def _ended(self, report: ExitReport, rec: dict[str, Any] | None) -> ExitReport:
        """A job's end from its batch node: tear down its other nodes' tasks."""
        job_id = report.job_id
        with self._lock:
            nodes = list(self._jobs.get(job_id, []))
            failed = self._failed.get(job_id)
        for name in nodes[1:]:
            if name in self.alive_nodes():
                try:
                    self.ray.get(self.agent(name).end_tasks.remote(job_id), timeout=60)
                except Exception:
                    log.warning("cannot end job %s's tasks on %s", job_id, name, exc_info=True)
        record = jobdir.ExitRecord.from_json(rec) if rec is not None else None
        if failed:
            report = replace(report, reason="node_fail", node=failed)
            if record is not None:
                record.reason, record.node = "node_fail", failed
                record.message = f"Ray node {failed} died"
                # The end is when tide learned of the failure (Slurm's NODE_FAIL
                # time): a held end would otherwise predate the node's DOWN.
                record.ended = max(record.ended or 0.0, time.time())
        if record is not None:
            with self._lock:
                self._records[job_id] = record
        return report

    def _orphans(self) -> list[ExitReport]:
        """Jobs whose batch node died: nobody else will report them."""
        with self._lock:
            doomed = [
                (j, nodes)
                for j, nodes in self._jobs.items()
                if nodes[0] not in self._alive and j not in self._records
            ]
        out = []
        for job_id, nodes in doomed:
            now = time.time()
            failed = self._failed.get(job_id, nodes[0])
            record = jobdir.ExitRecord(
                job_id, 0, 9, "node_fail", failed, ended=now, message=f"Ray node {failed} died"
            )
            with self._lock:
                self._records[job_id] = record
            self._ended(record.to_report(), None)
            out.append(record.to_report())
        return out

    def running(self) -> set[int]:
        """Every live node's running jobs; raises PartlyUnknown (with the
        rest) when a live node's agent does not answer twice: a node skipped
        here made a restarted controller fail its jobs and run them again."""
        live: set[int] = set()
        unknown = []
        for name in sorted(self.alive_nodes()):
            for attempt in (1, 2):
                try:
                    live.update(self.ray.get(self.agent(name).running.remote(), timeout=30))
                    break
                except Exception as e:
                    log.warning(
                        "node %s's agent did not say what runs (try %d): %s", name, attempt, e
                    )
                    with self._lock:
                        self._agents.pop(name, None)  # a new handle next time
            else:
                unknown.append(name)
        if unknown:
            raise PartlyUnknown(live, unknown)
        return live

    def exit_record(self, job_id: int) -> jobdir.ExitRecord | None:
        with self._lock:
            return self._records.get(job_id)

    def forget(self, job_id: int) -> None:
        """The store has the job's end: its batch node's agent stops offering it."""
        with self._lock:
            nodes = self._jobs.pop(job_id, [])
            self._failed.pop(job_id, None)
            self._records.pop(job_id, None)
            self._held.pop(job_id, None)
            self._cancelling.discard(job_id)
        if nodes and nodes[0] in self.alive_nodes():
            self.ray.get(self.agent(nodes[0]).forget.remote(job_id), timeout=60)

    def node_failed(self, job_id: int, node: str, message: str = "") -> None:
        """The controller says the job lost `node`: end it, reason node_fail."""
        with self._lock:
            self._failed.setdefault(job_id, node)
        self._end_job(job_id, grace=0.0)

    def steps(self, job_id: int) -> list[dict[str, Any]]:
        """The job's srun step records (kept on its batch node)."""
        a = self._batch_agent(job_id)
        try:
            return [] if a is None else list(self.ray.get(a.steps.remote(job_id), timeout=10))
        except Exception:  # the node is going: its failure is reported elsewhere
            return []

    def shutdown_agents(self) -> None:
        """Kill every agent and what it runs (tests; jobs do not survive this)."""
        for name in sorted(self.alive_nodes()):
            try:
                a = self.agent(name)
                self.ray.get(a.shutdown.remote(), timeout=60)
                self.ray.kill(a)
            except Exception:
                continue
        with self._lock:
            self._agents.clear()

    def close(self) -> None:
        """Jobs keep running under their agents; only this driver lets go."""
