"""Every method of the sync client against a real server (no mocked HTTP)."""

from __future__ import annotations

import hashlib
import io
import json
import pathlib
import tarfile
import time
import uuid
from collections.abc import Iterator

import pytest

from cairn_client import (
    BudgetExceededError,
    Cairn,
    CairnConnectionError,
    CairnError,
    InvalidRequestError,
    InvalidUriError,
    MemUri,
    NotFoundError,
    PayloadTooLargeError,
    QueryError,
    UnauthorizedError,
    parse_uri,
)
from conftest import Server


def uniq() -> str:
    return uuid.uuid4().hex


@pytest.fixture()
def cairn(server: Server) -> Iterator[Cairn]:
    with Cairn(server.url) as c:
        yield c


def numbered(n: int, tag: str) -> str:
    return "".join(f"{tag} line {i} {'ERROR disk full' if i % 97 == 0 else 'ok'}\n" for i in range(1, n + 1))


# ------------------------------------------------------------------ put / get / delete


def test_put_str_with_every_field(cairn: Cairn) -> None:
    tag = uniq()
    text = numbered(50, tag)
    r = cairn.put(
        text,
        type="TOOL_OUTPUT",
        subtype="pytest",
        mime="text/x-log",
        title="a title",
        tags=["ci", "nightly"],
        thread=f"t-{tag}",
        checkpoint=f"c-{tag}",
        directory=f"/d/{tag}",
    )
    assert r["id"] == hashlib.sha256(text.encode()).hexdigest()
    assert r["uri"] == "mem://" + r["id"]
    assert (r["type"], r["subtype"], r["mime"], r["title"]) == ("TOOL_OUTPUT", "pytest", "text/x-log", "a title")
    assert r["tags"] == ["ci", "nightly"]
    assert (r["thread"], r["checkpoint"], r["directory"]) == (f"t-{tag}", f"c-{tag}", f"/d/{tag}")
    assert r["lines"] == 50 and r["bytes"] == len(text.encode())
    assert r["deduplicated"] is False
    again = cairn.put(text)
    assert again["deduplicated"] is True and again["id"] == r["id"]

    m = cairn.get(r["id"])
    assert m["title"] == "a title" and m["summary"]
    assert cairn.get(r["uri"])["id"] == r["id"]          # a mem:// URI
    assert cairn.get(r["id"][:12])["id"] == r["id"]      # a 12-character prefix
    assert cairn.get(r)["id"] == r["id"]                 # an answer


def test_put_bytes_path_file_and_iterators(cairn: Cairn, tmp_path: pathlib.Path) -> None:
    data = (uniq() + "\n").encode() * 1000
    assert cairn.put(data)["bytes"] == len(data)
    p = tmp_path / "f.log"
    p.write_bytes(data + b"path\n")
    r = cairn.put(p, title="from a path")
    assert r["bytes"] == len(data) + 5 and r["title"] == "from a path"
    assert cairn.put_file(str(p))["id"] == r["id"]
    with open(p, "rb") as f:
        assert cairn.put(f)["id"] == r["id"]
    assert cairn.put(io.BytesIO(data + b"bio\n"))["bytes"] == len(data) + 4

    def chunks() -> Iterator[bytes]:
        for i in range(50):
            yield f"{i} {uniq()}\n".encode() * 100

    r = cairn.put(chunks())
    assert r["lines"] == 5000
    r2 = cairn.put(iter(["héllo\n", "wörld\n"]))
    assert cairn.read_content(r2["id"]) == "héllo\nwörld\n".encode()


def test_a_large_put_answers_with_the_estimate_then_settles(cairn: Cairn) -> None:
    text = numbered(8000, uniq())  # ~200 KB, over CAIRN_EXACT_TOKENS_AFTER_BYTES
    r = cairn.put(text)
    assert r["tokens_settling"] is True and r["token_method"] == "estimate:bytes/4"
    deadline = time.monotonic() + 10
    while (m := cairn.get(r["id"]))["token_method"] != "exact:o200k_base":
        assert time.monotonic() < deadline, "the count never settled"
        time.sleep(0.05)
    assert m["tokens"] != r["tokens"] and "exact:o200k_base" in m["summary"]
    assert m["tokens_settling"] is False
    assert cairn.put(numbered(50, uniq()))["tokens_settling"] is False


