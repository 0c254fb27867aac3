#!/usr/bin/env python3
"""The replay benchmark's Claude Code sessions, played by the real Claude
Code CLI: live runs billed like the provider, direct and through Cairn.

    python3 bench/replay/live.py target/release/cairn [--sessions 4]
        [--arms direct,cairn] [--bash-max N] [--out target/replay-live]

replay.py plays each session as Claude Code would send it: the envelope
captured from the real client, the turns written by the script. Here the
real client sends them. For each `claude` session of the corpus
(corpus.py), one `claude -p` run per user turn (`--continue` after the
first, the same config dir and working directory) against the stand-in
(standin.py, which streams as the provider does), directly or through a
fresh Cairn. The stand-in's shell calls are `replay KEY`; a `replay`
command on the client's PATH prints that output, so Claude Code runs a
real command, formats its result and applies its own limits to it (a Bash
output over 30,000 characters goes to a file with a preview: `--bash-max`
sets Claude Code's `bashOutputMaxChars`). Everything runs in one
loopback-only network namespace (`unshare --net`, as root).

Reports, per session and arm: billed USD at list prices, the bill's ratio
to direct, cache hit ratio, retrieval rounds, needed lines the model saw
(byte for byte), answers Claude Code printed exactly, the largest tool
result Claude Code sent, and the tool results' share of the bytes. Writes
OUT/live.json and OUT/live.md. `--check` (CI) fails unless every turn of
both arms ends with the scripted answer and Cairn, on every session, costs
no more than direct and lets the model read every line direct does.
"""

import argparse
import glob
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import corpus as corpus_mod  # noqa: E402
import replay  # noqa: E402
from crashkit import free_port, http, start  # noqa: E402

MODEL = replay.MODELS["claude"]
# Where tests/clients/suite.sh installs the pinned clients.
CLAUDE_CANDIDATES = [os.environ.get("CLAUDE_BIN", ""),
                     os.path.join(os.environ.get("CAIRN_CLIENTS_DIR", "/nonexistent"), "node_modules/.bin/claude"),
                     os.path.expanduser("~/.cache/cairn-clients/node_modules/.bin/claude"),
                     "/work/clients/node_modules/.bin/claude"]
QUIET = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
         "DISABLE_ERROR_REPORTING": "1", "DISABLE_AUTOUPDATER": "1"}


def tool_bytes(body):
    """Bytes of tool results in a Messages body."""
    total = 0
    for m in body.get("messages", []):
        for b in m["content"] if isinstance(m.get("content"), list) else []:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                total += len(json.dumps(b.get("content")))
    return total


def largest_result(body):
    sizes = [len(json.dumps(b.get("content"))) for m in body.get("messages", [])
             for b in (m["content"] if isinstance(m.get("content"), list) else [])
             if isinstance(b, dict) and b.get("type") == "tool_result"]
    return max(sizes, default=0)


