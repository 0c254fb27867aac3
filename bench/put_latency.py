"""Latency of one put of a tool output, 50 KB and 1 MB, through Cairn's HTTP
API beside deepagents' own eviction of a large tool result (its in-process
FilesystemBackend writing the file), in the same run, alternating.

    python3 bench/put_latency.py target/release/cairn [--rounds 60] [--report bench/REPORT.md]

Each put is new content (a test run's log with a per-put run id), sent as the
raw body on one kept-alive connection, as an agent's client sends it; the
answer is the stored memory (id, token count, summary), so the time is
what an agent waits for before it can drop the output from its context.
deepagents (`pip install deepagents`) writes the same text to a file under a
temporary directory with `FilesystemBackend.write`, which is what its
large-result eviction calls; without deepagents installed that column says so.
Beside both, the benchmark writes the same bytes to a new file itself and
fsyncs it and its directory: what any durable store must at least do before
it answers, on this disk.
"""

import argparse
import http.client
import json
import os
import random
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from crashkit import free_port, start  # noqa: E402

# 60 bytes is the reference: what any put costs after the same pause on this
# machine (an HTTP round trip, a commit, threads woken), whatever its size.
SIZES = [("60 B", 60), ("50 KB", 50_000), ("1 MB", 1_000_000)]


def tool_output(size, seed):
    """A pytest-like run log of about `size` bytes, different for every seed."""
    if size < 200:
        return f"tests/test_api.py::test_run_{seed:08x} PASSED [100%]\n".ljust(size).encode()[:size]
    rng = random.Random(seed)
    modules = ["api", "store", "proxy", "ingest", "search", "ledger", "tokens"]
    lines = [f"============================= test session starts (run {seed:08x}) =============================="]
    total = len(lines[0]) + 1
    n = 0
    while total < size:
        n += 1
        module = rng.choice(modules)
        status = "PASSED" if rng.random() > 0.03 else "FAILED"
        line = (f"tests/test_{module}.py::test_{module}_{n:05d}[case-{rng.randrange(1 << 20):05x}] "
                f"{status} [{(100 * total) // size:3d}%] {rng.random() * 3:.3f}s")
        if status == "FAILED":
            line += f"\nE   AssertionError: expected {rng.randrange(1000)} got {rng.randrange(1000)}"
        lines.append(line)
        total += len(line) + 1
    return ("\n".join(lines) + "\n").encode()[:size]


def cairn_put(conn, body):
    conn.request("POST", "/v1/memories?type=TOOL_OUTPUT", body=body,
                 headers={"content-type": "text/plain"})
    answer = conn.getresponse()
    data = answer.read()
    if answer.status not in (200, 201):
        raise SystemExit(f"put answered {answer.status}: {data[:300]!r}")
    return json.loads(data)


