#!/usr/bin/env python3
"""A Cairn server holding recorded proxy sessions and a few telling
memories, for the console's browser tests and its page-time benchmark.

    python3 tests/console/seed.py [target/debug/cairn] [DATA_DIR]

prints what it made as JSON and serves until Ctrl-C (to look at /ui by
hand; a data dir it made itself is removed then). As a library:
`seeded = seed(binary, data_dir)`, then `stop(seeded)`.

Three keys (`CAIRN_API_KEYS`): `alpha` and `beta` namespaces and an admin
key. Through the proxy, pointed at the replay stand-in (bench/replay), it
plays three sessions of the replay corpus in `alpha` (one of 30 turns; the
stand-in fetches offloaded lines back through `memory_grep`, so exchanges
have retrieval rounds) and one in `beta`. Over REST it puts in `alpha` a
memory whose title, content and tags carry script payloads, a nested JSON
memory, and a big text memory of numbered lines (CAIRN_CONSOLE_BIG_BYTES,
default 1 GiB, streamed: never held in memory); in `beta`, one memory.
The big memory is left out of the search index unless asked
(CAIRN_CONSOLE_INDEX_BIG=1 here; `index_big` to `seed`).
"""

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
from http.client import HTTPConnection

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "replay"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import corpus as corpus_mod  # noqa: E402
import replay  # noqa: E402
from crashkit import free_port, http, start  # noqa: E402

KEYS = {"alpha": "console-key-alpha", "beta": "console-key-beta", "admin": "console-key-admin"}
API_KEYS = f"{KEYS['alpha']}:alpha,{KEYS['beta']}:beta,{KEYS['admin']}:ops:admin"
# Replay corpus sessions (corpus.py names them by index, shape and turns):
# in alpha, one of each client shape, one of them 30 turns long.
ALPHA_SESSIONS = ("s01-codex-12t", "s02-chat-14t", "s09-claude-30t")
BETA_SESSIONS = ("s00-claude-10t",)
BIG_BYTES = int(os.environ.get("CAIRN_CONSOLE_BIG_BYTES", str(1 << 30)))

XSS_TITLE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
XSS_CONTENT = """An untrusted tool output: every line below must show as text.
<script>window.__pwned=3</script>
<img src=x onerror=window.__pwned=4>
<a href="javascript:window.__pwned=5">click</a>
<svg onload=window.__pwned=6></svg>
"><iframe srcdoc="<script>parent.__pwned=7</script>"></iframe>
plain line after the payloads
"""
XSS_TAGS = ["<b>tag</b>", "xss", "onerror=alert(1)"]


def seed(binary, data_dir, index_big=False):
    """Starts Cairn over `data_dir` and fills it; answers what the tests need
    (see the module's doc), `process` being the server's Popen. Unless
    `index_big`, Cairn is restarted with `--search-index false` once the big
    memory is in: indexing 1 GiB keeps both cores busy for about a quarter
    of an hour on a debug build (search still finds everything else; grep
    reads the big memory whole)."""
    corpus = corpus_mod.build()
    sessions = {s["name"]: s for s in corpus["sessions"]}
    with tempfile.TemporaryDirectory(prefix="console-seed.") as tmp:
        corpus_path = os.path.join(tmp, "corpus.json")
        with open(corpus_path, "w") as f:
            json.dump(corpus, f)
        standin, standin_port = replay.start_standin(corpus_path)
        try:
            upstream = f"http://127.0.0.1:{standin_port}"
            process, base = start_cairn(binary, data_dir, upstream)
            try:
                for namespace, names in (("alpha", ALPHA_SESSIONS), ("beta", BETA_SESSIONS)):
                    for name in names:
                        played = replay.play(base, sessions[name], corpus["outputs"],
                                             headers={"X-Cairn-Key": KEYS[namespace]})
                        if played["errors"]:
                            raise RuntimeError(f"{name} through Cairn: {played['errors']}")
                        log(f"played {name} in {namespace}: {played['requests']} requests "
                            f"in {played['seconds']:.0f} s")
            except BaseException:
                stop({"process": process})
                raise
        finally:
            standin.terminate()
            standin.wait(10)
    try:
        seeded = describe(base, data_dir)
    except BaseException:
        stop({"process": process})
        raise
    if not index_big:
        stop({"process": process})
        process, _ = start_cairn(binary, data_dir, upstream, base.rsplit(":", 1)[1], "--search-index", "false")
    return dict(seeded, big_indexed=index_big, process=process)