def play(claude, base, session, outputs_dir, bin_dir, bash_max, work):
    """Plays one session with the real client; answers replay.summarize's view of it."""
    cfg = tempfile.mkdtemp(prefix="cfg.", dir=work)
    cwd = tempfile.mkdtemp(prefix="cwd.", dir=work)
    if bash_max:
        with open(os.path.join(cfg, "settings.json"), "w") as f:
            json.dump({"bashOutputMaxChars": bash_max}, f)
    env = dict(os.environ, **QUIET, CLAUDE_CONFIG_DIR=cfg, ANTHROPIC_BASE_URL=base,
               ANTHROPIC_API_KEY="sk-ant-live", REPLAY_OUTPUTS=outputs_dir,
               PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
    seen = {"requests": 0, "answers": 0, "exact": 0, "errors": [], "foreign_calls": 0,
            "tool_bytes": 0, "body_bytes": 0, "thread": session["name"]}
    started = time.perf_counter()
    for t, turn in enumerate(session["turns"]):
        expected = next(s["answer"] for s in turn["steps"] if "answer" in s)
        command = [claude, "-p", turn["user"], "--allowedTools", "Bash", "--model", MODEL]
        if t:
            command.append("--continue")
        try:
            done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired:
            seen["errors"].append(f"turn {t + 1}: claude timed out")
            break
        if done.returncode != 0:
            seen["errors"].append(f"turn {t + 1}: claude exited {done.returncode}: {done.stderr[-300:]}")
            break
        seen["answers"] += 1
        seen["exact"] += done.stdout.strip() == expected.strip()
    return dict(seen, seconds=time.perf_counter() - started)


def exchanges_since(base, seen_ids):
    """The ledger's exchanges not in `seen_ids`, oldest first."""
    rows, cursor = [], None
    while True:
        page = json.loads(http("GET", base + "/v1/exchanges?limit=200" + (f"&cursor={cursor}" if cursor else ""))[1])
        rows += [x for x in page["exchanges"] if x["id"] not in seen_ids]
        cursor = page.get("next_cursor")
        if not cursor:
            return sorted(rows, key=lambda x: x["id"])


def run_arm(arm, args, claude, corpus, corpus_path, sessions, work):
    dump = os.path.join(work, f"{arm}-requests")
    os.makedirs(dump, exist_ok=True)
    os.environ["REPLAY_DUMP"] = dump
    standin_proc, port = replay.start_standin(corpus_path)
    standin = f"http://127.0.0.1:{port}"
    proc, base = None, standin
    if arm == "cairn":
        cport = free_port()
        proc, _ = start(args.cairn, cport, os.path.join(work, f"{arm}-data"), "--upstream-anthropic-url", standin,
                        "--upstream-openai-url", standin + "/v1")
        base = f"http://127.0.0.1:{cport}"
    played, exchanges, ids = [], {}, set()
    try:
        for s in sessions:
            before = len(os.listdir(dump))
            p = play(claude, base, s, args.outputs_dir, args.bin_dir, args.bash_max, work)
            bodies = [json.load(open(f)) for f in sorted(glob.glob(os.path.join(dump, "*.json")))[before:]]
            p["largest_result"] = max((largest_result(b) for b in bodies), default=0)
            if arm == "direct":
                p["requests"] = len(bodies)
                p["tool_bytes"] = sum(tool_bytes(b) for b in bodies)
                p["body_bytes"] = sum(len(json.dumps(b)) for b in bodies)
            played.append(p)
            if proc:
                time.sleep(1.5)  # the ledger writes in one-second batches
                xs = exchanges_since(base, ids)
                ids |= {x["id"] for x in xs}
                exchanges[s["name"]] = xs
            print(f"live: {arm} {s['name']}: {p['answers']} answers, {len(p['errors'])} errors, "
                  f"{p['seconds']:.0f} s", file=sys.stderr)
        records = json.loads(http("GET", standin + "/_requests")[1])
        with open(os.path.join(args.out, f"{arm}-records.json"), "w") as f:
            json.dump(records, f)
    finally:
        if proc:
            proc.terminate()
            proc.wait(30)
        standin_proc.terminate()
    result = replay.summarize(sessions, played, records, exchanges)
    for s, p in zip(sessions, played):
        result[s["name"]]["largest_result"] = p["largest_result"]
    return result


def render(report):
    arms = report["arms"]
    direct = arms.get("direct", {})
    lines = ["| session | turns | requests (direct) | tool share | largest tool result | "
             + " | ".join(f"{a} USD | {a} × | {a} cache hit | {a} rounds | {a} lines | {a} exact answers" for a in arms)
             + " |"]
    lines.append("|" + " --- |" * (5 + 6 * len(arms)))
    totals = {a: 0.0 for a in arms}
    for name, d in direct.items():
        cells = [name, str(d["turns"]), str(d["client_requests"]), f"{d['tool_share']:.0%}",
                 f"{d['largest_result']:,} B"]
        for a, rows in arms.items():
            r = rows[name]
            totals[a] += r["usd"]
            hit = r["cache_read"] / r["input"] if r["input"] else 0
            cells += [f"{r['usd']:.4f}", f"{r['usd'] / d['usd']:.2f}×" if d["usd"] else "", f"{hit:.1%}",
                      str(r["retrieval_rounds"]), f"{r['recovered']}/{r['needed']}",
                      f"{r['answers_exact']}/{r['turns']}"]
        lines.append("| " + " | ".join(cells) + " |")
    total = ["**all**", "", "", "", ""]
    for a in arms:
        ratio = totals[a] / totals["direct"] if totals.get("direct") else 0
        total += [f"{totals[a]:.4f}", f"**{ratio:.3f}×**", "", "", "", ""]
    lines.append("| " + " | ".join(total) + " |")
    return "\n".join(lines)


def inside(args):
    with open(args.corpus) as f:
        corpus = json.load(f)
    claude = next((c for c in CLAUDE_CANDIDATES if c and os.access(c, os.X_OK)), None)
    if claude is None:
        raise SystemExit("no Claude Code: run tests/clients/suite.sh once (it installs the pinned CLI) or set CLAUDE_BIN")
    # Outside any git repository: Claude Code puts a repository's status in
    # its prompt, which would differ between the arms as the tree changes.
    work = tempfile.mkdtemp(prefix="cairn-live.")
    args.outputs_dir = os.path.join(work, "outputs")
    args.bin_dir = os.path.join(work, "bin")
    os.makedirs(args.outputs_dir)
    os.makedirs(args.bin_dir)
    for key, text in corpus["outputs"].items():
        with open(os.path.join(args.outputs_dir, key), "w") as f:
            f.write(text)
    script = os.path.join(args.bin_dir, "replay")
    with open(script, "w") as f:
        f.write('#!/bin/sh\n# Prints the replay corpus output named $1.\nexec cat "$REPLAY_OUTPUTS/$1"\n')
    os.chmod(script, os.stat(script).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    sessions = [s for s in corpus["sessions"] if s["shape"] == "claude"]
    if args.only:
        sessions = [s for s in sessions if s["name"] in args.only.split(",")]
    sessions = sessions[:args.sessions]
    arms = {}
    for arm in args.arms.split(","):
        t = time.perf_counter()
        arms[arm] = run_arm(arm, args, claude, corpus, args.corpus, sessions, work)
        print(f"live: {arm} done in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    version = subprocess.run([claude, "--version"], capture_output=True, text=True).stdout.strip()
    report = {"claude": version, "bash_max": args.bash_max, "arms": arms}
    with open(os.path.join(args.out, "live.json"), "w") as f:
        json.dump(report, f, indent=1)
    table = render(report)
    with open(os.path.join(args.out, "live.md"), "w") as f:
        f.write(table + "\n")
    print(f"Claude Code {version}, bashOutputMaxChars {args.bash_max or 'default (30000)'}")
    print(table)
    if args.keep:
        print(f"kept: {work}", file=sys.stderr)
    else:
        shutil.rmtree(work, ignore_errors=True)
    return check(report) if args.check else 0


def check(report):
    """CI's assertions; answers the exit status."""
    failures = []
    direct, cairn = report["arms"]["direct"], report["arms"]["cairn"]
    for name, c in cairn.items():
        d = direct[name]
        for arm, r in (("direct", d), ("cairn", c)):
            if r["errors"] or r["answers_exact"] != r["turns"]:
                failures.append(f"{name} {arm}: {r['answers_exact']}/{r['turns']} answers, errors {r['errors']}")
        if c["usd"] > d["usd"] * (1 + 1e-9):
            failures.append(f"{name}: cairn {c['usd']:.4f} > direct {d['usd']:.4f} USD")
        if c["recovered"] < d["recovered"]:
            failures.append(f"{name}: cairn's model read {c['recovered']} lines, direct's {d['recovered']}")
    for f in failures:
        print("FAIL", f, file=sys.stderr)
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cairn")
    ap.add_argument("--arms", default="direct,cairn")
    ap.add_argument("--sessions", type=int, default=4, help="the first N claude sessions of the corpus")
    ap.add_argument("--only", help="comma-separated session names")
    ap.add_argument("--bash-max", type=int, help="Claude Code's bashOutputMaxChars (default: its own)")
    ap.add_argument("--out", default=os.path.join(ROOT, "target", "replay-live"))
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the requests each arm sent (a cairn-live.* folder in the temp dir)")
    ap.add_argument("--corpus", help="a corpus.json replay.py wrote (default: build it afresh)")
    ap.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.cairn = os.path.abspath(args.cairn)
    args.out = os.path.abspath(args.out)
    os.makedirs(args.out, exist_ok=True)
    if args.inside:
        sys.exit(inside(args))
    corpus_path = os.path.abspath(args.corpus) if args.corpus else os.path.join(args.out, "corpus.json")
    if not args.corpus:
        with open(corpus_path, "w") as f:
            json.dump(corpus_mod.build(), f)
    # The rest in a loopback-only network namespace: the client reaches nothing but 127.0.0.1.
    namespace = ["unshare", "--net"] if os.geteuid() == 0 else ["unshare", "--user", "--map-root-user", "--net"]
    command = [sys.executable, os.path.abspath(__file__), args.cairn, "--arms", args.arms,
               "--sessions", str(args.sessions), "--out", args.out, "--inside", "--corpus", corpus_path]
    command += (["--only", args.only] if args.only else []) + (["--check"] if args.check else [])
    command += ["--keep"] if args.keep else []
    command += ["--bash-max", str(args.bash_max)] if args.bash_max else []
    sys.exit(subprocess.run([*namespace, "--", "bash", "-c", 'ip link set lo up && exec "$@"', "bash", *command]).returncode)


if __name__ == "__main__":
    main()