def test_json_content_is_stored_raw(cairn: Cairn) -> None:
    doc = json.dumps({"content": "not a put body", "k": uniq()})
    r = cairn.put(doc, mime="application/json")
    assert r["mime"] == "application/json"
    assert cairn.read_content(r["id"]) == doc.encode()


def test_delete(cairn: Cairn) -> None:
    r = cairn.put(uniq())
    cairn.delete(r["id"])
    with pytest.raises(NotFoundError):
        cairn.get(r["id"])


# ------------------------------------------------------------------ reading


def test_content_stream_range_and_download(cairn: Cairn, tmp_path: pathlib.Path) -> None:
    data = numbered(20000, uniq()).encode()
    r = cairn.put(data)
    got = b"".join(cairn.iter_content(r["id"], chunk_size=4096))
    assert got == data
    assert b"".join(cairn.iter_content(r["id"], byte_range=(10, 19))) == data[10:20]
    assert b"".join(cairn.iter_content(r["id"], byte_range=(len(data) - 5, None))) == data[-5:]
    dest = tmp_path / "out"
    assert cairn.download(r["id"], dest) == len(data)
    assert dest.read_bytes() == data
    buf = io.BytesIO()
    cairn.download(r["uri"], buf)
    assert buf.getvalue() == data


def test_lines_bytes_chunks(cairn: Cairn) -> None:
    text = numbered(3000, uniq())
    r = cairn.put(text)
    lines = text.splitlines(keepends=True)
    s = cairn.lines(r["id"], 400, 520)
    assert (s["start"], s["end"], s["total_lines"]) == (400, 520, 3000)
    assert s["text"] == "".join(lines[399:520])
    assert s["next"] is not None and parse_uri(s["next"]).start == 521
    d = cairn.lines(r["id"])
    assert (d["start"], d["end"]) == (1, 200)

    b = cairn.byte_slice(r["id"], 100, 50)
    assert b["text"] == text.encode()[100:150].decode()
    c0 = cairn.chunk(r["id"], 0)
    assert text.startswith(c0["text"]) and c0["chunk"] == 0
    m = cairn.get(r["id"])
    chunks = [cairn.chunk(r["id"], n)["text"] for n in range(m["chunks"])]
    assert "".join(chunks) == text
    with pytest.raises(InvalidRequestError) as e:
        cairn.lines(r["id"], 1, 3000)
    assert e.value.code == "slice_too_large" and e.value.details["limit"] == "max_slice_lines"


def test_token_budgeted_slices_reassemble(cairn: Cairn) -> None:
    text = numbered(2500, uniq()) + "x" * 5000 + "\n" + numbered(10, "tail")
    r = cairn.put(text)
    s = cairn.lines(r["id"], 1, max_tokens=300)
    assert s["tokens"] is not None and s["tokens"] <= 300 and s["method"]
    pages = list(cairn.iter_slices(r["id"], max_tokens=300))
    assert len(pages) > 10
    assert all((p.get("tokens") or 0) <= 300 for p in pages)
    assert "".join(p["text"] for p in pages) == text
    # line windows, and a URI with a range as a starting point
    windows = list(cairn.iter_slices(r["id"]))
    assert "".join(p["text"] for p in windows) == text
    part = list(cairn.iter_slices(r["uri"] + "#L100-", max_tokens=1000))
    assert "".join(p["text"] for p in part) == "".join(text.splitlines(keepends=True)[99:])
    capped = list(cairn.iter_slices(r["id"], 1, 450, max_tokens=300))
    assert capped[-1]["end"] == 450 and len(capped) > 3
    assert "".join(p["text"] for p in capped) == "".join(text.splitlines(keepends=True)[:450])


