"""Where the server is and which token to use.

URL:   TIDE_URL, else http://127.0.0.1:6817 (the local server's default).
Token: TIDE_TOKEN; else the file named by TIDE_TOKEN_FILE; else
       $TIDE_DATA_DIR/admin.token; else ~/.tide/admin.token (the token the
       local server writes on first start, readable by its owner only);
       else ~/.tide/token (a personal token saved by `tide admin token create --save`).
"""

from __future__ import annotations

import os
from pathlib import Path

from tide.server.settings import DEFAULT_URL, TOKEN_FILE


def server_url() -> str:
    return os.environ.get("TIDE_URL", "").rstrip("/") or DEFAULT_URL


def token_candidates() -> list[Path]:
    out: list[Path] = []
    if os.environ.get("TIDE_TOKEN_FILE"):
        out.append(Path(os.environ["TIDE_TOKEN_FILE"]).expanduser())
    if os.environ.get("TIDE_DATA_DIR"):
        out.append(Path(os.environ["TIDE_DATA_DIR"]).expanduser() / TOKEN_FILE)
    home = Path.home() / ".tide"
    out += [home / TOKEN_FILE, home / "token"]
    return out


def find_token() -> tuple[str, str]:
    """(token, where it came from); ("", "") when there is none."""
    if os.environ.get("TIDE_TOKEN"):
        return os.environ["TIDE_TOKEN"].strip(), "TIDE_TOKEN"
    for path in token_candidates():
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text:
            return text, str(path)
    return "", ""
