"""A real Cairn server for the tests: the binary at $CAIRN_BIN (default target/debug/cairn of
this repository), on a free loopback port, with a temporary data directory."""

from __future__ import annotations

import os
import pathlib
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
DEFAULT_BIN = REPO / "target" / "debug" / "cairn"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    url: str
    data_dir: pathlib.Path
    process: subprocess.Popen[bytes]
    log: pathlib.Path

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_server(tmp: pathlib.Path, *args: str) -> Server:
    binary = os.environ.get("CAIRN_BIN") or str(DEFAULT_BIN)
    if not os.path.exists(binary):
        pytest.fail(f"no Cairn binary at {binary} (set CAIRN_BIN)")
    port = _free_port()
    data = tmp / "data"
    data.mkdir(parents=True, exist_ok=True)
    log = tmp / "server.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    env.setdefault("RUST_LOG", "warn")
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [binary, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", str(data), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"cairn exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return Server(url, data, proc, log)
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    pytest.fail(f"cairn did not answer within 60 s:\n{log.read_text()[-4000:]}")


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """An open server (no keys): one `default` namespace."""
    srv = start_server(tmp_path_factory.mktemp("cairn-open"))
    yield srv
    srv.stop()


KEYS = "key-alpha:alpha,key-beta-1:beta,key-budget:budget"


@pytest.fixture(scope="session")
def keyed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server with API keys, a 1 MiB upload cap and a tiny token budget for `budget`."""
    srv = start_server(
        tmp_path_factory.mktemp("cairn-keyed"),
        "--api-keys",
        KEYS,
        "--max-upload-bytes",
        str(1 << 20),
        "--budgets",
        "budget:tokens=100",
    )
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def bulk_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server of its own for the big uploads, full-text indexing off (so indexing hundreds
    of MiB does not slow the other tests' searches)."""
    srv = start_server(tmp_path_factory.mktemp("cairn-bulk"), "--search-index", "false")
    yield srv
    srv.stop()


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # Tests pass URLs and keys explicitly; nothing from the caller's shell leaks in.
    monkeypatch.delenv("CAIRN_URL", raising=False)
    monkeypatch.delenv("CAIRN_API_KEY", raising=False)
