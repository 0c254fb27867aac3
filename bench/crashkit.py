"""What the crash scripts (proxy_crash.py, store_crash.py) share: a free
loopback port, a small HTTP call, and starting Cairn until it is ready."""

import json
import socket
import subprocess
import time
import urllib.error
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(method, url, body=None, headers=None, timeout=10, content_type="application/json"):
    """(status, bytes); `body` is bytes as given, anything else is sent as JSON."""
    data = body if body is None or isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if data is not None:
        req.add_header("content-type", content_type)
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.status, r.read()


def start(binary, port, data, *extra):
    """Starts `cairn serve` on `port` over `data`; answers (process, seconds to ready)."""
    proc = subprocess.Popen([binary, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", data, *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started = time.perf_counter()
    while True:
        try:
            http("GET", f"http://127.0.0.1:{port}/readyz", timeout=1)
            return proc, time.perf_counter() - started
        except (OSError, urllib.error.URLError):
            if proc.poll() is not None:
                raise SystemExit(f"cairn exited with {proc.returncode} at start")
            if time.perf_counter() - started > 60:
                raise SystemExit("cairn did not get ready within 60 s")
            time.sleep(0.01)
