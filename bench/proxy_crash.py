#!/usr/bin/env python3
"""kill -9 during proxied exchanges: every pointer the model was ever sent
resolves after the restart, to exactly the content it names.

    python3 bench/proxy_crash.py target/release/cairn [--cycles 20] [--concurrent 16]

One data directory for the whole run. Each cycle starts Cairn (as a proxy in
front of tests/proxy/upstream.py, the stand-in provider, which calls
memory_fetch whenever it is offered a pointer), sends `--concurrent` chat
requests at once, each with a new ~60 KB tool result that Cairn offloads,
kills Cairn with SIGKILL after a random 5-150 ms (most exchanges are
still running: the count of cut ones is printed), and starts it again.
After each restart, every `mem://` pointer that reached the stand-in so far
(the pointers the model saw) is fetched: it must answer 200 with content
whose SHA-256 is the pointer's id (a memory id is the hash of its content),
and every memory listed must verify the same way (nothing half-stored).
Prints the counts and restart times; exits 1 on any loss.
"""

import argparse
import hashlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from crashkit import free_port, http, start  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
STANDIN = os.path.join(HERE, "..", "tests", "proxy", "upstream.py")
POINTER = re.compile(r"mem://([0-9a-f]{64})")


CUT = [0]


def one_request(base, cycle, n):
    rows = "".join(f"cycle {cycle} request {n} row {i} {random.random()}\n" for i in range(1500))
    body = {"model": "gpt-4o", "stream": n % 2 == 0,
            "tools": [{"type": "function", "function": {"name": "ls", "parameters": {"type": "object"}}}],
            "messages": [{"role": "user", "content": "go"},
                         {"role": "assistant", "content": None, "tool_calls": [
                             {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
                         {"role": "tool", "tool_call_id": "c1", "content": rows}]}
    try:
        http("POST", f"{base}/v1/chat/completions", body, {"authorization": "Bearer sk-test"}, timeout=10)
    except (OSError, urllib.error.URLError):
        CUT[0] += 1  # killed mid-exchange: expected


def verify(base, pointers):
    lost, corrupt = [], []
    for pid in sorted(pointers):
        try:
            status, content = http("GET", f"{base}/v1/memories/{pid}/content")
        except urllib.error.HTTPError as e:
            lost.append((pid, e.code))
            continue
        if hashlib.sha256(content).hexdigest() != pid:
            corrupt.append(pid)
    listed, cursor = [], None
    while True:
        _, page = http("GET", f"{base}/v1/memories?limit=200" + (f"&cursor={cursor}" if cursor else ""))
        page = json.loads(page)
        listed += [m["id"] for m in page["memories"]]
        cursor = page.get("next_cursor")
        if not cursor:
            break
    for mid in listed:
        _, content = http("GET", f"{base}/v1/memories/{mid}/content")
        if hashlib.sha256(content).hexdigest() != mid:
            corrupt.append(mid)
    return lost, corrupt, len(listed)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--cycles", type=int, default=20)
    ap.add_argument("--concurrent", type=int, default=16)
    args = ap.parse_args()
    standin = subprocess.Popen([sys.executable, STANDIN], stdout=subprocess.PIPE, text=True)
    upstream = f"http://127.0.0.1:{standin.stdout.readline().strip()}"
    data = tempfile.mkdtemp(prefix="cairn-proxy-crash-")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    restarts, seen = [], set()
    try:
        proc, _ = start(args.binary, port, data, "--upstream-openai-url", f"{upstream}/v1")
        for cycle in range(args.cycles):
            threads = [threading.Thread(target=one_request, args=(base, cycle, n)) for n in range(args.concurrent)]
            for t in threads:
                t.start()
            time.sleep(random.uniform(0.005, 0.15))
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            for t in threads:
                t.join()
            proc, took = start(args.binary, port, data, "--upstream-openai-url", f"{upstream}/v1")
            restarts.append(took)
            _, recorded = http("GET", f"{upstream}/_requests")
            for r in json.loads(recorded):
                seen.update(POINTER.findall(r.get("body") or ""))
            lost, corrupt, listed = verify(base, seen)
            print(f"cycle {cycle + 1}/{args.cycles}: {len(seen)} pointers sent to the model, "
                  f"{listed} memories, restart {took * 1000:.0f} ms, lost {len(lost)}, corrupt {len(corrupt)}",
                  flush=True)
            if lost or corrupt:
                print("LOST:", lost[:5], "CORRUPT:", corrupt[:5], file=sys.stderr)
                sys.exit(1)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        standin.kill()
    restarts.sort()
    p99 = restarts[min(len(restarts) - 1, int(0.99 * len(restarts)))]
    print(f"\n{args.cycles} kill -9 cycles, {CUT[0]} of {args.cycles * args.concurrent} exchanges cut by the kill, "
          f"{len(seen)} pointers the model saw, all resolve to their content; "
          f"restart p50 {restarts[len(restarts) // 2] * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms")


if __name__ == "__main__":
    main()
