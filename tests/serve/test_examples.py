"""examples/serve: the model server streams real tokens, the load generator
replays the Azure trace against it (bounded, loopback only), chat.yaml is a
valid service spec."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import yaml
from serverproc import wait_for

from tide.serve.spec import parse_service

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "serve"
TRACE = Path("/nonexistent")
for cand in (os.environ.get("TIDE_TRACES"), Path(__file__).resolve().parents[3] / "shared/traces",
             "/work/shared/traces"):  # fmt: skip
    if cand and (Path(cand) / "azure-llm-2023").is_dir():
        TRACE = Path(cand) / "azure-llm-2023" / "AzureLLMInferenceTrace_conv.csv"
        break


def test_chat_yaml_is_a_valid_service():
    spec, _ = parse_service(yaml.safe_load((EXAMPLES / "chat.yaml").read_text()))
    assert spec.name == "chat" and spec.autoscaling.max_replicas == 4
    assert spec.readiness.path == "/health"


@pytest.mark.slow
def test_model_server_streams_and_the_load_generator_replays(tmp_path: Path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = (tmp_path / "server.log").open("w")
    env = {**os.environ, "PORT": str(port)}
    cmd = [sys.executable, str(EXAMPLES / "model_server.py")]
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    try:

        def healthy() -> bool:
            try:
                return httpx.get(url + "/health", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for("the model loaded", healthy, 120)
        body = {"prompt_tokens": 32, "max_tokens": 4, "stream": True}
        with httpx.stream("POST", url + "/v1/completions", json=body, timeout=60) as r:
            events = [ln for ln in r.iter_lines() if ln.startswith("data: ")]
        assert [json.loads(e[6:])["index"] for e in events[:-1]] == [0, 1, 2, 3]
        assert events[-1] == "data: [DONE]"
        bad = httpx.post(url + "/v1/completions", json={"max_tokens": 0}, timeout=10)
        assert bad.status_code == 400 and "max_tokens" in bad.json()["error"]
        if not TRACE.exists():
            pytest.skip("the Azure trace is not here (set TIDE_TRACES)")
        r2 = subprocess.run([sys.executable, str(EXAMPLES / "loadgen.py"), url, "--trace",
                             str(TRACE), "--speed", "4", "--max-requests", "12",
                             "--max-seconds", "30", "--max-new", "8", "--json"],
                            capture_output=True, text=True, timeout=180)  # fmt: skip
        assert r2.returncode == 0, r2.stdout + r2.stderr
        res = json.loads(r2.stdout)
        assert res["sent"] == 12 and res["ok"] == 12 and res["ttft"]["p50"] > 0
        far = subprocess.run(
            [
                sys.executable,
                str(EXAMPLES / "loadgen.py"),
                "http://192.0.2.1:80",
                "--trace",
                str(TRACE),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert far.returncode != 0 and "loopback" in far.stderr
    finally:
        proc.terminate()
        proc.wait(timeout=30)