def test_fetch_uris(cairn: Cairn) -> None:
    text = numbered(300, uniq())
    r = cairn.put(text)
    lines = text.splitlines(keepends=True)
    assert cairn.fetch(f"{r['uri']}#L10-20")["text"] == "".join(lines[9:20])
    assert cairn.fetch(f"{r['uri']}#L295-")["text"] == "".join(lines[294:])
    assert cairn.fetch(f"{r['uri']}?offset=5&len=7")["text"] == text[5:12]
    s = cairn.fetch(r["uri"], max_tokens=64)
    assert s["tokens"] is not None and s["tokens"] <= 64
    assert cairn.fetch(MemUri(r["id"], start=3, end=3))["text"] == lines[2]
    with pytest.raises(InvalidUriError):
        cairn.fetch("http://example.com")


def test_uri_parser() -> None:
    i = "ab" * 32
    assert parse_uri(f"mem://{i}") == MemUri(i)
    assert parse_uri(f"mem://{i}").is_whole
    u = parse_uri(f"mem://{i}#L4-9")
    assert (u.start, u.end) == (4, 9) and str(u) == f"mem://{i}#L4-9"
    u = parse_uri(f"mem://{i}?max_tokens=200#L432-")
    assert (u.start, u.end, u.max_tokens) == (432, None, 200)
    assert str(u) == f"mem://{i}?max_tokens=200#L432-"
    u = parse_uri(f"mem://{i[:12]}?offset=10&len=4&max_tokens=50&model=gpt-4")
    assert (u.id, u.offset, u.length, u.max_tokens, u.model) == (i[:12], 10, 4, 50, "gpt-4")
    assert parse_uri(str(u)) == u
    for bad in ["mem://xyz", "mem://abc", f"mem://{i}#X1-2", f"mem://{i}?foo=1", f"mem://{i}?offset=a", "file:///x"]:
        with pytest.raises(InvalidUriError):
            parse_uri(bad)


# ------------------------------------------------------------------ grep, query, search, list, refs


def test_grep_and_paging(cairn: Cairn) -> None:
    text = numbered(2000, uniq())
    r = cairn.put(text)
    g = cairn.grep(r["id"], "ERROR disk", fixed=True, context=1)
    expected = [i for i in range(1, 2001) if i % 97 == 0]
    assert [m["line"] for m in g["matches"]] == expected
    assert g["matches"][0]["before"] and g["next"] is None
    assert cairn.grep(r["id"], "error DISK", ignore_case=True, fixed=True)["matches"][0]["line"] == 97
    page = cairn.grep(r["id"], "ERROR", max_matches=5)
    assert len(page["matches"]) == 5 and page["next"] == 5 * 97
    assert [m["line"] for m in cairn.iter_grep(r["id"], "ERROR", max_matches=3)] == expected
    assert [m["line"] for m in cairn.grep(r["id"], "ERROR", after=1000)["matches"]] == [i for i in expected if i > 1000]
    with pytest.raises(InvalidRequestError):
        cairn.grep(r["id"], "(unclosed")


def test_grep_across_paging(cairn: Cairn) -> None:
    word = "needle" + uniq()
    thread = "grep-" + uniq()
    ids = [cairn.put(f"{word} in memory {i}\nother\n{word} again\n", thread=thread)["id"] for i in range(5)]
    page = cairn.grep_across(word, thread=thread, memories=2)
    assert len(page["results"]) == 2 and page["next_cursor"]
    found = list(cairn.iter_grep_across(word, thread=thread, memories=2))
    assert {m["id"] for m in found} == set(ids)
    assert sum(len(m["matches"]) for m in found) == 10
    few = list(cairn.iter_grep_across(word, thread=thread, max_matches=3))
    assert sum(len(m["matches"]) for m in few) == 10


def test_query(cairn: Cairn) -> None:
    k = uniq()
    r = cairn.put("".join(json.dumps({"n": i, "k": k}) + "\n" for i in range(10)))
    q = cairn.query(r["id"], "select(.n > 6) | .n")
    assert q["results"] == [7, 8, 9] and q["inputs"] == 10 and q["truncated"] is False
    with pytest.raises(InvalidRequestError) as e:
        cairn.query(r["id"], ".[[[")
    assert e.value.code == "invalid_field"
    nj = cairn.put("not json " + uniq())
    with pytest.raises(QueryError) as qe:
        cairn.query(nj["id"], ".")
    assert qe.value.code == "not_json" and qe.value.status == 422


