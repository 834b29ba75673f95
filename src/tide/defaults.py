"""Where a tide server listens and keeps its token by default (server and client
both read these; this module imports nothing, so the CLI starts fast)."""

DEFAULT_PORT = 6817  # slurmctld's port: the habit carries over
DEFAULT_URL = f"http://127.0.0.1:{DEFAULT_PORT}"
TOKEN_FILE = "admin.token"
# A job's time limit "no limit" (Slurm's INFINITE: --time=0, UNLIMITED, INFINITE or
# -1), as stored and sent: the largest value the store's INTEGER columns hold. It
# is longer than any partition's MaxTime, so such a job pends (PartitionTimeLimit)
# in a partition with one, and runs with no limit in a partition without.
TIME_INFINITE = 2**31 - 1