def durable_write(directory, name, data):
    """Writes `data` to a new file as a store must before it answers: the file
    and its directory entry fsynced."""
    fd = os.open(os.path.join(directory, name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    dfd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


SETUPS = [
    ("default", "default (exact count, redaction, search index)", []),
    ("estimate", "estimated count (`CAIRN_EXACT_TOKENS_MAX_BYTES=0`)", ["--exact-tokens-max-bytes", "0"]),
    ("no-redact", "no redaction (`CAIRN_REDACT=false`)", ["--redact", "false"]),
    ("no-index", "no search indexing (`CAIRN_SEARCH_INDEX=false`)", ["--search-index", "false"]),
    # Not run by default: what is left when the work is switched off but durability.
    ("bare", "durability only (no index, estimated count, no redaction)",
     ["--search-index", "false", "--exact-tokens-max-bytes", "0", "--redact", "false"]),
    ("bare-128k", "durability only, 128 KiB frames (`CAIRN_FRAME_BYTES=131072`)",
     ["--search-index", "false", "--exact-tokens-max-bytes", "0", "--redact", "false",
      "--frame-bytes", "131072"]),
]
DEFAULT_SETUPS = ["default", "estimate", "no-redact", "no-index"]


def cpu_seconds(pid):
    """User + system CPU seconds of process `pid` so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(binary, extra, rounds, gap, backend):
    """{size label: (cairn ms, deepagents ms, durable write ms, token methods, Cairn CPU ms per put)}."""
    data = tempfile.mkdtemp(prefix="cairn-put-")
    port = free_port()
    server, _ = start(binary, port, data, *extra)
    conn = http.client.HTTPConnection("127.0.0.1", port)
    results = {}
    try:
        for label, size in SIZES:
            # Warm both sides (connection, first file, caches).
            for w in range(3):
                cairn_put(conn, tool_output(size, 10_000_000 + size + w))
            time.sleep(1)
            cairn, deep, synced, methods = [], [], [], set()
            synced_dir = tempfile.mkdtemp(prefix="durable-put-")  # beside Cairn's data dir, the same disk
            cpu_before = cpu_seconds(server.pid)
            for r in range(rounds):
                began = time.perf_counter()
                body = tool_output(size, size * 1000 + r)
                t = time.perf_counter()
                answer = cairn_put(conn, body)
                cairn.append((time.perf_counter() - t) * 1000)
                method = answer.get("token_method")
                if answer.get("tokens_settling"):
                    method = f"{method} in the answer, exact after it"
                methods.add(method)
                if backend is not None:
                    text = body.decode()
                    t = time.perf_counter()
                    result = backend.write(f"/large_tool_results/call_{size}_{r}_{len(results)}", text)
                    deep.append((time.perf_counter() - t) * 1000)
                    if getattr(result, "error", None):
                        raise SystemExit(f"deepagents write failed: {result.error}")
                t = time.perf_counter()
                durable_write(synced_dir, f"call_{size}_{r}", body)
                synced.append((time.perf_counter() - t) * 1000)
                time.sleep(max(0.0, gap - (time.perf_counter() - began)))
            cpu = (cpu_seconds(server.pid) - cpu_before) * 1000 / rounds
            results[label] = (cairn, deep, synced, methods, cpu)
    finally:
        server.terminate()
        server.wait()
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binary")
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--gap-ms", type=int, default=250,
                    help="a put starts at least this long after the one before (an agent's tool calls are seconds apart)")
    ap.add_argument("--setups", default=",".join(DEFAULT_SETUPS),
                    help="which of Cairn's settings to measure, by key (of "
                    + ", ".join(key for key, _, _ in SETUPS) + ")")
    ap.add_argument("--report", help="write the table into this REPORT.md's put_latency section")
    args = ap.parse_args()

    try:
        from deepagents.backends import FilesystemBackend
    except ImportError:
        FilesystemBackend = None
    files = tempfile.mkdtemp(prefix="deepagents-put-")
    backend = FilesystemBackend(root_dir=files, virtual_mode=True) if FilesystemBackend else None

    rows = ["| Cairn's settings | put | Cairn over HTTP p50 / p99 | deepagents file write p50 / p99 | Cairn / deepagents (p50) | the same bytes written durably p50 / p99 | Cairn's CPU per put (all threads, the indexer's included) | token count |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for key, setup, extra in SETUPS:
        if key not in args.setups.split(","):
            continue
        for label, (cairn, deep, synced, methods, cpu) in measure(args.binary, extra, args.rounds, args.gap_ms / 1000, backend).items():
            c50, c99 = pct(cairn, 50), pct(cairn, 99)
            if deep:
                d50, d99 = pct(deep, 50), pct(deep, 99)
                d = f"{d50:.2f} / {d99:.2f} ms"
                ratio = f"{c50 / d50:.1f}×"
            else:
                d, ratio = "deepagents not installed", "—"
            method = ", ".join(sorted(m for m in methods if m))
            s50, s99 = pct(synced, 50), pct(synced, 99)
            rows.append(f"| {setup} | {label} | **{c50:.2f}** / {c99:.2f} ms | {d} | {ratio} | {s50:.2f} / {s99:.2f} ms | {cpu:.1f} ms | {method} |")
            print(rows[-1], flush=True)
    table = "\n".join(rows)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    setups = "" if args.setups == ",".join(DEFAULT_SETUPS) else f" --setups {args.setups}"
    text = (f"<!-- put_latency -->\n## Put latency: a tool output stored, beside deepagents' file write\n\n"
            f"`python3 bench/put_latency.py target/release/cairn --rounds {args.rounds}{setups}` — each put new "
            f"content (a test run's log), the raw body on one kept-alive connection, one put every "
            f"{args.gap_ms} ms at most; the answer carries the memory's id, token count (over `CAIRN_EXACT_TOKENS_AFTER_BYTES`, 128 KiB, the estimate, made exact right after the answer) and summary. "
            f"deepagents {'(' + deepagents_version() + ') ' if backend else ''}writes the same text with "
            f"`FilesystemBackend.write` in the benchmark's process, as its large-result eviction does (no fsync); "
            f"\"written durably\" is the same bytes written by the benchmark to a new file on the same disk, the file and its directory fsynced, "
            f"what any store must do before it can say the output is safe. The 60-byte put is the reference: "
            f"what a put costs after the same pause on this machine whatever its size (an HTTP round trip, a commit, threads woken from idle). "
            f"Release build, SQLite and local files, durable (fsync before the answer), "
            f"{os.cpu_count()} cores; load average at the end {load}.\n\n{table}\n<!-- /put_latency -->\n")
    print(text)
    if args.report:
        with open(args.report) as f:
            report = f.read()
        start_mark, end_mark = "<!-- put_latency -->", "<!-- /put_latency -->\n"
        if start_mark in report:
            head, rest = report.split(start_mark, 1)
            tail = rest.split(end_mark, 1)[1] if end_mark in rest else ""
            report = head + text + tail
        else:
            report = report.rstrip("\n") + "\n\n" + text
        with open(args.report, "w") as f:
            f.write(report)


def deepagents_version():
    try:
        from importlib.metadata import version
        return f"deepagents {version('deepagents')}"
    except Exception:
        return "deepagents"


if __name__ == "__main__":
    main()
