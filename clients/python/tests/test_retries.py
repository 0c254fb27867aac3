"""Retries against a real tiny local HTTP server that answers 503 (or 429, or a reset) first."""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from cairn_client import (
    AsyncCairn,
    BudgetExceededError,
    Cairn,
    RateLimitedError,
    UnavailableError,
)

ID = "ab" * 32
MEMORY = {"id": ID, "uri": f"mem://{ID}", "type": "TOOL_OUTPUT", "bytes": 3}
Reply = tuple[int, dict[str, str], bytes] | str


class Scripted(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.script: list[Reply] = []
        self.requests: list[tuple[str, str, int]] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def next_reply(self, method: str, path: str, size: int) -> Reply:
        with self.lock:
            self.requests.append((method, path, size))
            if self.script:
                return self.script.pop(0)
        status = 201 if method == "POST" else 204 if method == "DELETE" else 200
        return (status, {}, b"" if status == 204 else json.dumps(MEMORY).encode())


def unavailable(retry_after: str | None = None) -> Reply:
    headers = {"Retry-After": retry_after} if retry_after else {}
    return (503, headers, b'{"error": {"code": "unavailable", "message": "try again"}}')


class Handler(BaseHTTPRequestHandler):
    server: Scripted
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def _body(self) -> int:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            total = 0
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return total
                self.rfile.read(size)
                self.rfile.readline()
                total += size
        n = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(n)
        return n

    def _handle(self) -> None:
        size = self._body()
        reply = self.server.next_reply(self.command, self.path, size)
        if reply == "reset":
            # Close with an RST, no answer: a connection reset for the client.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return
        assert not isinstance(reply, str)
        status, headers, body = reply
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_DELETE = do_PUT = _handle


@pytest.fixture()
def scripted() -> Iterator[Scripted]:
    srv = Scripted()
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def fast(url: str, **kw: Any) -> Cairn:
    return Cairn(url, backoff=0.01, max_backoff=2.0, **kw)


def test_get_is_retried_after_503(scripted: Scripted) -> None:
    scripted.script = [unavailable(), unavailable()]
    with fast(scripted.url) as c:
        assert c.get(ID)["id"] == ID
    assert [r[0] for r in scripted.requests] == ["GET", "GET", "GET"]


def test_delete_and_reads_are_retried(scripted: Scripted) -> None:
    scripted.script = [unavailable(), (204, {}, b"")]
    with fast(scripted.url) as c:
        c.delete(ID)
    assert [r[0] for r in scripted.requests] == ["DELETE", "DELETE"]


def test_post_put_is_not_retried(scripted: Scripted) -> None:
    scripted.script = [unavailable()]
    with fast(scripted.url) as c:
        with pytest.raises(UnavailableError) as e:
            c.put(b"abc")
    assert e.value.status == 503 and e.value.code == "unavailable"
    assert [r[:2] for r in scripted.requests] == [("POST", "/v1/memories")]


def test_put_retried_only_when_opted_in_and_replayable(scripted: Scripted) -> None:
    scripted.script = [unavailable()]
    with fast(scripted.url, retry_put=True) as c:
        assert c.put(b"abc")["id"] == ID
    assert [(r[0], r[2]) for r in scripted.requests] == [("POST", 3), ("POST", 3)]

    scripted.requests.clear()
    scripted.script = [unavailable()]
    with fast(scripted.url, retry_put=True) as c:
        with pytest.raises(UnavailableError):
            c.put(iter([b"a", b"b"]))  # a one-shot stream cannot be sent again
    assert len(scripted.requests) == 1


def test_usage_is_not_retried(scripted: Scripted) -> None:
    scripted.script = [unavailable()]
    with fast(scripted.url) as c:
        with pytest.raises(UnavailableError):
            c.usage("gpt-4o", 1, 1)
    assert len(scripted.requests) == 1


def test_retry_after_is_honoured(scripted: Scripted) -> None:
    scripted.script = [(429, {"Retry-After": "1"}, b'{"error": {"code": "rate_limited", "message": "slow down"}}')]
    with fast(scripted.url) as c:
        t0 = time.monotonic()
        c.get(ID)
        assert time.monotonic() - t0 >= 0.95
    assert len(scripted.requests) == 2


def test_no_retry_for_a_spent_budget_or_a_long_retry_after(scripted: Scripted) -> None:
    body = b'{"error": {"code": "budget_exceeded", "message": "spent", "budget": "tokens"}}'
    scripted.script = [(429, {"Retry-After": "1"}, body)]
    with fast(scripted.url) as c:
        with pytest.raises(BudgetExceededError) as e:
            c.governor(tokens=5)
    assert e.value.details["budget"] == "tokens" and len(scripted.requests) == 1

    scripted.requests.clear()
    scripted.script = [(429, {"Retry-After": "3600"}, b'{"error": {"code": "rate_limited", "message": "x"}}')]
    with fast(scripted.url) as c:
        with pytest.raises(RateLimitedError) as r:
            c.get(ID)
    assert r.value.retry_after == 3600 and len(scripted.requests) == 1


def test_gives_up_after_max_retries(scripted: Scripted) -> None:
    scripted.script = [unavailable() for _ in range(10)]
    with fast(scripted.url, max_retries=2) as c:
        with pytest.raises(UnavailableError):
            c.stats()
    assert len(scripted.requests) == 3


def test_connection_reset_is_retried_for_reads_only(scripted: Scripted) -> None:
    scripted.script = ["reset"]
    with fast(scripted.url) as c:
        assert c.get(ID)["id"] == ID
    assert len(scripted.requests) == 2

    scripted.requests.clear()
    scripted.script = ["reset"]
    from cairn_client import CairnConnectionError

    with fast(scripted.url) as c:
        with pytest.raises(CairnConnectionError):
            c.put(b"abc")
    assert len(scripted.requests) == 1


def test_non_json_error_body(scripted: Scripted) -> None:
    scripted.script = [(502, {}, b"<html>bad gateway</html>")]
    from cairn_client import CairnError

    with fast(scripted.url) as c:
        with pytest.raises(CairnError) as e:
            c.get(ID)
    assert e.value.code == "http_502" and "bad gateway" in e.value.message


def test_async_retries(scripted: Scripted) -> None:
    async def main() -> None:
        scripted.script = [unavailable(), "reset"]
        async with AsyncCairn(scripted.url, backoff=0.01) as c:
            assert (await c.get(ID))["id"] == ID
        assert len(scripted.requests) == 3
        scripted.requests.clear()
        scripted.script = [unavailable()]
        async with AsyncCairn(scripted.url, backoff=0.01) as c:
            with pytest.raises(UnavailableError):
                await c.put(b"abc")
        assert len(scripted.requests) == 1

    asyncio.run(main())
