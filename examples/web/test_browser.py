#!/usr/bin/env python3
"""Runs the web page in headless Chromium and checks the text it generates.

Assembles the site (this folder's page, build-wasm's ember.js/ember.wasm, the
exported nanoGPT and its tokenizer) in <build-dir>/web, serves it on a local
port, opens it in headless Chromium driven through the DevTools protocol
(--remote-debugging-pipe), lets it generate greedily from the prompt in
greedy.json, then checks that
  - the page's generated text is eager PyTorch's greedy text (greedy.json),
  - a screenshot of the page is not blank (it holds the rendered text).
The screenshot is kept as <build-dir>/web-screenshot.png.

usage: test_browser.py <build-wasm dir> [--timeout 180]
       test_browser.py <build-wasm dir> --serve [PORT]   (assemble, then serve the page)
"""
from __future__ import annotations

import argparse
import base64
import fcntl
import functools
import http.server
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


def assemble(build: str) -> str:
    site = os.path.join(build, "web")
    os.makedirs(os.path.join(site, "tokenizer"), exist_ok=True)
    files = {
        "index.html": os.path.join(HERE, "index.html"),
        "app.js": os.path.join(HERE, "app.js"),
        "worker.js": os.path.join(HERE, "worker.js"),
        "ember.js": os.path.join(build, "ember.js"),
        "ember.wasm": os.path.join(build, "ember.wasm"),
        "nanogpt.pte": os.path.join(build, "test", "nanogpt.pte"),
        "tokenizer/vocab.json": os.path.join(ROOT, "examples", "nanogpt", "tokenizer", "vocab.json"),
        "tokenizer/merges.txt": os.path.join(ROOT, "examples", "nanogpt", "tokenizer", "merges.txt"),
    }
    for name, src in files.items():
        dst = os.path.join(site, name)
        if not os.path.exists(dst) or os.path.getmtime(dst) < os.path.getmtime(src):
            shutil.copyfile(src, dst)
    return site


class Quiet(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".wasm": "application/wasm", ".js": "text/javascript"}

    def log_message(self, *args) -> None:  # keep the test's output short
        pass


def _pipe_fds(commands: int, replies: int) -> None:
    """In the child: the pipe's ends on fds 3 and 4 (moved above 10 first, so
    neither is overwritten by the other)."""
    high_c = fcntl.fcntl(commands, fcntl.F_DUPFD, 10)
    high_r = fcntl.fcntl(replies, fcntl.F_DUPFD, 10)
    os.dup2(high_c, 3)
    os.dup2(high_r, 4)


class DevTools:
    """The DevTools protocol over Chromium's pipe: JSON messages ending in NUL,
    commands on fd 3 of the browser, replies and events on fd 4."""

    def __init__(self, chromium: str, user_dir: str) -> None:
        to_browser_r, self._w = os.pipe()
        self._r, from_browser_w = os.pipe()
        self.proc = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--no-first-run", "--no-default-browser-check", f"--user-data-dir={user_dir}",
             "--remote-debugging-pipe", "--window-size=1000,760", "about:blank"],
            close_fds=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=functools.partial(_pipe_fds, to_browser_r, from_browser_w))
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buf = b""
        self._id = 0

    def call(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        while True:
            while b"\0" not in self._buf:
                chunk = os.read(self._r, 1 << 20)
                if not chunk:
                    raise RuntimeError(f"chromium closed the DevTools pipe during {method}")
                self._buf += chunk
            raw, self._buf = self._buf.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (RuntimeError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        os.close(self._w)
        os.close(self._r)


def non_blank(png: bytes) -> tuple[bool, str]:
    from PIL import Image

    img = Image.open(io.BytesIO(png)).convert("L")
    hist = img.histogram()
    dark = sum(hist[:128])  # text pixels
    colors = sum(1 for n in hist if n)
    return dark > 500 and colors > 8, f"{img.size[0]}x{img.size[1]}, {dark} dark pixels, {colors} grey levels"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("--timeout", type=float, default=180)
    ap.add_argument("--serve", type=int, nargs="?", const=8000, metavar="PORT",
                    help="only assemble the site and serve it on 127.0.0.1:PORT (default 8000)")
    a = ap.parse_args()
    if a.serve is not None:
        site = assemble(a.build)
        server = http.server.ThreadingHTTPServer(("127.0.0.1", a.serve),
                                                 functools.partial(Quiet, directory=site))
        print(f"serving {site} at http://127.0.0.1:{a.serve}/ (Ctrl-C stops)")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        return 0
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("test_browser: no chromium")
        return 1
    with open(os.path.join(a.build, "test", "greedy.json")) as f:
        greedy = json.load(f)
    site = assemble(a.build)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             functools.partial(Quiet, directory=site))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    query = urllib.parse.urlencode({"prompt": greedy["prompt"], "tokens": greedy["max_new_tokens"],
                                    "temperature": 0, "autorun": 1})
    url = f"http://127.0.0.1:{server.server_address[1]}/index.html?{query}"

    user_dir = tempfile.mkdtemp(prefix="ember-chromium-")
    dt = DevTools(chromium, user_dir)
    try:
        target = dt.call("Target.createTarget", {"url": url})["targetId"]
        session = dt.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]

        def js(expr: str):
            r = dt.call("Runtime.evaluate", {"expression": expr, "returnByValue": True}, session)
            return r.get("result", {}).get("value")

        start = time.time()
        state = None
        while time.time() - start < a.timeout:
            state = js("document.getElementById('status') && document.getElementById('status').dataset.state")
            if state in ("done", "error"):
                break
            time.sleep(0.25)
        status = js("document.getElementById('status').textContent")
        text = js("(document.getElementById('generated') || {}).textContent || ''")
        shot = base64.b64decode(dt.call("Page.captureScreenshot", {"format": "png"}, session)["data"])
    finally:
        dt.close()
        server.shutdown()
        shutil.rmtree(user_dir, ignore_errors=True)

    shot_path = os.path.join(a.build, "web-screenshot.png")
    with open(shot_path, "wb") as f:
        f.write(shot)
    print(f"test_browser: page status: {status}")
    print(f"test_browser: generated: {text!r}")
    if state != "done":
        print(f"test_browser: FAIL: the page did not finish generating within {a.timeout:.0f} s (state {state})")
        return 1
    if text != greedy["text"]:
        print(f"test_browser: FAIL: eager PyTorch's greedy text is {greedy['text']!r}")
        return 1
    ok, what = non_blank(shot)
    print(f"test_browser: screenshot {shot_path}: {what}")
    if not ok:
        print("test_browser: FAIL: the screenshot is blank")
        return 1
    print("test_browser: the page's greedy text matches eager PyTorch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