def test_search(cairn: Cairn) -> None:
    word = "zebra" + uniq()[:10]
    thread = "s-" + uniq()
    r = cairn.put(f"first line\nthe {word} was here\n", thread=thread, title="zoo")
    res = cairn.search(word, wait_ms=10000)
    assert res.get("indexed") is True
    assert res["results"][0]["id"] == r["id"]
    hit = res["results"][0]["hits"][0]
    assert hit["line"] == 2 and word in hit["text"]
    assert cairn.search(word, thread="other-" + thread, wait_ms=10000)["results"] == []
    with pytest.raises(InvalidRequestError) as e:
        cairn.search('"unclosed', wait_ms=0)
    assert e.value.code == "invalid_query"


def test_list_pages_to_the_end(cairn: Cairn) -> None:
    thread = "list-" + uniq()
    ids = [cairn.put(f"memory {i} {uniq()}", thread=thread, type="NOTE")["id"] for i in range(7)]
    page = cairn.list_memories(thread=thread, limit=3)
    assert len(page["memories"]) == 3 and page["next_cursor"]
    seen = [m["id"] for m in cairn.iter_memories(thread=thread, page_size=3)]
    assert seen == list(reversed(ids))  # newest first, every one once
    assert [m["id"] for m in cairn.iter_memories(thread=thread, type="OTHER")] == []
    assert len(list(cairn.iter_memories(thread=thread, since=0))) == 7


def test_refs(cairn: Cairn) -> None:
    thread = "refs-" + uniq()
    a = cairn.put("ref one " + uniq(), thread=thread, title="one")
    b = cairn.put("ref two " + uniq(), thread=thread, title="two")
    refs = cairn.refs(thread=thread)["refs"]
    assert [x["id"] for x in refs] == [b["id"], a["id"]]
    assert refs[0]["summary_line"]
    assert len(cairn.refs(thread=thread, limit=1)["refs"]) == 1
    with pytest.raises(InvalidRequestError):
        cairn.refs()


# ------------------------------------------------------------------ context management


def _messages(big: str) -> list[dict[str, object]]:
    return [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "run the tests"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "pytest", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": big},
        {"role": "assistant", "content": "done"},
    ]


def test_compress_governor_tokens(cairn: Cairn) -> None:
    big = numbered(2000, uniq())
    out = cairn.compress(_messages(big), strategy="pointer", model="gpt-4.1")
    assert out["format"] == "openai"
    ref = out["memory_refs"][0]
    assert out["messages"][3]["content"].startswith("[cairn: offloaded")
    assert cairn.read_content(ref["id"]) == big.encode()
    assert out["report"]["tokens_saved"] > 0

    gov = cairn.governor(tokens=45000)
    assert gov["tier"] == "pointer_only" and gov["limits"]["warn"] == 20000
    gov = cairn.governor(_messages(big), model="gpt-4.1", apply=True)
    assert gov["tier"] in ("normal", "warn", "pointer_only") and "tokens_after_compression" in gov

    t = cairn.tokens("hello world")
    assert t["tokens"] == 2 and t["exact"] is True
    tm = cairn.tokens(messages=[{"role": "user", "content": "hi"}], model="gpt-4o")
    assert tm["tokens"] > 1
    with pytest.raises(InvalidRequestError) as e:
        cairn.compress([{"role": "nobody"}], "pointer")
    assert e.value.code in ("invalid_messages", "invalid_field", "invalid_request")


def test_usage_and_stats(cairn: Cairn) -> None:
    u = cairn.usage("gpt-4o", 1000, 100, estimated_input_tokens=900)
    assert u["cost_usd"] > 0 and u["today"]["tokens"] >= 1100
    s = cairn.stats()
    assert s["memories"] >= 1
    assert cairn.health()["status"] == "ok"


# ------------------------------------------------------------------ export / import


