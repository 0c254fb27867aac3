#!/usr/bin/env python3
"""How long the console's pages take on the server: a 200-exchange session
and a 1 GiB memory.

    python3 bench/console_pages.py target/release/cairn [--turns 200] [--reads 40]
        [--big-bytes 1073741824]

Starts Cairn (no keys: the console is open on loopback) as an Anthropic
proxy in front of tests/proxy/upstream.py, plays bench/exchanges.py's
Claude-Code-shaped session for `--turns` turns (each turn a request, most
with a hidden retrieval round), puts a big memory of numbered lines
(tests/console/seed.py's, streamed), then times every page `--reads` times
over loopback and reports p50 and p99 per page (the time from sending the
request to the last byte of the answer, so it includes the loopback round
trip; the server's own time is a little less). Target (issue 34): p50 <
50 ms for each page.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "console"))
import exchanges as session_mod  # noqa: E402
import seed as seed_mod  # noqa: E402
from crashkit import free_port, http, start  # noqa: E402


def timed(url, reads):
    times = []
    size = 0
    for _ in range(reads):
        started = time.perf_counter()
        status, body = http("GET", url, timeout=60)
        times.append((time.perf_counter() - started) * 1e3)
        assert status == 200, (url, status)
        size = len(body)
    times.sort()
    return statistics.median(times), times[int(0.99 * (len(times) - 1))], size


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary")
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--reads", type=int, default=40)
    parser.add_argument("--big-bytes", type=int, default=1 << 30)
    args = parser.parse_args()
    standin = subprocess.Popen([sys.executable, session_mod.STANDIN], stdout=subprocess.PIPE, text=True)
    upstream = f"http://127.0.0.1:{standin.stdout.readline().strip()}"
    data = tempfile.mkdtemp(prefix="cairn-console-pages-")
    port = free_port()
    proc, _ = start(args.binary, port, data, "--upstream-anthropic-url", upstream)
    base = f"http://127.0.0.1:{port}"
    try:
        started = time.perf_counter()
        session_mod.play_session(base, args.turns, session_mod.tool_outputs())
        played = time.perf_counter() - started
        thread = session_mod.THREAD
        rows = json.loads(http("GET", f"{base}/v1/exchanges?thread={thread}&limit=500")[1])["exchanges"]
        newest, oldest = rows[0], rows[-1]
        piece = next(p["memory_id"] for r in rows for p in r["pieces"])
        started = time.perf_counter()
        big = seed_mod.put_big(base, None, args.big_bytes)
        put_seconds = time.perf_counter() - started
        middle = big["lines"] // 2
        pages = [
            ("sessions", "/ui/"),
            (f"session ({len(rows)} exchanges)", "/ui/session?" + urllib.parse.urlencode({"thread": thread})),
            ("exchange (newest, body rebuilt)", f"/ui/exchanges/{newest['id']}"),
            ("exchange (oldest)", f"/ui/exchanges/{oldest['id']}"),
            ("memories", "/ui/memories"),
            ("search", "/ui/memories?q=error"),
            ("memory (an offloaded piece)", f"/ui/memories/{piece}"),
            ("memory grep", f"/ui/memories/{piece}?grep=e&context=2"),
            (f"1 GiB memory, line {middle:,}", f"/ui/memories/{big['id']}?from={middle}"),
            ("1 GiB memory, last page", f"/ui/memories/{big['id']}?from={big['lines'] - 150}"),
            ("savings", "/ui/savings"),
        ]
        results = [(name, *timed(base + path, args.reads)) for name, path in pages]
    finally:
        proc.kill()
        standin.kill()
    print(f"{len(rows)} exchanges played in {played:.0f} s; {big['bytes']:,} bytes put in {put_seconds:.0f} s; "
          f"{args.reads} reads per page")
    print("| page | p50 | p99 | size |")
    print("| --- | --- | --- | --- |")
    for name, p50, p99, size in results:
        print(f"| {name} | {p50:.1f} ms | {p99:.1f} ms | {size / 1e3:.0f} KB |")


if __name__ == "__main__":
    main()
