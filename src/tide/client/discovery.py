"""Where the server is and which token to use.

URL:   TIDE_URL, else http://127.0.0.1:6817 (the local server's default).
Token: TIDE_TOKEN; else the file named by TIDE_TOKEN_FILE; else
       $TIDE_DATA_DIR/admin.token; else ~/.tide/admin.token (the token the
       local server writes on first start, readable by its owner only);
       else ~/.tide/token (a personal token saved by `tide admin token create --save`).
"""

from __future__ import annotations

import os

from tide.defaults import DEFAULT_URL, TOKEN_FILE


def server_url() -> str:
    return os.environ.get("TIDE_URL", "").rstrip("/") or DEFAULT_URL


def token_candidates() -> list[str]:
    out: list[str] = []
    if os.environ.get("TIDE_TOKEN_FILE"):
        out.append(os.path.expanduser(os.environ["TIDE_TOKEN_FILE"]))
    if os.environ.get("TIDE_DATA_DIR"):
        out.append(os.path.join(os.path.expanduser(os.environ["TIDE_DATA_DIR"]), TOKEN_FILE))
    home = os.path.join(os.path.expanduser("~"), ".tide")
    out += [os.path.join(home, TOKEN_FILE), os.path.join(home, "token")]
    return out


def find_token() -> tuple[str, str]:
    """(token, where it came from); ("", "") when there is none."""
    if os.environ.get("TIDE_TOKEN"):
        return os.environ["TIDE_TOKEN"].strip(), "TIDE_TOKEN"
    for path in token_candidates():
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read().strip()
        except OSError:
            continue
        if text:
            return text, str(path)
    return "", ""
