"""Drive the real Slurm 22.05 peer (../shared/peers/slurm): start, submit, wait, collect, stop.

The shared scripts are used as they are (start.sh, stop.sh, parse_jobs.py); this module only
sets their environment knobs. By default the peer lives in its own folder and on ports 10000
above start.sh's defaults, so that it does not collide with a peer someone else runs from the
same scripts. Needs root (start.sh apt-installs packages and starts the daemons).
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from slurm_peer.workload import PeerJob

SCRIPTS = Path(os.environ.get("SLURM_PEER_SCRIPTS", "/work/shared/peers/slurm"))
CONF_FILES = ("slurm.conf", "gres.conf", "topology.conf")
DUMP_FILE = "sacctmgr.dump"  # the name tide's loader looks for first


@dataclass
class Peer:
    folder: Path = Path("/tmp/slurm-peer-tide")
    nodes: int = 16
    nodes_per_leaf: int = 4
    leaves_per_spine: int = 2
    accounting: bool = True
    port_shift: int = 10000
    log: list[str] = field(default_factory=list)

    # -- environment ---------------------------------------------------------

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        s = self.port_shift
        env.update(
            SLURM_PEER_DIR=str(self.folder),
            SLURM_CONF=str(self.folder / "etc" / "slurm.conf"),
            NODES=str(self.nodes),
            NODES_PER_LEAF=str(self.nodes_per_leaf),
            LEAVES_PER_SPINE=str(self.leaves_per_spine),
            ACCOUNTING="1" if self.accounting else "0",
            TOPOLOGY="tree",
            PORT_BASE=str(17000 + s),
            CTLD_PORT=str(16817 + s),
            DBD_PORT=str(16819 + s),
            DB_PORT=str(13306 + s),
        )
        return env

    def _run(self, args: list[str], check: bool = True, **kw: object) -> str:
        out = subprocess.run(
            args,
            env=self.env(),
            capture_output=True,
            text=True,
            check=False,
            **kw,  # type: ignore[call-overload]
        )
        if check and out.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} exited {out.returncode}: {out.stderr.strip()}")
        return str(out.stdout)

    # -- lifecycle -----------------------------------------------------------

    def start(self) -> None:
        t = time.monotonic()
        self._run(["bash", str(SCRIPTS / "start.sh")])
        self.log.append(f"peer up in {time.monotonic() - t:.1f} s ({self.folder})")

    def set_debug_flags(self, flags: str) -> None:
        """`scontrol setdebugflags +F` at run time (slurm.conf stays as start.sh wrote it).
        Backfill,BackfillMap log every backfill plan; the extra logging costs slurmctld
        a little time, so measured runs leave it off."""
        for flag in (f for f in flags.split(",") if f):
            self._run(["scontrol", "setdebugflags", f"+{flag}"])

    def stop(self) -> None:
        self._run(["bash", str(SCRIPTS / "stop.sh")], check=False)

    # -- workload ------------------------------------------------------------

    def submit(self, jobs: list[PeerJob], manifest: Path) -> list[dict[str, object]]:
        """Submit each job at its offset. The first submission is aligned just after a
        whole second, so that offsets in whole seconds are what Slurm records."""
        out_dir = self.folder / "out"
        out_dir.mkdir(parents=True, exist_ok=True)
        t0 = float(int(time.time()) + 2) + 0.05
        rows: list[dict[str, object]] = []
        for job in jobs:
            delay = t0 + job.submit - time.time()
            if delay > 0:
                time.sleep(delay)
            args = ["sbatch", "--parsable", "-J", job.name, "-o", str(out_dir / "%j.out")]
            args += job.sbatch_options()
            args += ["--wrap", f"sleep {job.sleep}"]
            job_id = self._run(args).strip().split(";")[0]
            rows.append(
                dict(job_id=job_id, name=job.name, gpus=job.gpus, nodes=job.nodes,
                     duration_s=job.sleep, time_limit_min=job.limit_min, account=job.account,
                     partition="gpu", submit_wall=round(time.time(), 3), index=job.index,
                     offset=job.submit, sbatch=" ".join(job.sbatch_options()))
            )  # fmt: skip
        with manifest.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        late = max(float(str(r["submit_wall"])) - t0 - int(str(r["offset"])) for r in rows)
        self.log.append(f"submitted {len(rows)} jobs; worst lateness vs plan {late:.2f} s")
        return rows

    def wait_drained(
        self, timeout: float = 1800.0, poll: float = 1.0, each: Callable[[], object] | None = None
    ) -> float:
        """Wait until squeue is empty; `each` runs at every poll (e.g. an sprio sample)."""
        t = time.monotonic()
        while time.monotonic() - t < timeout:
            if not self._run(["squeue", "-h", "-o", "%i"]).strip():
                time.sleep(2.0)  # slurmdbd writes the last end records asynchronously
                return time.monotonic() - t
            if each is not None:
                each()
            time.sleep(poll)
        raise TimeoutError(f"queue still busy after {timeout:.0f} s")

    def snapshot_priorities(self) -> str:
        """`sprio` of the pending jobs (what Slurm's last priority calculation gave)."""
        return self._run(["sprio", "-h", "-o", "%i %Y %A %F %J %P %T"], check=False)

    # -- results -------------------------------------------------------------

    def collect(self, out: Path, manifest: Path) -> Path:
        """jobs.csv via the shared parse_jobs.py, plus the configuration (and the account
        dump) that tide reads, and slurmctld's log (millisecond times, InitPrio)."""
        jobs_csv = out / "slurm_jobs.csv"
        summary = self._run(
            [sys.executable, str(SCRIPTS / "parse_jobs.py"), "--manifest", str(manifest),
             "--out", str(jobs_csv)]
        )  # fmt: skip
        (out / "slurm_summary.txt").write_text(summary)
        conf = out / "conf"
        conf.mkdir(parents=True, exist_ok=True)
        for name in CONF_FILES:
            shutil.copy(self.folder / "etc" / name, conf / name)
        if self.accounting:
            self._run(["sacctmgr", "-i", "dump", "peer", f"file={conf / DUMP_FILE}"])
        shutil.copy(self.folder / "log" / "slurmctld.log", out / "slurmctld.log")
        return jobs_csv