def start_cairn(binary, data_dir, standin, port=None, *extra):
    """`cairn serve` with the three keys, its proxy upstreams the stand-in."""
    port = port or free_port()
    previous = os.environ.get("CAIRN_API_KEYS")
    os.environ["CAIRN_API_KEYS"] = API_KEYS  # crashkit.start passes its environment on
    try:
        process, _ = start(binary, port, data_dir, "--upstream-anthropic-url", standin,
                           "--upstream-openai-url", standin + "/v1", *extra)
    finally:
        if previous is None:
            del os.environ["CAIRN_API_KEYS"]
        else:
            os.environ["CAIRN_API_KEYS"] = previous
    return process, f"http://127.0.0.1:{port}"


def describe(base, data_dir):
    """Puts the memories and reads the ledger back: the seed's JSON part."""
    time.sleep(1.5)  # the ledger writes in one-second batches
    alpha = exchanges(base, KEYS["alpha"])
    counts = {}
    for x in alpha:
        counts[x["thread"]] = counts.get(x["thread"], 0) + 1
    with_piece = next((x for x in alpha if x["pieces"]), None)
    if with_piece is None:
        raise RuntimeError("no exchange in alpha took a piece out")
    with_retrieval = next((x for x in alpha if any(r["retrievals"] for r in x["rounds"])), None)
    json_memory = put(base, KEYS["alpha"], {"content": json.dumps(nested_json(), indent=2),
                                            "mime": "application/json", "type": "TOOL_OUTPUT",
                                            "subtype": "inventory", "title": "inventory as JSON",
                                            "tags": ["json", "console"]})
    xss = put(base, KEYS["alpha"], {"content": XSS_CONTENT, "title": XSS_TITLE, "tags": XSS_TAGS,
                                    "type": "WEB_SCRAPE"})
    beta_memory = put(base, KEYS["beta"], {"content": "the beta namespace's secret: 7e3 beta-only\n",
                                           "title": "beta secret memory", "tags": ["beta"]})
    # The search index takes objects in turn: the small ones are indexed
    # before the big one is put (which keeps the indexer busy for minutes).
    for key in (KEYS["alpha"], KEYS["beta"]):
        indexed = json.loads(http("GET", base + "/v1/search?q=seed&limit=1&wait_ms=10000", headers=bearer(key),
                                  timeout=30)[1])["indexed"]
        if not indexed:
            raise RuntimeError("the search index did not catch up within 10 s")
    big_started = time.perf_counter()
    big = put_big(base, KEYS["alpha"], BIG_BYTES)
    big_seconds = time.perf_counter() - big_started
    log(f"put {big['bytes']} bytes ({big['lines']} lines) in {big_seconds:.0f} s")
    beta_threads = {x["thread"] for x in exchanges(base, KEYS["beta"])}
    return {
        "base": base,
        "data_dir": data_dir,
        "keys": dict(KEYS),
        "threads": list(dict.fromkeys(x["thread"] for x in alpha)),  # newest first
        "exchanges_per_thread": counts,
        "long_thread": max(counts, key=counts.get),
        "piece_exchange": with_piece["id"],
        "piece_memory": with_piece["pieces"][0]["memory_id"],
        "retrieval_exchange": with_retrieval["id"] if with_retrieval else None,
        "xss_memory": xss["id"],
        "json_memory": json_memory["id"],
        "big_memory": big["id"],
        "big_bytes": big["bytes"],
        "big_lines": big["lines"],
        "big_put_seconds": round(big_seconds, 1),
        "beta_thread": beta_threads.pop(),
        "beta_memory": beta_memory["id"],
    }


