"""Streaming a large upload from a generator with bounded client memory.

CAIRN_PY_BIG_MIB sets the size (default 256 MiB; the issue's run: CAIRN_PY_BIG_MIB=1024).
The peak growth of this process's resident memory (sampled from /proc) and the peak of
Python allocations (tracemalloc) during the upload must stay under 64 MiB.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import resource
import threading
import time
import tracemalloc
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest

from cairn_client import AsyncCairn, Cairn
from conftest import Server

MIB = 1 << 20
LIMIT = 64 * MIB
SIZE_MIB = int(os.environ.get("CAIRN_PY_BIG_MIB", "256"))


def rss() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class Sampler:
    def __init__(self) -> None:
        self.base = rss()
        self.peak = self.base
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, rss())

    def __enter__(self) -> Sampler:
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._t.join()
        self.peak = max(self.peak, rss())

    @property
    def growth(self) -> int:
        return self.peak - self.base


def make_block(salt: str) -> bytes:
    line = f"{salt} streamed upload line with some payload text 0123456789 abcdefghij\n".encode()
    return (line * (MIB // len(line) + 1))[:MIB - 64]


def chunk(i: int, block: bytes) -> bytes:
    head = f"chunk {i:08d}\n".encode()
    return (head + block + b"\n" * 64)[:MIB]


def test_big_streamed_upload_sync(bulk_server: Server) -> None:
    block = make_block(uuid.uuid4().hex)
    digest = hashlib.sha256()

    def gen() -> Iterator[bytes]:
        for i in range(SIZE_MIB):
            data = chunk(i, block)
            digest.update(data)
            yield data

    with Cairn(bulk_server.url) as c:
        c.health()
        tracemalloc.start()
        t0 = time.monotonic()
        with Sampler() as s:
            r = c.put(gen(), type="TOOL_OUTPUT", subtype="big")
        elapsed = time.monotonic() - t0
        _, traced_peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    print(
        f"\nsync upload of {SIZE_MIB} MiB: {elapsed:.1f} s ({SIZE_MIB / elapsed:.0f} MiB/s), "
        f"RSS growth {s.growth / MIB:.1f} MiB, traced peak {traced_peak / MIB:.1f} MiB"
    )
    assert r["bytes"] == SIZE_MIB * MIB
    assert r["id"] == digest.hexdigest()
    assert s.growth < LIMIT, f"RSS grew by {s.growth / MIB:.1f} MiB"
    assert traced_peak < LIMIT


def test_big_streamed_upload_async(bulk_server: Server) -> None:
    size = min(SIZE_MIB, 64)
    block = make_block(uuid.uuid4().hex)

    async def agen() -> AsyncIterator[bytes]:
        for i in range(size):
            yield chunk(i, block)

    async def main() -> int:
        async with AsyncCairn(bulk_server.url) as c:
            r = await c.put(agen())
            return r["bytes"]

    with Sampler() as s:
        n = asyncio.run(main())
    assert n == size * MIB
    assert s.growth < LIMIT, f"RSS grew by {s.growth / MIB:.1f} MiB"
