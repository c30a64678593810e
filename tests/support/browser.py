"""Headless Chromium for tests, driven through the DevTools protocol (no driver, no npm).

:func:`chromium` starts one browser (its own process group and profile folder, killed at the
end) and yields a :class:`Page`, its one tab: :meth:`Page.open` navigates and waits until every
expected text is rendered (a single-page app such as Dagster's UI fills the page after loading),
:meth:`Page.evaluate` returns a JavaScript expression's value, :meth:`Page.screenshot` saves a PNG.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
BODY_TEXT = "document.body ? document.body.innerText : ''"


class Page:
    """The browser's tab: one DevTools connection, calls answered in order."""

    def __init__(self, connection: Any) -> None:
        self._ws = connection
        self._counter = 0

    def call(self, method: str, **params: Any) -> dict:
        """One DevTools command; its result (events arriving meanwhile are skipped)."""
        self._counter += 1
        self._ws.send(json.dumps({"id": self._counter, "method": method, "params": params}))
        while True:
            message = json.loads(self._ws.recv())
            if message.get("id") == self._counter:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (returned by value)."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result.get("result", {}).get("value")

    def open(self, url: str, needles: list[str] | tuple[str, ...] = (), timeout: float = 60) -> str:
        """Navigate to ``url``; the page's text once every needle is in it (or at the timeout)."""
        self.call("Page.navigate", url=url)
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = self.evaluate(BODY_TEXT) or ""
            if needles and all(n in text for n in needles):
                break
            if not needles and self.evaluate("document.readyState") == "complete":
                break
            time.sleep(0.25)
        return text

    def text_matching(self, pattern: str, timeout: float = 30) -> str:
        """The open page's text once the regex ``pattern`` matches it (or at the timeout): an entry
        the page renders after the rest, such as a markdown value, is waited for."""
        deadline = time.monotonic() + timeout
        text = self.evaluate(BODY_TEXT) or ""
        while not re.search(pattern, text) and time.monotonic() < deadline:
            time.sleep(0.25)
            text = self.evaluate(BODY_TEXT) or ""
        return text

    def screenshot(self, path: Path) -> None:
        shot = self.call("Page.captureScreenshot", format="png")
        path.write_bytes(base64.b64decode(shot["data"]))


@contextmanager
def chromium(profile: Path, *, width: int = 1400, height: int = 1000) -> Iterator[Page]:
    """Headless Chromium with the profile folder ``profile`` (created), its tab as a :class:`Page`."""
    from websockets.sync.client import connect

    assert CHROMIUM is not None, "chromium is not installed"
    profile.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--remote-debugging-port=0",
         f"--window-size={width},{height}", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not (port_file.exists() and port_file.read_text().strip()):
            assert proc.poll() is None, f"chromium exited ({proc.returncode})"
            assert time.monotonic() < deadline, "chromium did not open its DevTools port"
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
            target = next(t for t in json.loads(r.read()) if t["type"] == "page")
        with connect(target["webSocketDebuggerUrl"], max_size=64 * 2**20, open_timeout=30) as ws:
            page = Page(ws)
            page.call("Page.enable")
            yield page
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
