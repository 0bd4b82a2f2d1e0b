"""A real headless Chromium (Debian's ``chromium`` package) driven over the DevTools protocol.

Chromium runs with a fresh profile and without the background services that reach the network; the
page is driven through the DevTools WebSocket with the ``websockets`` client. Every console error,
uncaught exception and error log entry of the page is kept in :attr:`HeadlessChromium.errors`.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-port=0", "--window-size=1280,900"]


class HeadlessChromium:
    """``with HeadlessChromium() as browser: browser.open(url); browser.evaluate("...")``"""

    def __init__(self, timeout: float = 30.0):
        if CHROMIUM is None:
            raise RuntimeError("No chromium on this machine (Debian's package: apt-get install chromium).")
        self.timeout = timeout
        self.errors: list[str] = []
        self._ids = itertools.count(1)
        self._events: list[dict[str, Any]] = []

    def __enter__(self) -> HeadlessChromium:
        from websockets.sync.client import connect

        self._profile = Path(tempfile.mkdtemp(prefix="gem-chromium-"))
        self._process = subprocess.Popen([CHROMIUM, *FLAGS, f"--user-data-dir={self._profile}", "about:blank"],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = self._profile / "DevToolsActivePort"
        deadline = time.monotonic() + self.timeout
        while not (port_file.exists() and port_file.read_text().strip()):
            if time.monotonic() > deadline or self._process.poll() is not None:
                self.__exit__()
                raise RuntimeError("Chromium did not open its DevTools port.")
            time.sleep(0.05)
        port = port_file.read_text().split()[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=self.timeout) as answer:
            page = next(t for t in json.loads(answer.read()) if t["type"] == "page")
        self._stack = contextlib.ExitStack()
        self._socket = self._stack.enter_context(connect(page["webSocketDebuggerUrl"], max_size=None,
                                                         open_timeout=self.timeout))
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")
        return self

    def __exit__(self, *exc: object) -> None:
        if hasattr(self, "_stack"):
            self._stack.close()
        self._process.terminate()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(timeout=10)
        shutil.rmtree(self._profile, ignore_errors=True)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one DevTools command and return its result (events that come first are kept)."""
        number = next(self._ids)
        self._socket.send(json.dumps({"id": number, "method": method, "params": params}))
        while True:
            message = self._receive()
            if message.get("id") == number:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def open(self, url: str) -> None:
        """Load ``url`` and wait for its load event."""
        self._events.clear()
        self.call("Page.navigate", url=url)
        while not any(e.get("method") == "Page.loadEventFired" for e in self._events):
            self._receive()

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path, max_height: int = 6000) -> Path:
        """A PNG of the page, from its top, at most ``max_height`` pixels high."""
        height = self.evaluate("document.documentElement.scrollHeight")
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                         clip={"x": 0, "y": 0, "width": 1280, "height": min(int(height), max_height), "scale": 1})["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def _receive(self) -> dict[str, Any]:
        message = json.loads(self._socket.recv(timeout=self.timeout))
        if "method" in message:
            self._events.append(message)
            self._note_error(message)
        return message

    def _note_error(self, event: dict[str, Any]) -> None:
        method, params = event["method"], event.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            self.errors.append(details.get("exception", {}).get("description") or details.get("text", "exception"))
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.errors.append(" ".join(str(a.get("value", a.get("description"))) for a in params.get("args", [])))
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            self.errors.append(params["entry"].get("text", ""))
