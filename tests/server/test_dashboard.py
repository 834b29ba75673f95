"""The dashboard (/ui) and training efficiency, on a real server:
authentication and permissions over HTTP, efficiency figures from a real job's
reports through the CLI and tide.job, fair-share samples over time, a real
inference service, and every page in a real headless chromium (one browser
session), with DOM checks and non-blank screenshots."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from serverproc import ServerProc, job, submit, wait_for, wait_state

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serve"))
from svc_support import REPLICA, delete_all, kill_routers

# one server for the module, one browser: keep every test of it on one worker
pytestmark = pytest.mark.xdist_group("dashboard")

ENV = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": "/tmp"}
TRAIN = """#!/bin/bash
#SBATCH --gpus-per-node=4 --comment "params=1B tokens from tide.job"
#SBATCH -J <b>train</b>
python - <<'EOF'
import time, tide.job as tj
for step in range(12):
    time.sleep(0.15)
    tj.notify_step(step, every=0, tokens=32768)
tj.notify_checkpoint(11)
EOF
tide notify step 12 --tokens 32768
sleep 300
"""


def _ui(srv: ServerProc, token: str | None = None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=srv.url, headers=headers, timeout=30, follow_redirects=False)


SERVICE = {  # a real inference service: one replica, no GPU, on the CPU node
    "apiVersion": "tide/v1",
    "kind": "Service",
    "metadata": {"name": "echo"},
    "spec": {
        "command": f"{sys.executable} {REPLICA}",
        "resources": {"gpus": 0, "cpus": 1},
        "partition": "cpu",
        "readinessProbe": {"path": "/health", "periodSeconds": 0.5},
        "replicas": 1,
    },
}


@pytest.fixture(scope="module")
def jobs(tiny: Any) -> Iterator[dict[str, Any]]:
    """alice trains (4 GPUs, reporting steps) and serves `echo` (one replica on
    the CPU node); bob asks for more GPUs than are free. Everything starts at
    once, then the fixture waits for what the tests read."""
    with tiny.client(tiny.tokens["alice"]) as alice, tiny.client(tiny.tokens["bob"]) as bob:
        r = submit(alice, TRAIN, tiny.work, env=ENV)
        assert r.status_code == 201, r.text
        train = r.json()["job_id"]
        r = alice.post("/v1/services", json={"service": SERVICE, "cwd": str(tiny.work)})
        assert r.status_code == 201, r.text
        wait_state(alice, train, {"RUNNING"})
        r = submit(bob, "#!/bin/bash\n#SBATCH -N2 --gpus-per-node=8\nsleep 5\n", tiny.work)
        assert r.status_code == 201, r.text
        big = r.json()["job_id"]
        try:
            wait_for(
                "13 steps reported",
                lambda: (job(alice, train)["efficiency"] or {}).get("steps", 0) >= 12,
                90,
            )
            wait_for("bob's estimated start", lambda: job(bob, big)["planned_start"], 30)
            wait_for("a ready replica of echo", lambda: _ready(alice, "echo"), 90)
            yield {"train": train, "big": big, "service": "echo"}
        finally:
            delete_all(tiny)  # replicas and routers outlive the server on purpose
            kill_routers(tiny.data_dir)


def _ready(c: httpx.Client, name: str) -> bool:
    listed = {s["name"]: s for s in c.get("/v1/services").json()["services"]}
    return name in listed and listed[name]["ready"] >= 1


def test_efficiency_of_a_reporting_job(tiny: Any, jobs: dict[str, int]) -> None:
    with tiny.client(tiny.tokens["alice"]) as alice:
        j = job(alice, jobs["train"])
    e = j["efficiency"]
    assert e["flops_per_token"] == pytest.approx(6e9)  # --comment params=1B
    assert e["tokens"] == pytest.approx(13 * 32768)
    assert e["steps"] == 12 and e["peak_tflops"] == 312.0 and e["gpus"] == 4
    # one step every >= 0.15 s: the rate is below 32768 / 0.15 and positive
    assert 0 < e["tokens_per_s"] < 32768 / 0.15
    assert 0.15 <= e["step_p50"] <= e["step_p95"]
    assert e["mfu"] == pytest.approx(e["tokens_per_s"] * 6e9 / (4 * 312e12))
    assert 0 < e["mfu_effective"] < e["mfu"]  # start-up and the sleep count as overhead


def test_show_job_and_acct_print_efficiency(tiny: Any, jobs: dict[str, int]) -> None:
    env = {**os.environ, "TIDE_URL": tiny.url, "TIDE_TOKEN": tiny.tokens["alice"]}
    commands = {
        "show": ["show", "job", str(jobs["train"])],
        "acct": ["acct", "-j", str(jobs["train"]), "-P", "--format", "JobID,Tokens,MFU"],
        "by_account": ["acct", "--efficiency", "-P"],
    }
    procs = {  # the three CLI processes at once: most of their time is start-up
        k: subprocess.Popen([sys.executable, "-m", "tide.cli.main", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for k, args in commands.items()
    }  # fmt: skip
    out = {}
    for k, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 0, (commands[k], stderr)
        out[k] = stdout

    shown = out["show"]
    assert "Comment=params=1B tokens from tide.job" in shown
    assert "Tokens=426k" in shown and "MFU=" in shown and "PeakTFLOPS=312.0x4" in shown
    head, row = out["acct"].splitlines()[:2]
    assert head == "JobID|Tokens|MFU"
    assert row.startswith(f"{jobs['train']}|426k|") and row.endswith("%")
    lines = out["by_account"].splitlines()
    assert lines[0].startswith("Account|Jobs|Running|Tokens|TokensPerSec")
    assert lines[1].startswith("physics|1|1|426k|")


def test_notify_rejects_bad_figures(tiny: Any, jobs: dict[str, int]) -> None:
    with tiny.client(tiny.tokens["alice"]) as alice:
        bad = (
            {"tokens": -1},
            {"flops_per_token": 0},
            {"params": "lots"},
            {"step_times": {"99999": 1}},  # not a step-time bucket
            {"step_times": {"3": 0}},  # no steps
            {"step_times": {str(k): 1 for k in range(3000)}},  # over SKETCH_MAX buckets
        )
        for body in bad:
            r = alice.post(f"/v1/jobs/{jobs['train']}/notify", json={"event": "step", **body})
            assert r.status_code == 422, r.text
    with tiny.client() as admin:
        bad = "#!/bin/bash\n#SBATCH --comment=params=-7B\ntrue\n"
        r = submit(admin, bad, tiny.work)
        assert r.status_code == 400 and "params=" in r.json()["error"], r.text


def test_pages_need_a_login_and_say_so(tiny: Any) -> None:
    with _ui(tiny) as c:
        r = c.get("/ui/queue")
        assert r.status_code == 303 and r.headers["location"] == "/ui/login?next=/ui/queue"
        form = c.get("/ui/login")
        assert form.status_code == 200 and 'name="csrf"' in form.text
        assert "frame-ancestors 'none'" in form.headers["content-security-policy"]
        # a wrong token, and a form whose CSRF value is not the cookie's
        csrf = form.cookies["tide_login_csrf"]
        bad = c.post("/ui/login", data={"token": "nope", "csrf": csrf, "next": "/ui/"})
        assert bad.status_code == 401 and "invalid, expired or revoked token" in bad.text
        c.cookies.set("tide_login_csrf", "forged", path="/ui")
        forged = c.post(
            "/ui/login", data={"token": tiny.tokens["alice"], "csrf": "other", "next": "/ui/"}
        )
        assert forged.status_code == 401 and "tide_session" not in forged.cookies


def test_login_sets_an_httponly_session_and_logout_ends_it(tiny: Any) -> None:
    with _ui(tiny) as c:
        c.get("/ui/login")
        csrf = c.cookies["tide_login_csrf"]
        r = c.post(
            "/ui/login",
            data={"token": tiny.tokens["bob"], "csrf": csrf, "next": "https://evil.example/"},
        )
        assert r.status_code == 303 and r.headers["location"] == "/ui/"  # never off-site
        cookie = r.headers["set-cookie"].lower()
        assert "tide_session=" in cookie and "httponly" in cookie
        assert "samesite=strict" in cookie and "path=/ui" in cookie
        assert tiny.tokens["bob"] not in r.headers["set-cookie"]
        page = c.get("/ui/queue")
        assert page.status_code == 200 and "bob (user)" in page.text
        assert page.headers["cache-control"] == "no-store"
        sid = c.cookies["tide_session"]
        logout_csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)  # type: ignore[union-attr]
        c.post("/ui/logout", data={"csrf": "forged"})  # ignored: the session lives on
        c.cookies.set("tide_session", sid, path="/ui")
        assert c.get("/ui/queue").status_code == 200
        c.post("/ui/logout", data={"csrf": logout_csrf})
        c.cookies.set("tide_session", sid, path="/ui")  # replaying the old cookie
        assert c.get("/ui/queue").status_code == 303


def test_users_see_their_own_jobs_operators_everything(tiny: Any, jobs: dict[str, int]) -> None:
    train, big = jobs["train"], jobs["big"]
    with _ui(tiny, tiny.tokens["bob"]) as bob:
        cluster = bob.get("/ui/").text
        assert 'class="gpu other"' in cluster and f"/ui/jobs/{train}" not in cluster
        queue = bob.get("/ui/queue").text
        assert f"/ui/jobs/{big}" in queue and f"/ui/jobs/{train}" not in queue
        denied = bob.get(f"/ui/jobs/{train}")
        assert denied.status_code == 403 and "belongs to" in denied.text
    with _ui(tiny, tiny.tokens["oscar"]) as oscar:
        cluster = oscar.get("/ui/").text
        assert f"/ui/jobs/{train}" in cluster and 'class="gpu other"' not in cluster
        page = oscar.get(f"/ui/jobs/{train}").text
        # the user-given name is escaped, never markup
        assert "&lt;b&gt;train&lt;/b&gt;" in page and "<b>train</b>" not in page
    with _ui(tiny, f"tidejob_{train}_0") as forged:
        assert forged.get("/ui/").status_code == 303  # a bad job token is no login


def test_fair_share_is_sampled_over_time(tiny: Any, jobs: dict[str, Any]) -> None:
    """tiny.yaml samples every 2 s (priority_calc_period): physics (alice's 4
    GPUs) uses everything, bio nothing; any user may read it, as `tide share`."""
    with tiny.client(tiny.tokens["bob"]) as bob:

        def grown() -> dict[str, Any] | None:
            h = bob.get("/v1/share/history").json()
            used = [v for v in h["accounts"].get("physics", {}).get("raw_usage", []) if v]
            return h if len(used) >= 2 and used[-1] > used[0] else None

        h = wait_for("two samples of physics' growing usage", grown, 60)
        assert bob.get("/v1/share/history", params={"start": -1}).status_code == 422
    assert h["every"] == 2 and h["times"] == sorted(h["times"])
    assert min(b - a for a, b in zip(h["times"], h["times"][1:], strict=False)) >= 1.5
    physics, bio = h["accounts"]["physics"], h["accounts"]["bio"]
    assert physics["norm_shares"][-1] == pytest.approx(2 / 3)  # fairshare 2 of 3
    assert physics["eff_usage"][-1] == pytest.approx(1.0) and bio["eff_usage"][-1] == 0.0
    # Fair Tree over 3 users: bio, under its share, ranks first (bob 3/3); in
    # physics oscar, who used nothing, before alice (2/3, 1/3)
    factors = {u: v["fairshare"][-1] for u, v in h["users"].items()}
    assert factors == pytest.approx({"bio/bob": 1.0, "physics/oscar": 2 / 3,
                                     "physics/alice": 1 / 3})  # fmt: skip


def test_services_page_lists_what_the_caller_may_see(tiny: Any, jobs: dict[str, Any]) -> None:
    with _ui(tiny, tiny.tokens["alice"]) as alice:
        page = alice.get("/ui/services").text
        assert 'data-service="echo"' in page and "1 of your inference services" in page
    with _ui(tiny, tiny.tokens["bob"]) as bob:  # not bob's: not listed
        page = bob.get("/ui/services").text
        assert 'data-service="echo"' not in page and 'id="services-none"' in page


def test_static_files_are_a_fixed_set(tiny: Any) -> None:
    with _ui(tiny) as c:
        assert c.get("/ui/static/dashboard.css").status_code == 200
        assert c.get("/ui/static/..%2Fviews.py").status_code == 404
        assert c.get("/ui/static/router.py").status_code == 404


GRAFANA = Path(__file__).resolve().parents[2] / "docs" / "grafana" / "tide.json"


def test_grafana_dashboard_queries_only_exported_metrics(tiny: Any, jobs: dict[str, int]) -> None:
    text = httpx.get(f"{tiny.url}/metrics", timeout=30).text
    exported = {
        re.split(r"[{ ]", line, maxsplit=1)[0]
        for line in text.splitlines()
        if line and not line.startswith("#")
    }
    assert 'tide_jobs_pending_reason{reason="Resources"} 1.0' in text
    assert 'tide_account_gpus_allocated{account="physics"} 4.0' in text
    dash = json.loads(GRAFANA.read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    used = {m for e in exprs for m in re.findall(r"\btide_[a-z_]+", e)}
    assert used and used <= exported, used - exported
    # every exported family is on the dashboard (counters as their _total)
    families = {  # services' own families have their own panels (docs/services.md)
        m for m in exported if not m.endswith("_created") and not m.startswith("tide_serv")
    }
    assert families <= used, families - used
    assert len({p["id"] for p in dash["panels"]}) == len(dash["panels"])


# --------------------------------------------------------------------------- browser


def _start_browser(profile: str) -> Any:
    """A headless chromium, or the reason there is none (a string)."""
    from browser import ensure_chromium, start_driver

    why = ensure_chromium()
    if why:
        return why
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is in tide[dev]: make install"
    return start_driver(profile)


@pytest.fixture(scope="module", autouse=True)
def _chromium_starts_early(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Future[Any] | None]:
    """Chromium starts in a thread while the server and the jobs do, when a
    test of this module will use the browser (its start-up then costs no
    wall time of its own); it quits at the end of the module."""
    wanted = any(
        item.module is request.module and "browser" in item.fixturenames
        for item in request.session.items
    )
    if not wanted:
        yield None
        return
    with ThreadPoolExecutor(1) as pool:
        started = pool.submit(_start_browser, str(tmp_path_factory.mktemp("chromium-profile")))
        try:
            yield started
        finally:
            driver = started.result()
            if not isinstance(driver, str):
                driver.quit()


@pytest.fixture
def browser(_chromium_starts_early: Future[Any] | None) -> Any:
    assert _chromium_starts_early is not None
    driver = _chromium_starts_early.result(timeout=900)
    if isinstance(driver, str):
        pytest.skip(driver)
    return driver


@pytest.mark.slow
def test_every_page_in_a_real_browser(
    tiny: Any, jobs: dict[str, int], browser: Any, tmp_path: Path
) -> None:
    from browser import png_stats
    from selenium.webdriver.common.by import By

    d = browser
    d.get(f"{tiny.url}/ui/jobs/{jobs['train']}?live=0")  # live refresh: tested last
    assert "/ui/login" in d.current_url
    d.find_element(By.ID, "token").send_keys(tiny.tokens["oscar"])
    d.find_element(By.ID, "login-button").click()
    # The login page's own address holds "/ui/jobs/" (its ?next=): wait until
    # the browser has left it and shows the job (under load the click's page
    # load can lag the test by seconds).
    main_text = "return document.querySelector('main')?.innerText ?? ''"
    wait_for(
        "the job page after login",
        lambda: "/ui/login" not in d.current_url
        and f"Job {jobs['train']}" in d.execute_script(main_text),
        30,
    )

    def shot(name: str) -> None:
        png = d.get_screenshot_as_png()
        (tmp_path / f"{name}.png").write_bytes(png)
        w, h, colours, ink = png_stats(png)
        assert w >= 1000 and h >= 600, (name, w, h)
        assert colours >= 20 and ink >= 0.02, f"{name}: blank-looking screenshot"

    text = d.find_element(By.TAG_NAME, "main").text
    assert f"Job {jobs['train']}" in text and "RUNNING" in text
    assert "Training efficiency" in text and "%" in text  # MFU shown
    svg = d.find_element(By.CSS_SELECTOR, "svg.timeline")
    titles = [t.get_attribute("textContent") for t in svg.find_elements(By.TAG_NAME, "title")]
    assert "checkpoint 11" in titles and any(t.startswith("attempt 0") for t in titles)
    assert svg.size["width"] > 400
    shot("job")

    d.get(f"{tiny.url}/ui/?live=0")
    assert "of 16 GPUs allocated" in d.find_element(By.ID, "cluster-summary").text
    leaves = [e.get_attribute("data-switch") for e in d.find_elements(By.CLASS_NAME, "leaf")]
    assert leaves == ["leafa", "leafb"]
    g1 = d.find_element(By.CSS_SELECTOR, '[data-node="g1"]')
    assert len(g1.find_elements(By.CLASS_NAME, "gpu")) == 8
    assert len(d.find_elements(By.CSS_SELECTOR, "a.gpu.mine")) == 4
    shot("cluster")

    d.get(f"{tiny.url}/ui/queue?live=0")
    pending = d.find_element(By.ID, "pending").text
    assert str(jobs["big"]) in pending and "Resources" in pending and "(in " in pending
    shot("queue")

    d.get(f"{tiny.url}/ui/accounts?live=0")
    assert "physics" in d.find_element(By.ID, "fairshare").text
    eff = d.find_element(By.ID, "account-efficiency").text
    assert "physics" in eff and "426k" in eff
    assert d.find_elements(By.CSS_SELECTOR, "svg path[stroke]")
    shot("accounts")

    history = d.find_element(By.ID, "share-history")
    charts = history.find_elements(By.TAG_NAME, "svg")
    assert len(charts) == 3  # decayed usage, usage share against shares, factors
    lines = {t.get_attribute("textContent") for t in history.find_elements(By.TAG_NAME, "title")}
    assert {"physics", "physics usage share", "physics shares", "physics/alice"} <= lines
    d.execute_script("arguments[0].scrollIntoView()", history)
    shot("fair-share")

    d.get(f"{tiny.url}/ui/services?live=0")
    row = d.find_element(By.CSS_SELECTOR, '#services tr[data-service="echo"]')
    assert "alice" in row.text and "Active" in row.text
    assert row.find_element(By.CLASS_NAME, "ready").text == "1"
    shot("services")
    # live: the page refreshes its main part by itself (every second here)
    d.get(f"{tiny.url}/ui/queue?refresh=1")
    wait_for("a live refresh", lambda: d.find_element(By.TAG_NAME, "body").get_attribute(
        "data-refreshed"), 20)  # fmt: skip
    assert str(jobs["big"]) in d.find_element(By.ID, "pending").text
    severe = [e for e in d.get_log("browser") if e.get("level") == "SEVERE"]
    assert not severe, f"console errors (CSP violations, script errors): {severe}"
