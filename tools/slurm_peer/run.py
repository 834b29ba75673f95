"""Compare tide's `slurm` policy with the real Slurm 22.05 on one slurm.conf and workload.

  sudo .venv/bin/python tools/slurm_peer/run.py --out out/slurm-peer          # ~4-5 min
  .venv/bin/python tools/slurm_peer/run.py --out out/slurm-peer --reuse       # twin only

1. starts the peer with ../shared/peers/slurm/start.sh (own folder and ports),
2. submits the deterministic workload of workload.py at its offsets and waits for it,
3. collects per-job submit/start/end/nodes with the peer's parse_jobs.py, the generated
   slurm.conf/gres.conf/topology.conf plus `sacctmgr dump` and slurmctld's log,
4. writes the same jobs as tide JSONL (submit offsets, actual durations) and runs
   `tide sim run --policy slurm --slurm-conf OUT/conf`,
5. prints the job-by-job table and the summary (also OUT/comparison.txt and .json),
and stops the peer with stop.sh (unless --keep). docs/slurm-peer.md explains the result.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from slurm_peer import compare, slurmlog, twin
from slurm_peer.peer import Peer
from slurm_peer.workload import build


def _args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("out/slurm-peer"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=32)
    ap.add_argument(
        "--accounts",
        default="teama",
        help="comma list used round-robin (default one account: fair-share neutral)",
    )
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--peer-dir", type=Path, default=Path("/tmp/slurm-peer-tide"))
    ap.add_argument(
        "--port-shift",
        type=int,
        default=10000,
        help="added to start.sh's default ports (0 = the defaults)",
    )
    ap.add_argument("--keep", action="store_true", help="leave the peer running")
    ap.add_argument(
        "--reuse",
        action="store_true",
        help="skip Slurm: compare the twin with the Slurm data already in --out",
    )
    ap.add_argument(
        "--times",
        choices=("sacct", "log"),
        default="sacct",
        help="Slurm times: sacct (1 s, parse_jobs.py) or slurmctld's log (ms)",
    )
    ap.add_argument(
        "--debug-flags",
        default="",
        help="slurmctld DebugFlags to switch on, e.g. Backfill,BackfillMap (explains plans)",
    )
    ap.add_argument("--twin-args", default="", help="extra `tide sim run` options")
    ap.add_argument("--tag", default="", help="suffix for twin/ and comparison.* (variants)")
    ap.add_argument(
        "--against",
        type=Path,
        default=None,
        help="compare with another saved Slurm run instead of the twin (noise floor)",
    )
    return ap.parse_args(argv)


def run_peer(a: argparse.Namespace) -> None:
    accounts = tuple(x for x in a.accounts.split(",") if x)
    jobs = build(seed=a.seed, jobs=a.jobs, accounts=accounts)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "workload.json").write_text(json.dumps([asdict(j) for j in jobs], indent=1))
    peer = Peer(folder=a.peer_dir, nodes=a.nodes, port_shift=a.port_shift)
    try:
        peer.start()
        peer.set_debug_flags(a.debug_flags)
        manifest = a.out / "manifest.csv"
        t = time.monotonic()
        peer.submit(jobs, manifest)
        with (a.out / "sprio.txt").open("w") as f:  # Slurm's priorities as they were
            peer.wait_drained(poll=1.0, each=lambda: f.write(
                f"# t={time.time():.1f}\n{peer.snapshot_priorities()}"))  # fmt: skip
        peer.log.append(f"workload ran {time.monotonic() - t:.0f} s")
        peer.collect(a.out, manifest)
    finally:
        if not a.keep:
            peer.stop()
    for line in peer.log:
        print(f"[slurm-peer] {line}", file=sys.stderr)


def compare_with_twin(a: argparse.Namespace) -> dict[str, object]:
    records = twin.read_slurm(a.out / "slurm_jobs.csv", a.out / "manifest.csv")
    log_path = a.out / "slurmctld.log"
    log = slurmlog.read_log(log_path) if log_path.exists() else {}
    if a.times == "log":
        records = twin.with_log_times(records, log)
    workload = a.out / "twin.jsonl"
    twin.write_jsonl(records, workload)
    conf = a.out / "conf"
    init = {j: lj.init_prio for j, lj in log.items() if lj.init_prio is not None}
    if a.against is not None:
        other = twin.read_slurm(a.against / "slurm_jobs.csv", a.against / "manifest.csv")
        result = twin.as_twin(other, by_name_of=records)
        tide_prio = None
    else:
        extra = a.twin_args.split() if a.twin_args else []
        result = twin.read_twin(twin.run_twin(conf, workload, a.out / f"twin{a.tag}", extra))
        tide_prio = twin.priorities_at_submit(conf, workload)
    rows = compare.build_rows(records, result, twin.origin(records), init, tide_prio)
    summary = compare.summarize(rows)
    text = compare.format_table(rows) + "\n\n" + compare.format_summary(summary) + "\n"
    (a.out / f"comparison{a.tag}.txt").write_text(text)
    (a.out / f"comparison{a.tag}.json").write_text(
        json.dumps(compare.as_json(rows, summary), indent=1, default=str)
    )
    print(text)
    return summary


def main(argv: list[str] | None = None) -> int:
    a = _args(argv)
    if not a.reuse:
        run_peer(a)
    elif not (a.out / "slurm_jobs.csv").exists():
        print(f"--reuse: no {a.out}/slurm_jobs.csv; run once without --reuse (as root)",
              file=sys.stderr)  # fmt: skip
        return 2
    compare_with_twin(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