def log(text):
    print(f"seed: {text}", file=sys.stderr, flush=True)


def exchanges(base, key):
    """Every exchange the key's namespace sees, newest first."""
    rows, cursor = [], None
    while True:
        query = "/v1/exchanges?limit=500" + (f"&cursor={cursor}" if cursor else "")
        page = json.loads(http("GET", base + query, headers=bearer(key))[1])
        rows += page["exchanges"]
        cursor = page.get("next_cursor")
        if not cursor:
            return rows


def put(base, key, body):
    return json.loads(http("POST", base + "/v1/memories", body, bearer(key))[1])


def bearer(key):
    return {"authorization": f"Bearer {key}"}


def nested_json():
    """A few KB of nested JSON, for jq in the memory view."""
    rng = random.Random(34)
    return {"inventory": {"warehouse": "north", "updated": "2026-01-01T00:00:00Z",
                          "items": [{"id": i, "name": f"item-{i:03d}", "status": rng.choice(["ok", "failed", "late"]),
                                     "tags": rng.sample(["red", "blue", "bulk", "fragile", "cold"], 2),
                                     "stock": {"on_hand": rng.randrange(500), "reserved": rng.randrange(50)}}
                                    for i in range(40)]},
            "meta": {"source": "console seed", "nested": {"depth": {"three": [1, 2, {"four": True}]}}}}


WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "
         "quebec romeo sierra tango uniform victor whiskey xray yankee zulu request cache shard frame").split()
NEEDLE_EVERY = 1_000_000


def big_lines(size):
    """Numbered lines of varied words, about `size` bytes in 1 MiB blocks,
    ending at a line end; every NEEDLE_EVERY-th line says `ERROR needle`."""
    rng = random.Random(1)
    tails = [" ".join(rng.choice(WORDS) for _ in range(rng.randrange(3, 12))) for _ in range(4096)]
    number, sent, block = 1, 0, []
    while sent < size:
        block.clear()
        block_bytes = 0
        while block_bytes < (1 << 20) and sent + block_bytes < size:
            if number % NEEDLE_EVERY:
                line = f"line {number:08d} {tails[(number * 2654435761) % 4096]}\n"
            else:
                line = f"line {number:08d} ERROR needle: disk full on shard 7\n"
            block.append(line)
            block_bytes += len(line)
            number += 1
        data = "".join(block).encode()
        sent += len(data)
        yield data


def put_big(base, key, size):
    """Streams the big memory as a chunked raw body (never all in memory)."""
    url = urllib.parse.urlsplit(base)
    query = urllib.parse.urlencode({"type": "TOOL_OUTPUT", "subtype": "numbered", "title": "big numbered lines",
                                    "tags": "big,console"})
    conn = HTTPConnection(url.hostname, url.port, timeout=3600)
    try:
        conn.request("POST", f"/v1/memories?{query}", body=big_lines(size), encode_chunked=True,
                     headers=dict(bearer(key), **{"content-type": "text/plain"}))
        response = conn.getresponse()
        raw = response.read()
        if response.status not in (200, 201):
            raise RuntimeError(f"big put: {response.status} {raw[:300]!r}")
        return json.loads(raw)
    finally:
        conn.close()


def stop(seeded):
    """Stops the seeded server (SIGTERM: a clean shutdown, then SIGKILL after 30 s)."""
    process = seeded["process"]
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target", "debug", "cairn")
    made = len(sys.argv) <= 2
    data_dir = sys.argv[2] if not made else tempfile.mkdtemp(prefix="console-seed-data.")
    started = time.perf_counter()
    seeded = seed(binary, data_dir, index_big=os.environ.get("CAIRN_CONSOLE_INDEX_BIG") == "1")
    try:
        print(json.dumps({k: v for k, v in seeded.items() if k != "process"}, indent=1), flush=True)
        print(f"seeded in {time.perf_counter() - started:.0f} s; serving {seeded['base']}/ui until Ctrl-C",
              file=sys.stderr)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        seeded["process"].wait()
    except KeyboardInterrupt:
        pass
    finally:
        stop(seeded)
        if made:
            shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
