"""Cairn's memory while it indexes one huge memory for search.

    python3 bench/index_memory.py target/release/cairn [--gib 1] [--keep FILE]

Writes `--gib` GiB of log-like text (numbered lines of words from a 50,000-word
vocabulary and a hex id: many distinct words and word pairs, as real logs
have) to a temporary file, puts it through the HTTP API as one streamed body,
then reads Cairn's RSS and anonymous memory from /proc every 2 s until
`/v1/stats` shows nothing waiting for the search index, and once more 15 s
later. Anonymous memory is what the process itself holds; the rest of RSS is
mostly the index's memory-mapped files, which the kernel takes back under
pressure. `--keep FILE` keeps (or reuses) the generated text.
"""

import argparse
import http.client
import json
import os
import random
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from crashkit import free_port, start  # noqa: E402


def write_text(path, size):
    rng = random.Random(7)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = ["".join(rng.choice(letters) for _ in range(rng.randrange(3, 10))) for _ in range(50_000)]
    written, n = 0, 0
    with open(path, "w") as out:
        while written < size:
            lines = []
            for _ in range(1000):
                n += 1
                words = " ".join(rng.choice(vocab) for _ in range(12))
                lines.append(f"{n:09d} {words} id={rng.randrange(1 << 40):x}\n")
            chunk = "".join(lines)
            out.write(chunk)
            written += len(chunk)


def memory(pid):
    """(VmRSS, RssAnon) of `pid` in MiB."""
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon"):
                fields[key] = int(value.split()[0]) // 1024
    return fields["VmRSS"], fields["RssAnon"]


def put_file(port, path):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    size = os.path.getsize(path)
    with open(path, "rb") as body:
        conn.request("POST", "/v1/memories?type=LOG", body=body,
                     headers={"content-type": "text/plain", "content-length": str(size)})
        answer = conn.getresponse()
        data = answer.read()
    if answer.status != 201:
        raise SystemExit(f"put answered {answer.status}: {data[:300]!r}")


def pending(port):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", "/v1/stats")
    return json.loads(conn.getresponse().read())["search_index"]["pending_objects"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binary")
    ap.add_argument("--gib", type=float, default=1.0)
    ap.add_argument("--keep", help="the generated text's file (reused when it exists)")
    args = ap.parse_args()

    size = int(args.gib * (1 << 30))
    text = args.keep or os.path.join(tempfile.mkdtemp(prefix="cairn-index-text-"), "big.txt")
    if not os.path.exists(text):
        print(f"writing {args.gib} GiB of text to {text} …", flush=True)
        write_text(text, size)
    data = tempfile.mkdtemp(prefix="cairn-index-memory-")
    port = free_port()
    server, _ = start(args.binary, port, data)
    try:
        idle = memory(server.pid)
        began = time.monotonic()
        put_file(port, text)
        put_s = time.monotonic() - began
        peak_rss, peak_anon = idle
        while True:
            rss, anon = memory(server.pid)
            peak_rss, peak_anon = max(peak_rss, rss), max(peak_anon, anon)
            if pending(port) == 0:
                break
            if time.monotonic() - began > 3600:
                raise SystemExit("the index did not catch up within an hour")
            time.sleep(2)
        indexed_s = time.monotonic() - began
        time.sleep(15)
        after = memory(server.pid)
    finally:
        server.terminate()
        server.wait()
        if not args.keep:
            os.remove(text)
    print(f"| text | put | indexed after | idle RSS / anon | peak RSS / anon | 15 s later RSS / anon |\n"
          f"| --- | --- | --- | --- | --- | --- |\n"
          f"| {args.gib:g} GiB | {put_s:.1f} s | {indexed_s:.0f} s | {idle[0]} / {idle[1]} MiB "
          f"| {peak_rss} / {peak_anon} MiB | {after[0]} / {after[1]} MiB |")


if __name__ == "__main__":
    main()