def test_export_import_roundtrip(keyed_server: Server, tmp_path: pathlib.Path) -> None:
    with Cairn(keyed_server.url, api_key="key-alpha") as alpha, Cairn(keyed_server.url, api_key="key-beta-1") as beta:
        texts = [f"export me {i} {uniq()}\n" * 50 for i in range(3)]
        ids = [alpha.put(t, title=f"e{i}")["id"] for i, t in enumerate(texts)]
        archive = tmp_path / "alpha.tar"
        n = alpha.export(archive)
        assert n == archive.stat().st_size > 0
        with tarfile.open(archive) as tar:
            names = tar.getnames()
        assert "manifest.json" in names and all(f"objects/{i}" in names for i in ids)
        streamed = b"".join(alpha.iter_export())
        assert len(streamed) == n

        res = beta.import_archive(archive)
        assert res["imported"] >= 3 and res["memories"] >= 3
        for i, t in zip(ids, texts):
            assert beta.read_content(i) == t.encode()
            assert beta.get(i)["title"] is not None
        again = beta.import_archive(io.BytesIO(archive.read_bytes()))
        assert again["imported"] == 0
        # a chunk iterator, streamed
        def chunks() -> Iterator[bytes]:
            with open(archive, "rb") as f:
                while block := f.read(1000):
                    yield block
        assert beta.import_archive(chunks())["imported"] == 0
        from cairn_client import InvalidArchiveError
        with pytest.raises(InvalidArchiveError):
            beta.import_archive(b"this is not a tar archive" * 100)


# ------------------------------------------------------------------ errors


def test_error_mapping(cairn: Cairn, keyed_server: Server) -> None:
    with pytest.raises(NotFoundError) as nf:
        cairn.get("0123456789ab0123")
    assert nf.value.status == 404 and nf.value.code == "not_found"
    assert nf.value.details["id"] == "0123456789ab0123" and "no memory" in nf.value.message
    assert isinstance(nf.value, CairnError)

    with pytest.raises(InvalidRequestError) as bad:
        cairn.list_memories(limit=500)
    assert bad.value.status == 400 and bad.value.code == "invalid_request"
    assert bad.value.field == "limit"

    with pytest.raises(InvalidRequestError) as bad_id:
        cairn.get("xyz")
    assert bad_id.value.code == "invalid_id"

    with pytest.raises(InvalidRequestError) as rng:
        cairn.lines(cairn.put(uniq())["id"], max_tokens=3)
    assert rng.value.code == "invalid_range"

    with Cairn(keyed_server.url) as anon:
        with pytest.raises(UnauthorizedError) as e:
            anon.stats()
    assert e.value.status == 401 and e.value.code == "unauthorized"
    with Cairn(keyed_server.url, api_key="wrong") as wrong:
        with pytest.raises(UnauthorizedError):
            wrong.list_memories()
    with Cairn(keyed_server.url, api_key="key-alpha") as alpha:
        with pytest.raises(PayloadTooLargeError) as big:
            alpha.put(b"x" * (2 << 20))
        assert big.value.status == 413
    with Cairn(keyed_server.url, api_key="key-budget") as budget:
        with pytest.raises(BudgetExceededError) as be:
            budget.usage("gpt-4o", 500, 10)
        assert be.value.status == 429 and be.value.details["budget"] == "tokens"
        assert be.value.details["resets_at"] and be.value.retry_after is not None

    with Cairn("http://127.0.0.1:9", max_retries=1, backoff=0.01) as down:
        with pytest.raises(CairnConnectionError):
            down.stats()


def test_env_configuration(server: Server, keyed_server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAIRN_URL", keyed_server.url)
    monkeypatch.setenv("CAIRN_API_KEY", "key-alpha")
    with Cairn() as c:
        assert c.url == keyed_server.url
        assert c.stats()["memories"] >= 0
    monkeypatch.delenv("CAIRN_URL")
    monkeypatch.delenv("CAIRN_API_KEY")
    with Cairn() as c:
        assert c.url == "http://127.0.0.1:8077" and c.config.api_key is None
