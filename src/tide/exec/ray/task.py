"""`python -m tide.exec.ray.task --address A [--ray-env K=V] NODE CORES -- PROGRAM...`

srun's stand-in for a task on another Ray node (the srun hook in
tide.exec.srun: config.json "remote_launcher"). It runs where srun runs, with
the task's environment, and asks the node agent `tide-node-NODE` to start the
real task there. Then, like slurmstepd's link back to srun, it:

- copies the task's stdout and stderr to its own (so srun's -l labels and
  -o/-e files work unchanged),
- forwards the signals srun and the supervisor send it (HUP INT QUIT TERM
  USR1 USR2 CONT ALRM),
- ends as the task ended: the same exit code, or killed by the same signal.

If the node or its agent is lost, it says so on stderr and exits 1, which
fails the step as a failed task does.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from collections.abc import Sequence

from tide.exec.ray import NAMESPACE, agent_name, require_ray

POLL_WAIT = 0.5  # seconds one question to the agent may wait for output
_REAL_ERR = [2]  # the job's stderr (fd), once _quiet_ray has silenced Ray
_PENDING: list[int] = []  # signals received, not yet forwarded

_FORWARDED = (
    signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM,
    signal.SIGUSR1, signal.SIGUSR2, signal.SIGCONT, signal.SIGALRM,
)  # fmt: skip


def _catch_signals() -> None:
    """From the first moment: a signal that comes while Ray connects (a second
    or more) is kept and forwarded once the task runs, never fatal to us."""
    for sig in _FORWARDED:
        signal.signal(sig, lambda s, _f: _PENDING.append(s))


def _parse(argv: Sequence[str]) -> tuple[str, str, str, list[int], list[str]]:
    """(address, namespace, node, cores, command)."""
    args = list(argv)
    opts = {"--address": "auto", "--namespace": NAMESPACE}
    while args and (args[0] in opts or args[0] == "--ray-env"):
        if len(args) < 2:
            raise ValueError(f"{args[0]} needs a value")
        if args[0] == "--ray-env":  # before ray is imported: it reads them at import
            name, _, value = args[1].partition("=")
            os.environ[name] = value
        else:
            opts[args[0]] = args[1]
        del args[:2]
    if len(args) < 4 or args[2] != "--":
        raise ValueError("usage: python -m tide.exec.ray.task [--address A] NODE CORES -- PROGRAM")
    cores = [int(c) for c in args[1].split(",") if c.strip()]
    return opts["--address"], opts["--namespace"], args[0], cores, args[3:]


def _quiet_ray() -> tuple[int, int]:
    """Ray writes its own notices (a raylet's death, reconnects) to fds 1 and 2
    and to sys.stdout/sys.stderr, which are the job's output: point all of
    them at /dev/null and return copies of the real fds, for the task's output
    and our own messages (_say)."""
    real = os.dup(1), os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    _REAL_ERR[0] = real[1]
    return real


def _say(message: str) -> None:
    """A line on the job's stderr, even after _quiet_ray."""
    os.write(_REAL_ERR[0], f"{message}\n".encode())


def _connect(address: str, namespace: str) -> object:
    ray = require_ray()
    # Quiet: anything printed here lands in the job's output.
    ray.init(
        address=address,
        namespace=namespace,
        log_to_driver=False,
        logging_level=logging.ERROR,
        configure_logging=True,
        include_dashboard=False,
    )
    return ray


def _end_as(code: int) -> int:
    """Exit like the task: its code, or death by its signal."""
    sys.stdout.flush()
    sys.stderr.flush()
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        return 128 - code  # a signal whose default is not to end the process
    return code


def relay(
    ray: object, node: str, cores: list[int], command: list[str], fds: tuple[int, int] = (1, 2)
) -> int:
    env = dict(os.environ)
    key = f"{env.get('SLURM_JOB_ID', '0')}.{env.get('SLURM_STEP_ID', '0')}."
    key += f"{env.get('SLURM_PROCID', '0')}.{os.getpid()}"
    agent = ray.get_actor(agent_name(node), namespace=ray.get_runtime_context().namespace)  # type: ignore[attr-defined]
    ray.get(agent.start_task.remote(key, command, env, os.getcwd(), cores))  # type: ignore[attr-defined]
    out_at = err_at = 0
    while True:
        while _PENDING:
            ray.get(agent.task_signal.remote(key, _PENDING.pop(0)))  # type: ignore[attr-defined]
        out, err, code = ray.get(agent.task_poll.remote(key, out_at, err_at, POLL_WAIT))  # type: ignore[attr-defined]
        if out:
            os.write(fds[0], out)
            out_at += len(out)
        if err:
            os.write(fds[1], err)
            err_at += len(err)
        if code is not None:
            return _end_as(code)


def main(argv: Sequence[str] | None = None) -> int:
    _catch_signals()
    try:
        address, namespace, node, cores, command = _parse(sys.argv[1:] if argv is None else argv)
    except ValueError as e:
        print(f"srun: error: tide.exec.ray.task: {e}", file=sys.stderr)
        return 2
    fds = _quiet_ray()
    try:
        ray = _connect(address, namespace)
    except Exception as e:  # a relay without Ray cannot start the task; say why
        _say(f"srun: error: {node}: cannot reach the Ray cluster at {address}: {e}")
        return 1
    try:
        return relay(ray, node, cores, command, fds)
    except ValueError:  # get_actor: no such actor
        _say(f"srun: error: {node}: no tide node agent ({agent_name(node)}) in the Ray cluster")
    except Exception as e:  # RayActorError and kin: the node went away mid-task
        first = (str(e).splitlines() or [""])[0][:200]
        _say(f"srun: error: {node}: lost the task ({type(e).__name__}: {first})")
    return 1


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # skip Ray's atexit shutdown: the task has ended, nothing to keep
