"""Open report pages in headless Chromium: the DOM after the page's scripts ran, and screenshots.

Chromium runs with a throw-away profile and without its background services (updates, sync, QUIC), and
offline: every request it makes goes to a proxy — by default a closed local port, so nothing leaves the
machine; the tests pass a proxy that counts requests, which is how they prove a page loads nothing.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

OFFLINE_PROXY = "http://127.0.0.1:9"  # the discard port: nothing listens, every request fails at once
CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
QUIET_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--hide-scrollbars",
    "--mute-audio",
)


class BrowserError(RuntimeError):
    pass


def find_chromium() -> str | None:
    """The first Chromium or Chrome executable on PATH."""
    return next((path for name in CANDIDATES if (path := shutil.which(name))), None)


def _run(args: list[str], proxy: str | None, timeout: float) -> subprocess.CompletedProcess[str]:
    binary = find_chromium()
    if binary is None:
        raise BrowserError(f"no Chromium found (looked for {', '.join(CANDIDATES)}); install it, e.g. "
                           "apt-get install chromium")
    with tempfile.TemporaryDirectory(prefix="ruwikibench-chromium-") as profile:
        command = [binary, *QUIET_FLAGS, f"--user-data-dir={profile}",
                   f"--proxy-server={proxy or OFFLINE_PROXY}", "--proxy-bypass-list=<-loopback>"]
        try:
            done = subprocess.run([*command, *args], capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired as exc:
            raise BrowserError(f"Chromium did not finish within {timeout:.0f} s") from exc
    if done.returncode != 0:
        raise BrowserError(f"Chromium exited with {done.returncode}: {done.stderr.strip()[-500:]}")
    return done


def dump_dom(page: Path, *, proxy: str | None = None, timeout: float = 120.0) -> str:
    """The page's DOM as HTML after its scripts ran."""
    return _run(["--dump-dom", page.resolve().as_uri()], proxy, timeout).stdout


def screenshot(page: Path, target: Path, *, width: int = 1280, height: int = 1600, proxy: str | None = None,
               timeout: float = 120.0) -> Path:
    """A PNG of the page's top ``width`` × ``height`` pixels."""
    target.parent.mkdir(parents=True, exist_ok=True)
    _run([f"--window-size={width},{height}", f"--screenshot={target.resolve()}", page.resolve().as_uri()],
         proxy, timeout)
    if not target.exists():
        raise BrowserError(f"Chromium wrote no screenshot to {target}")
    return target
