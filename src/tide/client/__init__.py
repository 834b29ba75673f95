"""HTTP client of the tide server (used by the CLI; usable from scripts)."""

from tide.client.http import Client, ClientError, connect

__all__ = ["Client", "ClientError", "connect"]
