"""A tiny replica for the service tests: an HTTP server on $HOST:$PORT.

GET /health: 200, or 503 while the file named by $FAIL_FILE exists.
GET|POST /work?ms=N: sleeps N ms, answers {"replica", "pid"}.
$START_DELAY: seconds to wait before listening (a model loading).
"""

import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    def _answer(self, status, doc):
        body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        url = urlsplit(self.path)
        if url.path == "/health":
            fail = os.environ.get("FAIL_FILE", "")
            self._answer(503 if fail and os.path.exists(fail) else 200, {"ok": True})
            return
        if url.path == "/work":
            ms = float(parse_qs(url.query).get("ms", ["0"])[0])
            time.sleep(ms / 1000)
            self._answer(200, {"replica": os.environ.get("REPLICA_ID"), "pid": os.getpid()})
            return
        self._answer(404, {"error": "no such path"})

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        self.rfile.read(length)
        self.do_GET()


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a router closing its pool
            super().handle_error(request, client_address)


def main():
    time.sleep(float(os.environ.get("START_DELAY", "0")))
    server = Server((os.environ.get("HOST", "127.0.0.1"), int(os.environ["PORT"])), Handler)
    print(f"listening on {server.server_address}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
