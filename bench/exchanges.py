#!/usr/bin/env python3
"""The exchange ledger's cost: storage against a session's new content, and
how fast a long thread reads back.

    python3 bench/exchanges.py target/release/cairn [--turns 200] [--reads 50]

Starts Cairn as an Anthropic proxy in front of tests/proxy/upstream.py (the
stand-in provider, which calls memory_fetch whenever it is offered a
pointer, so most turns have a hidden retrieval round) and plays one
Claude-Code-shaped session: a system prompt, ~12 KB of tool definitions,
`cache_control` on the last message, and per turn an assistant tool call,
its result (real outputs of this machine: `dpkg -l`, `ps aux`, licences,
`pip list` as JSON, a traceback, `ls -R`; 0.3-60 KB) and a short assistant
text. Reports, at turn 60 and at the end:
- the session's new content: the bytes (as JSON) of the messages the
  client added each turn, with its first request whole, and the ledger's bytes for the
  thread (`length(body) + length(figures)` of its rows in SQLite) — the
  ratio is what storing deltas instead of bodies buys;
- `GET /v1/exchanges?thread=…` (limit 50 and 200) and
  `GET /v1/exchanges/{id}` of the newest exchange (its body rebuilt from up
  to 50 deltas): p50 and p99 over `--reads` calls.
"""

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from crashkit import free_port, http, start  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
STANDIN = os.path.join(HERE, "..", "tests", "proxy", "upstream.py")
THREAD = "bench-exchanges-session"


def sh(command, limit):
    out = subprocess.run(command, shell=True, capture_output=True, text=True).stdout
    return out[:limit] or f"(no output from {command})\n"


def tool_outputs():
    """Real outputs of this machine, of varied kinds and sizes."""
    trace = "".join(f'  File "/srv/app/module_{i}.py", line {10 * i}, in handler_{i}\n    result = step_{i}(payload)\n'
                    for i in range(40)) + "KeyError: 'user_id'\n"
    return [
        sh("dpkg -l", 60_000),
        sh("ps aux", 20_000),
        sh("cat /usr/share/common-licenses/GPL-3", 35_000),
        sh(f"{sys.executable} -m pip list --format json", 30_000),
        "Traceback (most recent call last):\n" + trace,
        sh("ls -R /usr/share/doc | head -2000", 45_000),
        sh("env | cut -c1-20 | sort", 2_000),
        sh("cat /etc/os-release", 1_000),
    ]


def tools():
    return [{"name": f"tool_{i}", "description": f"Tool number {i}. " + "It does a careful thing. " * 20,
             "input_schema": {"type": "object", "properties": {"arg": {"type": "string", "description": "x" * 100}}}}
            for i in range(16)]


def session_request(messages):
    last = dict(messages[-1])
    if isinstance(last["content"], list):
        last["content"] = [dict(block) for block in last["content"]]
        last["content"][-1]["cache_control"] = {"type": "ephemeral"}
    return {"model": "claude-sonnet-4-5", "max_tokens": 512,
            "system": "You are a careful coding agent. " * 60,
            "tools": tools(), "messages": messages[:-1] + [last]}


def ledger_bytes(db):
    with sqlite3.connect(db) as conn:
        rows, body, figures = conn.execute(
            "SELECT count(*), coalesce(sum(length(body)), 0), coalesce(sum(length(figures)), 0) "
            "FROM exchanges WHERE thread = ?", (THREAD,)).fetchone()
    return rows, body, figures


def timed(url, reads):
    times = []
    for _ in range(reads):
        started = time.perf_counter()
        status, _ = http("GET", url, timeout=30)
        times.append((time.perf_counter() - started) * 1e3)
        assert status == 200
    times.sort()
    return statistics.median(times), times[int(0.99 * (len(times) - 1))]


def play_session(base, turns, outputs, at=None):
    """Plays the session's `turns` through the proxy at `base`; after each
    turn named in `at`, calls `at[turn](turn, new_bytes)` (new_bytes: the
    JSON bytes the client has added so far, its first request whole)."""
    headers = {"x-api-key": "sk-ant-test", "x-claude-code-session-id": THREAD}
    messages = [{"role": "user", "content": [{"type": "text", "text": "Look around this machine and report."}]}]
    new_bytes = 0
    for turn in range(1, turns + 1):
        request = session_request(messages)
        if turn == 1:
            new_bytes += len(json.dumps(request).encode())
        status, answer = http("POST", f"{base}/v1/messages", request, headers, timeout=60)
        assert status == 200, answer[:300]
        text = json.loads(answer)["content"][0].get("text", "")
        if at and turn in at:
            at[turn](turn, new_bytes)
        output = outputs[turn % len(outputs)]
        added = [
            {"role": "assistant", "content": [{"type": "text", "text": text[:200] or "ok"},
                                              {"type": "tool_use", "id": f"t{turn}", "name": f"tool_{turn % 16}",
                                               "input": {"arg": f"run {turn}"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{turn}", "content": output}]},
        ]
        messages += added
        # What the client adds to its next request (as JSON).
        new_bytes += len(json.dumps(added).encode())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary")
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--reads", type=int, default=50)
    parser.add_argument("--example", help="write the newest exchange (GET /v1/exchanges/{id}) to this file")
    args = parser.parse_args()
    outputs = tool_outputs()
    standin = subprocess.Popen([sys.executable, STANDIN], stdout=subprocess.PIPE, text=True)
    upstream = f"http://127.0.0.1:{standin.stdout.readline().strip()}"
    data = tempfile.mkdtemp(prefix="cairn-exchanges-")
    port = free_port()
    proc, _ = start(args.binary, port, data, "--upstream-anthropic-url", upstream)
    base = f"http://127.0.0.1:{port}"
    reports = []

    def measure(turn, new_bytes):
        status, page = http("GET", f"{base}/v1/exchanges?thread={THREAD}&limit=1")
        newest = json.loads(page)["exchanges"][0]["id"]
        rows, body, figures = ledger_bytes(os.path.join(data, "meta.sqlite"))
        p50, p99 = timed(f"{base}/v1/exchanges?thread={THREAD}", args.reads)
        all_p50, all_p99 = timed(f"{base}/v1/exchanges?thread={THREAD}&limit=200", args.reads)
        one_p50, one_p99 = timed(f"{base}/v1/exchanges/{newest}", args.reads)
        reports.append((turn, rows, new_bytes, body, figures, (p50, p99), (all_p50, all_p99), (one_p50, one_p99)))
        if args.example:
            _, detail = http("GET", f"{base}/v1/exchanges/{newest}")
            with open(args.example, "wb") as f:
                f.write(detail)

    try:
        play_session(base, args.turns, outputs, {60: measure, args.turns: measure})
    finally:
        proc.kill()
        standin.kill()
    print("| turns | exchanges | new content | ledger: bodies + figures | ratio | list 50 p50/p99 | list 200 p50/p99 | one (rebuilt) p50/p99 |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for turn, rows, new, body, figures, a, b, c in reports:
        print(f"| {turn} | {rows} | {new / 1e3:.0f} KB | {body / 1e3:.0f} KB + {figures / 1e3:.0f} KB | "
              f"{(body + figures) / new:.2f}× | {a[0]:.1f} / {a[1]:.1f} ms | {b[0]:.1f} / {b[1]:.1f} ms | "
              f"{c[0]:.1f} / {c[1]:.1f} ms |")


if __name__ == "__main__":
    main()
