#!/usr/bin/env python3
"""The store's crash soak: kill -9 under 16-way mixed puts, reads and deletes,
cycle after cycle, on one data directory.

    python3 bench/store_crash.py target/release/cairn [--cycles 200] [--workers 16]

Each cycle starts Cairn, runs `--workers` threads that put new content
(1 KiB–256 KiB, unique), read back what was acknowledged and delete some of
it, kills Cairn with SIGKILL after a random 50–300 ms, and restarts it. Then
every acknowledged put that no acknowledged delete removed must read back
byte for byte (its id is the SHA-256 of its content: after each restart the puts
acknowledged since the last check and 100 older ones at random, all of
them after the last cycle), and the latest acknowledged deletes must stay
deleted. Reads during the load that return
other bytes than were put count as corrupt. Prints the counts and the
restart times (p50/p99); exits 1 on any loss or corruption.
(`--cycles 1000` is the nightly-style run whose result goes to bench/REPORT.md.)
"""

import argparse
import hashlib
import json
import os
import random
import signal
import sys
import tempfile
import threading
import time
import urllib.error

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from crashkit import free_port, http, start  # noqa: E402


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.live = {}        # id -> sha256 hex of the content (acknowledged puts)
        self.deleted = set()  # acknowledged deletes
        self.corrupt = []
        self.ops = {"put": 0, "read": 0, "delete": 0, "cut": 0}


def worker(base, state, stop, seed):
    rng = random.Random(seed)
    while not stop.is_set():
        op = rng.random()
        try:
            if op < 0.5 or not state.live:
                size = rng.choice([1 << 10, 16 << 10, 64 << 10, 256 << 10])
                head = f"{seed} {time.time_ns()} {rng.random()}\n".encode()
                body = head + os.urandom(size // 2).hex().encode()[: size - len(head)]
                status, answer = http("POST", f"{base}/v1/memories?type=CONTEXT&mime=text/plain", body,
                                      content_type="application/octet-stream")
                mid = json.loads(answer)["id"]
                with state.lock:
                    state.live[mid] = hashlib.sha256(body).hexdigest()
                    state.ops["put"] += 1
            elif op < 0.85:
                with state.lock:
                    mid = rng.choice(list(state.live))
                _, content = http("GET", f"{base}/v1/memories/{mid}/content")
                with state.lock:
                    if mid in state.live and hashlib.sha256(content).hexdigest() != state.live[mid]:
                        state.corrupt.append(mid)
                    state.ops["read"] += 1
            else:
                # Out of `live` before the request: a delete the kill cuts
                # leaves the memory in an unknown state, checked neither way.
                with state.lock:
                    mid = rng.choice(list(state.live))
                    state.live.pop(mid, None)
                status, _ = http("DELETE", f"{base}/v1/memories/{mid}")
                if status == 204:
                    with state.lock:
                        state.deleted.add(mid)
                        state.ops["delete"] += 1
        except urllib.error.HTTPError as e:
            if e.code != 404:  # a delete racing a read of the same memory
                with state.lock:
                    state.ops["cut"] += 1
        except (OSError, urllib.error.URLError, json.JSONDecodeError):
            with state.lock:
                state.ops["cut"] += 1
            time.sleep(0.005)


def verify(base, state, only=None):
    """Checks the acknowledged puts in `only` (all when None) and the latest deletes."""
    lost, corrupt, resurrected = [], [], []
    for mid, digest in list(state.live.items()):
        if only is not None and mid not in only:
            continue
        try:
            _, content = http("GET", f"{base}/v1/memories/{mid}/content")
        except urllib.error.HTTPError as e:
            lost.append((mid, e.code))
            continue
        if hashlib.sha256(content).hexdigest() != digest:
            corrupt.append(mid)
    for mid in list(state.deleted)[-200:]:
        try:
            http("GET", f"{base}/v1/memories/{mid}")
            resurrected.append(mid)
        except urllib.error.HTTPError as e:
            if e.code != 404:
                resurrected.append(mid)
    return lost, corrupt, resurrected


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--cycles", type=int, default=200)
    ap.add_argument("--workers", type=int, default=16)
    args = ap.parse_args()
    data = tempfile.mkdtemp(prefix="cairn-store-crash-")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    state = State()
    restarts = []
    checked = set()
    proc, _ = start(args.binary, port, data)
    started = time.perf_counter()
    for cycle in range(args.cycles):
        stop = threading.Event()
        threads = [threading.Thread(target=worker, args=(base, state, stop, cycle * 1000 + w))
                   for w in range(args.workers)]
        for t in threads:
            t.start()
        time.sleep(random.uniform(0.05, 0.3))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        stop.set()
        for t in threads:
            t.join()
        proc, took = start(args.binary, port, data)
        restarts.append(took)
        # Every put acknowledged since the last check, and 100 older ones at random;
        # everything at the end.
        last = cycle + 1 == args.cycles
        fresh = set(state.live) - checked
        older = list(set(state.live) & checked)
        sample = fresh | set(random.sample(older, min(100, len(older))))
        lost, corrupt, resurrected = verify(base, state, None if last else sample)
        checked |= fresh
        corrupt += state.corrupt
        if cycle % 20 == 19 or lost or corrupt or resurrected:
            print(f"cycle {cycle + 1}/{args.cycles}: {len(state.live)} live, {len(state.deleted)} deleted, "
                  f"ops {state.ops}, lost {len(lost)}, corrupt {len(corrupt)}, resurrected {len(resurrected)}",
                  flush=True)
        if lost or corrupt or resurrected:
            print("LOST:", lost[:5], "CORRUPT:", corrupt[:5], "RESURRECTED:", resurrected[:5], file=sys.stderr)
            proc.kill()
            sys.exit(1)
    proc.kill()
    restarts.sort()
    pick = lambda q: restarts[min(len(restarts) - 1, int(q * len(restarts)))] * 1000
    print(f"\n{args.cycles} kill -9 cycles under {args.workers}-way puts/reads/deletes in "
          f"{time.perf_counter() - started:.0f} s: {state.ops['put']} puts, {state.ops['read']} reads, "
          f"{state.ops['delete']} deletes acknowledged, {state.ops['cut']} requests cut; "
          f"0 acknowledged writes lost, 0 corrupt reads; restart p50 {pick(0.5):.0f} ms, "
          f"p99 {pick(0.99):.0f} ms, max {restarts[-1] * 1000:.0f} ms")


if __name__ == "__main__":
    main()
