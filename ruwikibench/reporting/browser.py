"""Open report pages in headless Chromium: the DOM after the page's scripts ran, and screenshots.

Chromium runs with a throw-away profile and without its background services (updates, sync, QUIC), and
offline: every request it makes goes to a proxy — by default a closed local port, so nothing leaves the
machine; the tests pass a proxy that counts requests, which is how they prove a page loads nothing.
"""

from __future__ import annotations

import html as html_lib
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

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
        raise BrowserError(
            f"no Chromium found (looked for {', '.join(CANDIDATES)}); install it, e.g. "
            "apt-get install chromium"
        )
    with tempfile.TemporaryDirectory(prefix="ruwikibench-chromium-") as profile:
        command = [
            binary,
            *QUIET_FLAGS,
            f"--user-data-dir={profile}",
            f"--proxy-server={proxy or OFFLINE_PROXY}",
            "--proxy-bypass-list=<-loopback>",
        ]
        try:
            done = subprocess.run(
                [*command, *args], capture_output=True, text=True, timeout=timeout, check=False
            )
        except subprocess.TimeoutExpired as exc:
            raise BrowserError(f"Chromium did not finish within {timeout:.0f} s") from exc
    if done.returncode != 0:
        raise BrowserError(f"Chromium exited with {done.returncode}: {done.stderr.strip()[-500:]}")
    return done


def dump_dom(
    page: Path,
    *,
    proxy: str | None = None,
    timeout: float = 120.0,
    wait_ms: int = 0,
    width: int | None = None,
) -> str:
    """The page's DOM as HTML after its scripts ran; ``wait_ms``: virtual time given to asynchronous scripts
    (promises, timers) before the DOM is taken; ``width``: the window's width in pixels (layout measured by
    the page's scripts depends on it)."""
    wait = [f"--virtual-time-budget={wait_ms}"] if wait_ms else []
    window = [f"--window-size={width},900"] if width else []
    return _run([*wait, *window, "--dump-dom", page.resolve().as_uri()], proxy, timeout).stdout


AXE_RESULTS_ID = "axe-results"
AXE_RUNNER = """
<script>
function axeResults(value) {
  var out = document.createElement("pre");
  out.id = "axe-results";
  out.textContent = JSON.stringify(value);
  document.body.appendChild(out);
}
axe.run(document, {resultTypes: ["violations"]}).then(function (results) {
  axeResults(results.violations.map(function (v) {
    return {id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(function (n) { return \
n.target.join(" "); })};
  }));
}, function (error) { axeResults({error: String(error)}); });
</script>
"""


def axe_violations(page: Path, axe_js: Path, *, timeout: float = 180.0) -> list[dict[str, Any]]:
    """The axe-core accessibility violations of ``page`` ({id, impact, help, nodes}): a copy of the page next
    to it with axe (``axe_js``, e.g. node_modules/axe-core/axe.min.js) and a runner script put in before
    ``</body>``, opened in headless Chromium; the runner writes the results into the DOM."""
    html = page.read_text(encoding="utf-8")
    if "</body>" not in html:
        raise BrowserError(f"{page}: no </body> to put axe before")
    script = "<script>" + axe_js.read_text(encoding="utf-8").replace("</script", "<\\/script") + "</script>"
    probe = page.with_name(f".axe-{page.name}")
    probe.write_text(html.replace("</body>", script + AXE_RUNNER + "</body>"), encoding="utf-8")
    try:
        dom = dump_dom(probe, timeout=timeout, wait_ms=60_000)
    finally:
        probe.unlink(missing_ok=True)
    found = re.search(rf'<pre id="{AXE_RESULTS_ID}">(.*?)</pre>', dom, re.DOTALL)
    if found is None:
        raise BrowserError(f"axe wrote no results into {page.name} (did the script run?)")
    results = json.loads(html_lib.unescape(found.group(1)))
    if isinstance(results, dict):
        raise BrowserError(f"axe failed on {page.name}: {results.get('error')}")
    return list(results)


def screenshot(
    page: Path,
    target: Path,
    *,
    width: int = 1280,
    height: int = 1600,
    proxy: str | None = None,
    timeout: float = 120.0,
) -> Path:
    """A PNG of the page's top ``width`` × ``height`` pixels."""
    target.parent.mkdir(parents=True, exist_ok=True)
    _run(
        [f"--window-size={width},{height}", f"--screenshot={target.resolve()}", page.resolve().as_uri()],
        proxy,
        timeout,
    )
    if not target.exists():
        raise BrowserError(f"Chromium wrote no screenshot to {target}")
    return target
