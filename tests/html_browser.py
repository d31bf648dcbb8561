"""A small DevTools-protocol client over a pipe: open a page in real headless Chromium and
report what a reader's browser did with it (console messages, exceptions, network requests,
CSP violations), the DOM facts a test asks for, and a screenshot.

``--remote-debugging-pipe``: Chromium reads JSON commands on its fd 3 and writes replies and
events on its fd 4, each message ending with a NUL byte. No port, no websocket library.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-extensions",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-sync",
    "--no-default-browser-check",
    "--remote-debugging-pipe",
]


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    raise AssertionError(
        "no Chromium found: the HTML report is tested in a real browser; install it with "
        "scripts/install-system-deps (Debian package 'chromium')"
    )


@dataclass
class Visit:
    console: list[dict[str, Any]] = field(default_factory=list)  # console API calls
    exceptions: list[dict[str, Any]] = field(default_factory=list)
    log: list[dict[str, Any]] = field(default_factory=list)  # Log.entryAdded (CSP, network...)
    requests: list[str] = field(default_factory=list)  # every URL the page asked for
    facts: Any = None  # the value of the expression evaluated once loaded
    screenshot: bytes = b""

    def errors(self) -> list[str]:
        """Console errors and warnings, exceptions and browser log errors, as text."""
        out = [str(c.get("args")) for c in self.console if c.get("type") in ("error", "warning")]
        out += [str(e.get("exceptionDetails", e)) for e in self.exceptions]
        out += [
            f"{e['entry'].get('source')}: {e['entry'].get('text')}"
            for e in self.log
            if e["entry"].get("level") in ("error", "warning")
        ]
        return out


class Browser:
    def __init__(self, width: int = 1200, height: int = 900) -> None:
        self.profile = tempfile.mkdtemp(prefix="assay-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        self.proc = subprocess.Popen(
            [
                chromium(),
                *FLAGS,
                f"--user-data-dir={self.profile}",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            close_fds=False,  # our other fds are non-inheritable (PEP 446); 3 and 4 are set up
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            **_fds(to_child_r, from_child_w),
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []

    def close(self) -> None:
        with contextlib.suppress(Exception):  # closing anyway
            self.send("Browser.close")
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_child, self._from_child):
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            if time.monotonic() > deadline:
                raise AssertionError("Chromium did not answer in time")
            chunk = os.read(self._from_child, 1 << 16)
            if not chunk:
                err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
                raise AssertionError(f"Chromium closed the DevTools pipe: {err[-2000:]}")
            self._buf += chunk
        raw, _, self._buf = self._buf.partition(b"\0")
        return json.loads(raw)

    def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session: str | None = None,
        timeout: float = 60,
    ) -> dict[str, Any]:
        self._next += 1
        msg: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise AssertionError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str, session: str, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        for ev in self.events:
            if ev.get("method") == method and ev.get("sessionId") == session:
                return ev
        while True:
            ev = self._read_message(deadline)
            self.events.append(ev)
            if ev.get("method") == method and ev.get("sessionId") == session:
                return ev

    def visit(self, path: Path, expression: str, settle_s: float = 0.5) -> Visit:
        """Open ``path`` in a new tab, wait for its load event, evaluate ``expression`` (its
        value by JSON) and take a full-page screenshot."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        sid = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable", session=sid)
        self.events.clear()
        self.send("Page.navigate", {"url": path.resolve().as_uri()}, session=sid)
        self.wait_event("Page.loadEventFired", sid)
        time.sleep(settle_s)  # late requests and console messages
        facts = self.send(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=sid
        )
        metrics = self.send("Page.getLayoutMetrics", session=sid)
        size = metrics.get("cssContentSize") or metrics["contentSize"]
        shot = self.send(
            "Page.captureScreenshot",
            {
                "format": "png",
                "captureBeyondViewport": True,
                "clip": {
                    "x": 0,
                    "y": 0,
                    "width": size["width"],
                    "height": min(size["height"], 16000),
                    "scale": 1,
                },
            },
            session=sid,
        )
        visit = Visit(
            facts=facts.get("result", {}).get("value"), screenshot=base64.b64decode(shot["data"])
        )
        for ev in self.events:
            if ev.get("sessionId") != sid:
                continue
            m, p = ev.get("method"), ev.get("params", {})
            if m == "Runtime.consoleAPICalled":
                visit.console.append(p)
            elif m == "Runtime.exceptionThrown":
                visit.exceptions.append(p)
            elif m == "Log.entryAdded":
                visit.log.append(p)
            elif m == "Network.requestWillBeSent":
                visit.requests.append(p["request"]["url"])
        self.send("Target.closeTarget", {"targetId": target})
        return visit


def _fds(to_child_r: int, from_child_w: int) -> dict[str, Any]:
    """Map our pipe ends onto the child's fds 3 and 4 (after fork, before exec)."""

    def setup() -> None:
        # copies above 10 first, so neither end can be clobbered by the other's dup2
        a = fcntl.fcntl(to_child_r, fcntl.F_DUPFD, 10)
        b = fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 10)
        os.dup2(a, 3)  # dup2 leaves the copy inheritable
        os.dup2(b, 4)

    return {"preexec_fn": setup}
