"""A small real model server for tide's service examples: a tiny transformer
with random weights that streams the tokens it generates, so a token costs
real CPU time (no GPU needed). torch CPU when installed (pip install
'tide[torch]'), the same network in numpy otherwise.

    POST /v1/completions  {"prompt_tokens": 512, "max_tokens": 64, "stream": true}
        (or "prompt": "text": one token per byte) -> with "stream", one line per
        token as it is generated ("data: {json}\\n\\n", then "data: [DONE]");
        without, one JSON answer with the tokens.
    GET /health           200 once the model is loaded
    GET /metrics          requests, tokens generated, tokens per second

Listens on $HOST:$PORT (tide sets both for a replica; 127.0.0.1:8000 alone).
Run by a service: examples/serve/chat.yaml; by hand:
    PORT=8000 python examples/serve/model_server.py
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

VOCAB, DIM, HEADS, LAYERS, MAX_CONTEXT = 2048, 256, 4, 4, 2048
MAX_PROMPT, MAX_NEW = 4096, 1024


class NumpyModel:
    """A decoder-only transformer (pre-norm, causal attention, GELU MLP) with a
    key/value cache, random weights from a fixed seed."""

    def __init__(self, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        s = 1 / math.sqrt(DIM)
        self.embed = rng.normal(0, s, (VOCAB, DIM)).astype(np.float32)
        self.layers = [
            {k: rng.normal(0, s, shape).astype(np.float32) for k, shape in (
                ("qkv", (DIM, 3 * DIM)), ("out", (DIM, DIM)),
                ("up", (DIM, 4 * DIM)), ("down", (4 * DIM, DIM)))}
            for _ in range(LAYERS)
        ]  # fmt: skip

    def prefill(self, tokens: list[int]) -> tuple[int, list]:
        cache: list = [[None, None] for _ in range(LAYERS)]
        x = self.embed[np.asarray(tokens[-MAX_CONTEXT:]) % VOCAB]
        return self._forward(x, cache), cache

    def step(self, token: int, cache: list) -> int:
        return self._forward(self.embed[[token % VOCAB]], cache)

    def _forward(self, x: np.ndarray, cache: list) -> int:
        n = x.shape[0]
        for layer, kv in zip(self.layers, cache, strict=True):
            h = _norm(x) @ layer["qkv"]
            q, k, v = np.split(h, 3, axis=-1)
            kv[0] = k if kv[0] is None else np.concatenate([kv[0], k])[-MAX_CONTEXT:]
            kv[1] = v if kv[1] is None else np.concatenate([kv[1], v])[-MAX_CONTEXT:]
            x = x + _attend(q, kv[0], kv[1], n) @ layer["out"]
            u = _norm(x) @ layer["up"]
            x = x + (u * 0.5 * (1 + np.tanh(0.79788456 * (u + 0.044715 * u**3)))) @ layer["down"]
        logits = _norm(x[-1:]) @ self.embed.T
        return int(np.argmax(logits))


def _norm(x: np.ndarray) -> np.ndarray:
    return (x - x.mean(-1, keepdims=True)) / (x.std(-1, keepdims=True) + 1e-5)


def _attend(q: np.ndarray, k: np.ndarray, v: np.ndarray, n: int) -> np.ndarray:
    d = DIM // HEADS
    out = np.empty_like(q)
    total = k.shape[0]
    for h in range(HEADS):
        sl = slice(h * d, (h + 1) * d)
        scores = q[:, sl] @ k[:, sl].T / math.sqrt(d)
        if n > 1:  # causal: position i sees keys up to total - n + i
            mask = np.arange(total)[None, :] > (np.arange(n)[:, None] + total - n)
            scores = np.where(mask, -1e9, scores)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        out[:, sl] = (scores / scores.sum(-1, keepdims=True)) @ v[:, sl]
    return out


class TorchModel(NumpyModel):
    """The same network and weights, run by torch on the CPU (one thread per request)."""

    def __init__(self, seed: int = 0) -> None:
        import torch

        super().__init__(seed)
        self.torch = torch
        self.t_embed = torch.from_numpy(self.embed)
        self.t_layers = [{k: torch.from_numpy(v) for k, v in layer.items()}
                         for layer in self.layers]  # fmt: skip

    def _forward(self, x, cache):  # type: ignore[no-untyped-def]
        torch = self.torch
        with torch.no_grad():
            x = torch.from_numpy(np.ascontiguousarray(x))
            n = x.shape[0]
            for layer, kv in zip(self.t_layers, cache, strict=True):
                h = torch.nn.functional.layer_norm(x, (DIM,)) @ layer["qkv"]
                q, k, v = h.split(DIM, dim=-1)
                kv[0] = k if kv[0] is None else torch.cat([kv[0], k])[-MAX_CONTEXT:]
                kv[1] = v if kv[1] is None else torch.cat([kv[1], v])[-MAX_CONTEXT:]
                qh = q.view(n, HEADS, -1).transpose(0, 1)
                kh = kv[0].view(-1, HEADS, DIM // HEADS).transpose(0, 1)
                vh = kv[1].view(-1, HEADS, DIM // HEADS).transpose(0, 1)
                total = kh.shape[1]
                mask = None
                if n > 1:
                    mask = torch.arange(total)[None, :] <= (torch.arange(n)[:, None] + total - n)
                a = torch.nn.functional.scaled_dot_product_attention(qh, kh, vh, attn_mask=mask)
                x = x + a.transpose(0, 1).reshape(n, DIM) @ layer["out"]
                u = torch.nn.functional.layer_norm(x, (DIM,)) @ layer["up"]
                x = x + torch.nn.functional.gelu(u, approximate="tanh") @ layer["down"]
            logits = torch.nn.functional.layer_norm(x[-1:], (DIM,)) @ self.t_embed.T
            return int(torch.argmax(logits))


def load_model() -> NumpyModel:
    try:
        import torch
    except ImportError:
        print("torch not installed: the numpy model (pip install 'tide[torch]' for torch)",
              flush=True)  # fmt: skip
        return NumpyModel()
    torch.set_num_threads(1)  # replicas share the machine: one core per request
    return TorchModel()


class Stats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests = self.tokens = 0
        self.busy = 0.0

    def add(self, tokens: int, seconds: float) -> None:
        with self.lock:
            self.requests += 1
            self.tokens += tokens
            self.busy += seconds


MODEL: NumpyModel | None = None
STATS = Stats()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "tide-example-model/1"

    def log_message(self, *args: object) -> None:
        pass

    def _json(self, status: int, doc: object) -> None:
        body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path == "/health":
            self._json(200 if MODEL is not None else 503, {"ready": MODEL is not None})
        elif self.path == "/metrics":
            with STATS.lock:
                rate = STATS.tokens / STATS.busy if STATS.busy else 0.0
                self._json(200, {"requests": STATS.requests, "tokens": STATS.tokens,
                                 "tokens_per_busy_second": rate})  # fmt: skip
        else:
            self._json(404, {"error": f"no {self.path}; use POST /v1/completions"})

    def do_POST(self) -> None:
        if self.path != "/v1/completions":
            self._json(404, {"error": f"no {self.path}; use POST /v1/completions"})
            return
        try:
            n = int(self.headers.get("Content-Length", "0"))
            if not 0 <= n <= 1 << 20:
                raise ValueError("body over 1 MiB")
            req = json.loads(self.rfile.read(n) or b"{}")
            prompt = _prompt(req)
            new = int(req.get("max_tokens", 16))
            if not 1 <= new <= MAX_NEW:
                raise ValueError(f"max_tokens must be 1..{MAX_NEW}")
        except (ValueError, TypeError) as e:
            self._json(400, {"error": str(e)})
            return
        if MODEL is None:
            self._json(503, {"error": "model loading"})
            return
        self._generate(prompt, new, bool(req.get("stream", False)))

    def _generate(self, prompt: list[int], new: int, stream: bool) -> None:
        assert MODEL is not None
        t0 = time.perf_counter()
        token, cache = MODEL.prefill(prompt)
        out = [token]
        if stream:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self._chunk({"token": token, "index": 0})
        for i in range(1, new):
            token = MODEL.step(token, cache)
            out.append(token)
            if stream:
                self._chunk({"token": token, "index": i})
        STATS.add(len(out), time.perf_counter() - t0)
        if stream:
            self._chunk(None)
            self.wfile.write(b"0\r\n\r\n")
        else:
            self._json(200, {"tokens": out, "prompt_tokens": len(prompt)})

    def _chunk(self, doc: object) -> None:
        data = b"data: " + (json.dumps(doc).encode() if doc is not None else b"[DONE]") + b"\n\n"
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()


def _prompt(req: dict) -> list[int]:  # type: ignore[type-arg]
    if "prompt" in req:
        text = str(req["prompt"]).encode()[:MAX_PROMPT]
        return list(text) or [0]
    n = int(req.get("prompt_tokens", 16))
    if not 1 <= n <= MAX_PROMPT:
        raise ValueError(f"prompt_tokens must be 1..{MAX_PROMPT}")
    return [(i * 7919) % VOCAB for i in range(n)]


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main() -> int:
    global MODEL
    host, port = os.environ.get("HOST", "127.0.0.1"), int(os.environ.get("PORT", "8000"))
    server = Server((host, port), Handler)  # listening at once; /health says when it is ready
    threading.Thread(target=server.serve_forever, daemon=True).start()
    t0 = time.perf_counter()
    MODEL = load_model()
    MODEL.prefill([1, 2, 3])  # warm up
    print(f"model ready in {time.perf_counter() - t0:.2f} s on {host}:{port} "
          f"({type(MODEL).__name__})", flush=True)  # fmt: skip
    with contextlib.suppress(KeyboardInterrupt):
        threading.Event().wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
