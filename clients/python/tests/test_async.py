"""AsyncCairn against the real server: every method (the sync client is generated from it)."""

from __future__ import annotations

import asyncio
import io
import json
import pathlib
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator

import pytest

from cairn_client import AsyncCairn, NotFoundError, UnauthorizedError
from conftest import Server


def test_sync_client_is_generated_from_the_async_one() -> None:
    script = pathlib.Path(__file__).resolve().parents[1] / "scripts" / "unasync.py"
    assert subprocess.run([sys.executable, str(script), "--check"]).returncode == 0


def test_async_every_method(server: Server, keyed_server: Server, tmp_path: pathlib.Path) -> None:
    async def main() -> None:
        tag = uuid.uuid4().hex
        thread = "async-" + tag
        text = "".join(f"{tag} line {i}{' ERROR' if i % 50 == 0 else ''}\n" for i in range(1, 1001))
        async with AsyncCairn(server.url) as c:
            r = await c.put(text, type="TOOL_OUTPUT", subtype="x", tags=["a"], thread=thread, title="t")
            assert r["lines"] == 1000 and r["thread"] == thread

            async def agen() -> AsyncIterator[bytes]:
                for i in range(20):
                    yield f"{tag} async chunk {i}\n".encode() * 100

            r2 = await c.put(agen(), thread=thread)
            assert r2["lines"] == 2000
            p = tmp_path / "f"
            p.write_text(text + "file\n")
            assert (await c.put(p, thread=thread))["bytes"] == len(text) + 5
            assert (await c.put(io.BytesIO(b"bio " + tag.encode())))["bytes"] == 36
            assert (await c.put(iter([b"sync ", tag.encode()])))["bytes"] == 37

            assert (await c.get(r["uri"]))["title"] == "t"
            assert await c.read_content(r["id"]) == text.encode()
            assert b"".join([b async for b in c.iter_content(r["id"], byte_range=(0, 3))]) == text.encode()[:4]
            buf = io.BytesIO()
            assert await c.download(r["id"], buf) == len(text)
            assert (await c.lines(r["id"], 2, 3))["text"] == "".join(text.splitlines(True)[1:3])
            assert (await c.byte_slice(r["id"], 0, 5))["text"] == text[:5]
            assert (await c.chunk(r["id"], 0))["chunk"] == 0
            assert (await c.fetch(r["uri"] + "#L5-5"))["start"] == 5
            pages = [s async for s in c.iter_slices(r["id"], max_tokens=200)]
            assert "".join(s["text"] for s in pages) == text and len(pages) > 5

            g = await c.grep(r["id"], "ERROR")
            assert len(g["matches"]) == 20
            assert len([m async for m in c.iter_grep(r["id"], "ERROR", max_matches=7)]) == 20
            across = [m async for m in c.iter_grep_across("ERROR", thread=thread, memories=1, max_matches=6)]
            assert sum(len(m["matches"]) for m in across) == 40  # the text and the file holding it
            assert (await c.grep_across("ERROR", thread=thread))["searched"] >= 1

            j = await c.put("".join(json.dumps({"i": i}) + "\n" for i in range(5)) + tag)
            with pytest.raises(Exception):
                await c.query(j["id"], ".i")  # the trailing tag is not JSON
            j = await c.put(json.dumps({"items": [1, 2, 3], "tag": tag}))
            assert (await c.query(j["id"], ".items | add"))["results"] == [6]

            assert (await c.search(tag, wait_ms=10000))["results"]
            ids = [m["id"] async for m in c.iter_memories(thread=thread, page_size=1)]
            assert len(ids) == 3
            assert (await c.list_memories(thread=thread, limit=2))["next_cursor"]
            assert len((await c.refs(thread=thread))["refs"]) == 3

            msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": text}]
            out = await c.compress(msgs, "pointer", format="openai", threshold_chars=1000)
            assert out["memory_refs"]
            assert (await c.governor(tokens=100))["tier"] == "normal"
            assert (await c.tokens("hello world"))["tokens"] == 2
            assert (await c.usage("gpt-4o", 10, 10))["cost_usd"] >= 0
            assert (await c.stats())["memories"] >= 3
            assert (await c.health())["status"] == "ok"

            await c.delete(r2["id"])
            with pytest.raises(NotFoundError):
                await c.get(r2["id"])

        async with AsyncCairn(keyed_server.url, api_key="key-alpha") as a, AsyncCairn(
            keyed_server.url, api_key="key-beta-1"
        ) as b:
            mine = await a.put("async export " + tag)
            archive = tmp_path / "a.tar"
            n = await a.export(archive)
            assert n == archive.stat().st_size
            assert len(b"".join([x async for x in a.iter_export()])) == n
            res = await b.import_archive(archive)
            assert res["memories"] >= 1
            assert await b.read_content(mine["id"]) == ("async export " + tag).encode()
        async with AsyncCairn(keyed_server.url) as anon:
            with pytest.raises(UnauthorizedError):
                await anon.stats()

    asyncio.run(main())
