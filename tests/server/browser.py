"""A real headless browser for the dashboard tests: Debian's chromium, driven by
selenium through the system chromedriver (no browser download, ever).

`ensure_chromium()` installs chromium and chromium-driver with apt-get when
they are missing and we are root (as on CI's machines), once per machine (a
file lock keeps two test workers from racing); otherwise it returns why not,
for the test to skip with that message. `png_stats()` decodes a screenshot
(Pillow), so tests can check it is not blank.
"""

from __future__ import annotations

import fcntl
import io
import os
import shutil
import subprocess
import tempfile
from typing import Any

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,1000",
]


def ensure_chromium() -> str:
    """'' when chromium and its driver are there (installed now if need be),
    else the reason they are not."""
    if os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER):
        return ""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return (
            "chromium + chromium-driver are not installed and cannot be installed here "
            "(not root, or no apt-get): run `apt-get install -y chromium chromium-driver`"
        )
    with open(os.path.join(tempfile.gettempdir(), "tide-chromium-install.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the other worker waits, then finds them
        if os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER):
            return ""
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        steps = [
            ["apt-get", "update", "-q"],
            ["apt-get", "install", "-y", "-q", "chromium", "chromium-driver"],
        ]
        for cmd in steps:
            try:
                done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
            except subprocess.TimeoutExpired:
                return f"`{' '.join(cmd)}` took over 15 minutes"
            if done.returncode != 0:
                return f"`{' '.join(cmd)}` failed: {(done.stderr or done.stdout)[-400:]}"
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        return "apt-get installed chromium but /usr/bin/chromium or chromedriver is missing"
    return ""


def start_driver(profile: str) -> Any:
    """A headless chromium on a fresh profile directory."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in [*FLAGS, f"--user-data-dir={profile}"]:
        opts.add_argument(flag)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)


def png_stats(data: bytes) -> tuple[int, int, int, float]:
    """(width, height, distinct colours, share of pixels unlike the most common
    one) of a screenshot."""
    from PIL import Image

    img = Image.open(io.BytesIO(data)).convert("RGB")
    small = img.resize((img.width // 4, img.height // 4))  # a sample is plenty
    colours = small.getcolors(maxcolors=1 << 20) or []
    top = max(n for n, _ in colours)
    return img.width, img.height, len(colours), 1 - top / (small.width * small.height)
