"""Where a tide server listens and keeps its token by default (server and client
both read these; this module imports nothing, so the CLI starts fast)."""

DEFAULT_PORT = 6817  # slurmctld's port: the habit carries over
DEFAULT_URL = f"http://127.0.0.1:{DEFAULT_PORT}"
TOKEN_FILE = "admin.token"
