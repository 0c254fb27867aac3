#!/usr/bin/env python3
"""How soon a put is searchable: from a put's answer to the first search that
finds it, with no other traffic and under steady search traffic.

    python3 bench/freshness.py target/release/cairn [--puts 200] [--searchers 4]

Starts its own server on a free loopback port and a fresh data directory.
Each put is a small text holding one word no other memory has; after its
answer the script searches for that word every 5 ms until a result comes back.
Under load, `--searchers` threads search common words back to back the whole
time (the traffic the indexer gives way to). Also times `wait_ms` searches:
a search with `wait_ms=2000` right after the put must find it at once.
Prints p50/p90/p99/max per phase (milliseconds) and a Markdown table for
bench/REPORT.md.
"""

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

WORDS = ["error", "timeout", "config", "build", "request", "cache", "thread", "index", "memory", "token"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(base, method, path, body=None):
    data = body.encode() if isinstance(body, str) else body
    req = urllib.request.Request(base + path, data=data, method=method)
    if data is not None:
        req.add_header("content-type", "text/plain")
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read() or b"null")


def search(base, q, extra=""):
    return call(base, "GET", "/v1/search?q=" + urllib.parse.quote(q) + extra)


def text_with(word, n):
    lines = [f"{random.choice(WORDS)} line {i} of memory {n}" for i in range(40)]
    lines.insert(random.randrange(40), f"the unique word is {word}")
    return "\n".join(lines) + "\n"


def percentiles(ms):
    ms = sorted(ms)
    pick = lambda q: ms[min(len(ms) - 1, int(q * len(ms)))]
    return {"n": len(ms), "p50": statistics.median(ms), "p90": pick(0.90), "p99": pick(0.99), "max": ms[-1]}


def measure(base, puts, tag):
    """Put-to-searchable latency of `puts` sequential puts, in ms."""
    found = []
    for n in range(puts):
        word = f"fresh{tag}{n}x{random.randrange(10**9)}"
        call(base, "POST", "/v1/memories?type=CONTEXT", text_with(word, n))
        answered = time.perf_counter()
        while True:
            if search(base, word)["results"]:
                found.append((time.perf_counter() - answered) * 1000)
                break
            if time.perf_counter() - answered > 30:
                raise SystemExit(f"put {n} not searchable after 30 s")
            time.sleep(0.005)
    return found


def measure_wait(base, puts):
    """Searches with wait_ms right after each put: how long they took, and misses."""
    took, missed = [], 0
    for n in range(puts):
        word = f"waited{n}x{random.randrange(10**9)}"
        call(base, "POST", "/v1/memories?type=CONTEXT", text_with(word, n))
        started = time.perf_counter()
        answer = search(base, word, "&wait_ms=2000")
        took.append((time.perf_counter() - started) * 1000)
        if not answer["results"] or answer.get("indexed") is not True:
            missed += 1
    return took, missed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--puts", type=int, default=200)
    parser.add_argument("--searchers", type=int, default=4)
    args = parser.parse_args()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    data = tempfile.mkdtemp(prefix="cairn-freshness-")
    server = subprocess.Popen([args.binary, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", data],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                call(base, "GET", "/healthz")
                break
            except OSError:
                time.sleep(0.05)
        # Something to search through.
        for n in range(300):
            call(base, "POST", "/v1/memories?type=CONTEXT", text_with(f"seed{n}", n))
        while call(base, "GET", "/v1/stats")["search_index"]["pending_objects"]:
            time.sleep(0.1)

        quiet = measure(base, args.puts, "q")

        stop = threading.Event()
        searches = [0]

        def searcher():
            while not stop.is_set():
                search(base, " ".join(random.sample(WORDS, 2)))
                searches[0] += 1

        threads = [threading.Thread(target=searcher, daemon=True) for _ in range(args.searchers)]
        for t in threads:
            t.start()
        loaded_started = time.perf_counter()
        loaded = measure(base, args.puts, "l")
        waited, missed = measure_wait(base, max(20, args.puts // 5))
        elapsed = time.perf_counter() - loaded_started
        stop.set()
        for t in threads:
            t.join()
        rate = searches[0] / elapsed
    finally:
        server.terminate()
        server.wait()

    rows = [
        ("put → searchable, no other traffic", percentiles(quiet)),
        (f"put → searchable, {args.searchers} searchers back to back ({rate:.0f} searches/s)", percentiles(loaded)),
        (f"search with wait_ms=2000 right after the put, same load ({missed} missed)", percentiles(waited)),
    ]
    print(json.dumps({name: figures for name, figures in rows}, indent=1))
    print("\n| measure | n | p50 | p90 | p99 | max |\n| --- | --- | --- | --- | --- | --- |")
    for name, f in rows:
        print(f"| {name} | {f['n']} | {f['p50']:.0f} ms | {f['p90']:.0f} ms | {f['p99']:.0f} ms | {f['max']:.0f} ms |")
    if missed:
        sys.exit(f"{missed} wait_ms searches missed their own put")


if __name__ == "__main__":
    main()
