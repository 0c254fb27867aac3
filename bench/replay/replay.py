#!/usr/bin/env python3
"""The replay benchmark: recorded agent sessions billed like the provider,
through no proxy, through Cairn and through Headroom.

    python3 bench/replay/replay.py target/release/cairn [--arms direct,cairn,headroom]
        [--sessions 24] [--jobs 3] [--headroom ~/.cache/headroom-venv/bin/headroom]
        [--out target/replay] [--check]

Builds the corpus (corpus.py: 24 sessions of 10-60 turns over real tool
outputs, in Claude Code's, Codex's and the frameworks' request shapes),
starts the stand-in (standin.py: answers each request with the session's
recorded step, retrieving through the proxy's own tools any needed line it
cannot see, and bills by Anthropic's and OpenAI's caching rules), and plays
every session as its client would — the whole conversation each request,
tool results as the client sends them — once per arm:
- `direct`: straight to the stand-in;
- `cairn`: through a fresh Cairn (`cairn serve`, SQLite, default settings);
  `cairn-agents`: the same with `--proxy-tools agents`;
- `headroom`: through a fresh `headroom proxy` (its default `--mode cache`;
  `headroom-token` for `--mode token`; offline: see bench/REPORT.md);
- `floor`: straight to the stand-in with every tool output sent empty (what
  the session's envelope and conversation cost by themselves);
- `masking`: Cairn client-side (ClientSide: `/v1/compress` with
  `observation_masking` before each request, `memory_grep` answered by the
  client), straight to the stand-in; chat and Claude shapes only.
Each arm starts from an empty prompt cache.

Reports per session and in total: billed USD at list prices, input tokens
upstream, cache hit ratio (cache reads / input), retrieval rounds, needed
lines recovered; and for Cairn the ledger's counterfactual against the
direct arm's bill of the same requests. Writes OUT/replay.json and
OUT/replay.md. `--check` (CI) plays the first sessions through direct and
Cairn and fails unless Cairn recovers every needed line, costs no more
than direct on any session, and its ledger's counterfactual matches the
direct bill of each request (see TOLERANCE_EXCHANGE, TOLERANCE_SESSION).
"""

import argparse
import concurrent.futures
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import corpus as corpus_mod  # noqa: E402
from crashkit import free_port, http, start  # noqa: E402

# List prices (USD per million tokens) of the models the shapes use, as in
# Cairn's table (src/domain/pricing.rs): input, cache read, cache write (5 min), output.
PRICES = {
    "claude-sonnet-4-5": (3.0, 0.30, 3.75, 15.0),
    "gpt-5": (1.25, 0.125, 1.25, 10.0),
}
MODELS = {"claude": "claude-sonnet-4-5", "codex": "gpt-5", "chat": "gpt-5"}
PATHS = {"claude": "/v1/messages", "codex": "/v1/responses", "chat": "/v1/chat/completions"}
# The ledger models the untouched request from the provider's count of what
# Cairn sent, scaled by bytes; the stand-in counts bytes / 4 of each unit's
# JSON. What separates them (JSON layout, rounding) is the tolerance: per
# exchange, and on a session's total.
TOLERANCE_EXCHANGE = 0.10
TOLERANCE_SESSION = 0.03


def cost(record):
    price = PRICES[record["model"]]
    plain = record["input"] - record["cache_read"] - record["cache_write"]
    return (plain * price[0] + record["cache_read"] * price[1] + record["cache_write"] * price[2]
            + record["output"] * price[3]) / 1e6


def load_capture(name):
    with open(os.path.join(ROOT, "tests", "clients", "captured", name)) as f:
        return json.load(f)


class Client:
    """One session's client: its envelope, its conversation, its headers."""

    PROMPT = "run seq 1 3000 and tell me line 1234"

    def __init__(self, session):
        self.shape = session["shape"]
        self.name = session["name"]
        self.sid = str(uuid.uuid5(uuid.NAMESPACE_URL, self.name))
        if self.shape == "claude":
            body = load_capture("claude-default-1.json")
            for key in ("thinking", "context_management"):
                body.pop(key, None)
            self.body = dict(body, model=MODELS["claude"], stream=False)
            self.list = "messages"
            self.opening = len(self.body["messages"])
        elif self.shape == "codex":
            body = load_capture("codex-bigoutput-1.json")
            self.body = dict(body, model=MODELS["codex"], stream=False, prompt_cache_key=self.sid)
            self.list = "input"
            self.opening = len(self.body["input"])
        else:
            self.body = {"model": MODELS["chat"], "messages": [
                {"role": "system", "content": "You are a helpful agent with a shell. Run commands to answer."}],
                "tools": [{"type": "function", "function": {
                    "name": "shell", "description": "Run a shell command and return its output.",
                    "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
                                   "required": ["command"]}}}]}
            self.list = "messages"
            self.opening = None
        self.turns = 0

    def headers(self):
        if self.shape == "claude":
            return {"anthropic-version": "2023-06-01", "x-api-key": "sk-ant-replay",
                    "x-claude-code-session-id": self.sid,
                    "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14"}
        if self.shape == "codex":
            return {"authorization": "Bearer sk-replay", "session-id": self.sid}
        return {"authorization": "Bearer sk-replay", "x-cairn-thread": self.name}

    def thread(self):
        return self.name if self.shape == "chat" else self.sid

    def user(self, text):
        """Adds the user's turn (the first replaces the captured prompt)."""
        self.turns += 1
        items = self.body[self.list]
        if self.turns == 1 and self.shape != "chat":
            replaced = json.dumps(items).replace(self.PROMPT, json.dumps(text)[1:-1])
            assert replaced != json.dumps(items), "the captured prompt was not found"
            self.body[self.list] = json.loads(replaced)
        elif self.shape == "codex":
            items.append({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
        else:
            items.append({"role": "user", "content": text})

    def request(self, transform=None):
        """The body as the client sends it (Claude Code: one breakpoint on
        the last message), after `transform` if given."""
        if self.shape != "claude" and transform is None:
            return self.body
        body = json.loads(json.dumps(self.body))
        if transform is not None:
            body = transform(body)
        if self.shape != "claude":
            return body
        for m in body["messages"]:
            for b in m["content"] if isinstance(m["content"], list) else []:
                b.pop("cache_control", None)
        last = body["messages"][-1]
        if isinstance(last["content"], str):
            last["content"] = [{"type": "text", "text": last["content"]}]
        last["content"][-1]["cache_control"] = {"type": "ephemeral"}
        return body

    def answer(self, value):
        """Adds the model's answer; returns (calls [(id, name, args)], text)."""
        if self.shape == "claude":
            self.body["messages"].append({"role": "assistant", "content": value["content"]})
            calls = [(b["id"], b["name"], b["input"]) for b in value["content"] if b["type"] == "tool_use"]
            text = "".join(b.get("text", "") for b in value["content"] if b["type"] == "text")
        elif self.shape == "codex":
            self.body["input"] += value["output"]
            calls = [(i["call_id"], i["name"], json.loads(i["arguments"])) for i in value["output"]
                     if i["type"] == "function_call"]
            text = "".join(c["text"] for i in value["output"] if i["type"] == "message" for c in i["content"])
        else:
            message = value["choices"][0]["message"]
            self.body["messages"].append({k: v for k, v in message.items() if v is not None})
            calls = [(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
                     for c in message.get("tool_calls") or []]
            text = message.get("content") or ""
        return calls, text

    def results(self, outputs):
        """Adds the tool results [(call id, text)]."""
        if self.shape == "claude":
            self.body["messages"].append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": i, "content": text} for i, text in outputs]})
        elif self.shape == "codex":
            self.body["input"] += [{"type": "function_call_output", "call_id": i, "output": text} for i, text in outputs]
        else:
            self.body["messages"] += [{"role": "tool", "tool_call_id": i, "content": text} for i, text in outputs]


GREP_TOOL = {
    "name": "memory_grep",
    "description": "Find the lines matching a pattern in content Cairn offloaded (a `[cairn: offloaded` "
                   "marker's mem:// pointer): `uri`, `pattern`, `fixed: true` for plain text.",
    "schema": {"type": "object", "properties": {"uri": {"type": "string"}, "pattern": {"type": "string"},
                                                "fixed": {"type": "boolean"}}, "required": ["uri", "pattern"]},
}


def grep_tool(shape):
    if shape == "claude":
        return {"name": GREP_TOOL["name"], "description": GREP_TOOL["description"], "input_schema": GREP_TOOL["schema"]}
    return {"type": "function", "function": {"name": GREP_TOOL["name"], "description": GREP_TOOL["description"],
                                             "parameters": GREP_TOOL["schema"]}}


class ClientSide:
    """Cairn used by the client itself, as an agent framework would: before
    each request the history is compressed with `POST /v1/compress`
    (`observation_masking`: the last 3 tool results kept, older ones
    offloaded to pointers — the stand-in for Anthropic's `clear_tool_uses`),
    `memory_grep` is offered, and the client answers it through
    `GET /v1/memories/{id}/grep`. Chat and Anthropic shapes only (the
    compress API reads those)."""

    def __init__(self, cairn, strategy="observation_masking"):
        self.cairn, self.strategy = cairn, strategy

    def transform(self, client):
        def compress(body):
            anthropic = client.shape == "claude"
            payload = {"messages": body["messages"], "format": "anthropic" if anthropic else "openai",
                       "strategy": self.strategy, "keep_recent": 3, "model": body["model"], "thread": client.name}
            if anthropic:
                payload["system"] = body["system"]
            out = json.loads(http("POST", self.cairn + "/v1/compress", payload, timeout=120)[1])
            return dict(body, messages=out["messages"], tools=body["tools"] + [grep_tool(client.shape)])
        return compress

    def grep(self, args):
        uri = args.get("uri", "")
        memory = uri.removeprefix("mem://").split("#")[0]
        query = urllib.parse.urlencode({"pattern": args.get("pattern", ""), "fixed": "true"})
        try:
            return http("GET", f"{self.cairn}/v1/memories/{memory}/grep?{query}")[1].decode()
        except urllib.error.HTTPError as e:
            return json.dumps({"error": e.read().decode(errors="replace")})


def play(base, session, outputs, empty=False, side=None, headers=None):
    """Plays one session against `base`; answers what the client saw.
    `empty`: every tool output is sent empty (the session's floor: what its
    envelope and conversation cost without the outputs). `side`: a
    ClientSide compressing each request before it goes. `headers`: sent
    besides the client's own (`X-Cairn-Key` for a Cairn with API keys)."""
    client = Client(session)
    seen = {"requests": 0, "answers": 0, "exact": 0, "errors": [], "foreign_calls": 0, "seconds": 0.0,
            "tool_bytes": 0, "body_bytes": 0}
    carried = 0  # bytes of tool output in the conversation
    started = time.perf_counter()
    for turn in session["turns"]:
        client.user(turn["user"])
        expected = next(s["answer"] for s in turn["steps"] if "answer" in s)
        for _ in range(len(turn["steps"]) + 4):
            seen["requests"] += 1
            body = client.request(side.transform(client) if side else None)
            seen["tool_bytes"] += carried
            seen["body_bytes"] += len(json.dumps(body))
            try:
                _, raw = http("POST", base + PATHS[client.shape], body, {**client.headers(), **(headers or {})},
                              timeout=300)
            except urllib.error.HTTPError as e:
                seen["errors"].append(f"{e.code}: {e.read()[:300]!r}")
                return dict(seen, seconds=time.perf_counter() - started)
            calls, text = client.answer(json.loads(raw))
            if not calls:
                seen["answers"] += 1
                seen["exact"] += text == expected
                break
            results = []
            for call_id, name, args in calls:
                if side and name == "memory_grep":
                    results.append((call_id, side.grep(args)))
                    continue
                command = args.get("command") or args.get("cmd") or ""
                if not command.startswith("replay "):
                    seen["foreign_calls"] += 1  # a proxy's own tool reached the client
                    results.append((call_id, "unknown tool"))
                    continue
                text = "" if empty else corpus_mod.view(client.shape, outputs[command[len("replay "):]])
                carried += len(text)
                results.append((call_id, text))
            client.results(results)
    return dict(seen, seconds=time.perf_counter() - started, thread=client.thread())


def start_standin(corpus_path):
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "standin.py"), corpus_path],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return proc, int(proc.stdout.readline())


def tiktoken_cache(into):
    """A tiktoken cache holding o200k_base and cl100k_base, from the copies
    the tiktoken-rs crate ships (checked against tiktoken's own hashes by
    tiktoken): offline, tiktoken cannot download them and Headroom's OpenAI
    path fails without a tokenizer."""
    registry = os.path.expanduser("~/.cargo/registry/src")
    os.makedirs(into, exist_ok=True)
    for name in ("o200k_base", "cl100k_base"):
        found = glob.glob(f"{registry}/*/tiktoken-rs-*/assets/{name}.tiktoken")
        if found:
            url = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
            shutil.copyfile(found[0], os.path.join(into, hashlib.sha1(url.encode()).hexdigest()))
    return into


def start_headroom(binary, port, standin, home, mode):
    env = dict(os.environ, HOME=home, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HEADROOM_TELEMETRY="off",
               TIKTOKEN_CACHE_DIR=tiktoken_cache(os.path.join(home, "tiktoken")))
    log = open(os.path.join(home, "headroom.log"), "w")
    proc = subprocess.Popen([binary, "proxy", "--port", str(port), "--no-telemetry", "--no-rate-limit",
                             "--no-cache", "--mode", mode, "--anthropic-api-url", f"http://127.0.0.1:{standin}",
                             "--openai-api-url", f"http://127.0.0.1:{standin}"],
                            stdout=log, stderr=subprocess.STDOUT, env=env)
    for _ in range(600):
        try:
            http("GET", f"http://127.0.0.1:{port}/health", timeout=1)
            return proc
        except (OSError, urllib.error.URLError):
            if proc.poll() is not None:
                raise SystemExit(f"headroom exited with {proc.returncode}: see {home}/headroom.log")
            time.sleep(0.2)
    raise SystemExit("headroom did not get ready in 120 s")


def ledger(base, thread):
    """The exchanges of a thread, oldest first."""
    rows, cursor = [], None
    while True:
        query = f"/v1/exchanges?thread={thread}&limit=200" + (f"&cursor={cursor}" if cursor else "")
        page = json.loads(http("GET", base + query)[1])
        rows += page["exchanges"]
        cursor = page.get("next_cursor")
        if not cursor:
            return sorted(rows, key=lambda x: x["id"])


def run_arm(arm, args, corpus, corpus_path, standin_port, out):
    standin = f"http://127.0.0.1:{standin_port}"
    http("POST", standin + "/_reset", {})
    proc, base, side = None, standin, None
    work = tempfile.mkdtemp(prefix=f"replay-{arm}.", dir=out)
    sessions = corpus["sessions"][:args.sessions]
    if arm == "masking":
        port = free_port()
        proc, _ = start(args.cairn, port, os.path.join(work, "data"))
        side = ClientSide(f"http://127.0.0.1:{port}")
        sessions = [s for s in sessions if s["shape"] != "codex"]
    elif arm.startswith("cairn"):
        port = free_port()
        tools = ["--proxy-tools", arm.partition("-")[2]] if "-" in arm else []
        proc, _ = start(args.cairn, port, os.path.join(work, "data"), "--upstream-anthropic-url", standin,
                        "--upstream-openai-url", standin + "/v1", *tools)
        base = f"http://127.0.0.1:{port}"
    elif arm.startswith("headroom"):
        port = free_port()
        proc = start_headroom(args.headroom, port, standin_port, work, arm.partition("-")[2] or "cache")
        base = f"http://127.0.0.1:{port}"
    try:
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            played = list(pool.map(lambda s: play(base, s, corpus["outputs"], arm == "floor", side), sessions))
        exchanges = {}
        if arm.startswith("cairn"):
            time.sleep(1.5)  # the ledger writes in one-second batches
            for p in played:
                exchanges[p["thread"]] = ledger(base, p["thread"])
        records = json.loads(http("GET", standin + "/_requests")[1])
    finally:
        if proc:
            proc.terminate()
            proc.wait(30)
    return summarize(sessions, played, records, exchanges)


def summarize(sessions, played, records, exchanges):
    result = {}
    for s, p in zip(sessions, played):
        mine = [r for r in records if r.get("session") == s["name"]]
        answers = [r for r in mine if r["kind"] == "answer"]
        needed = sum(r["needed"] for r in answers)
        lost = sum(len(r["lost"]) for r in answers)
        row = {
            "shape": s["shape"], "turns": len(s["turns"]), "requests": len(mine),
            "client_requests": p["requests"], "usd": sum(cost(r) for r in mine),
            "input": sum(r["input"] for r in mine), "cache_read": sum(r["cache_read"] for r in mine),
            "cache_write": sum(r["cache_write"] for r in mine), "output": sum(r["output"] for r in mine),
            "retrieval_rounds": sum(1 for r in mine if r["kind"] == "retrieve"),
            "needed": needed, "recovered": needed - lost,
            "reformatted": sum(len(r.get("reformatted", [])) for r in answers), "answers_exact": p["exact"], "answers": p["answers"],
            "errors": p["errors"], "foreign_calls": p["foreign_calls"], "seconds": p["seconds"],
            "last_request_bytes": max((r["bytes"] for r in mine), default=0),
            "tool_share": p["tool_bytes"] / p["body_bytes"] if p["body_bytes"] else 0,
            "per_request_usd": [cost(r) for r in mine if r["kind"] != "retrieve"],
        }
        xs = exchanges.get(p.get("thread"))
        if xs is not None:
            row["exchanges"] = len(xs)
            row["counterfactual_usd"] = [x["counterfactual"]["usd"] for x in xs]
            row["billed_usd_ledger"] = sum(x["billed_usd"] for x in xs)
            row["fetch_back_tokens"] = sum(x.get("fetched_tokens", 0) for x in xs)
        result[s["name"]] = row
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cairn")
    ap.add_argument("--arms", default="direct,cairn,headroom")
    ap.add_argument("--sessions", type=int, default=24)
    ap.add_argument("--jobs", type=int, default=3)
    ap.add_argument("--headroom", default=os.path.expanduser("~/.cache/headroom-venv/bin/headroom"))
    ap.add_argument("--out", default=os.path.join(ROOT, "target", "replay"))
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    corpus_path = os.path.join(args.out, "corpus.json")
    corpus = corpus_mod.build()
    with open(corpus_path, "w") as f:
        json.dump(corpus, f)
    standin, port = start_standin(corpus_path)
    try:
        arms = {}
        for arm in args.arms.split(","):
            t = time.perf_counter()
            arms[arm] = run_arm(arm, args, corpus, corpus_path, port, args.out)
            print(f"replay: {arm} done in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    finally:
        standin.terminate()
    report = {"arms": arms}
    with open(os.path.join(args.out, "replay.json"), "w") as f:
        json.dump(report, f, indent=1)
    table = render(report)
    with open(os.path.join(args.out, "replay.md"), "w") as f:
        f.write(table + "\n")
    print(table)
    if args.check:
        sys.exit(check(report))


def render(report):
    arms = report["arms"]
    direct = arms.get("direct", {})
    names = list(next(iter(arms.values())).keys())
    head = "| session | tool share |" + "".join(f" {a} USD | {a} × |" for a in arms) + \
        "".join(f" {a} cache hit | {a} rounds | {a} lines |" for a in arms if a not in ("direct", "floor"))
    lines = [head, "|" + " --- |" * (head.count("|") - 1)]
    totals = {a: 0.0 for a in arms}
    for n in names:
        cells = [n, f"{direct[n]['tool_share']:.0%}" if direct else ""]
        for a, rows in arms.items():
            r = rows.get(n)
            if r is None:
                cells += ["", ""]
                continue
            totals[a] += r["usd"]
            ratio = r["usd"] / direct[n]["usd"] if direct.get(n) else float("nan")
            cells += [f"{r['usd']:.4f}", f"{ratio:.2f}"]
        for a, rows in arms.items():
            if a in ("direct", "floor"):
                continue
            r = rows.get(n)
            if r is None:
                cells += ["", "", ""]
                continue
            hit = r["cache_read"] / r["input"] if r["input"] else 0
            cells += [f"{hit:.0%}", str(r["retrieval_rounds"]), f"{r['recovered']}/{r['needed']}"]
        lines.append("| " + " | ".join(cells) + " |")
    total = ["**total**", ""]
    for a, rows in arms.items():
        same = sum(direct[n]["usd"] for n in rows) if direct else 0
        total += [f"{totals[a]:.4f}", f"{totals[a] / same:.2f}" if same else ""]
    lines.append("| " + " | ".join(total) + " |")
    return "\n".join(lines)


def check(report):
    """CI's assertions; answers the exit status."""
    failures = []
    direct, cairn = report["arms"]["direct"], report["arms"]["cairn"]
    for n, c in cairn.items():
        d = direct[n]
        if c["errors"] or d["errors"]:
            failures.append(f"{n}: errors {c['errors'] or d['errors']}")
        if c["recovered"] != c["needed"] or c["answers_exact"] != c["answers"]:
            failures.append(f"{n}: cairn recovered {c['recovered']}/{c['needed']} lines")
        if c["foreign_calls"]:
            failures.append(f"{n}: {c['foreign_calls']} of Cairn's calls reached the client")
        if c["usd"] > d["usd"]:
            failures.append(f"{n}: cairn {c['usd']:.4f} > direct {d['usd']:.4f}")
        ledger, billed = c["counterfactual_usd"], d["per_request_usd"]
        if len(ledger) != len(billed):
            failures.append(f"{n}: {len(ledger)} exchanges in the ledger for {len(billed)} client requests")
        for i, (modelled, real) in enumerate(zip(ledger, billed)):
            if abs(modelled - real) > TOLERANCE_EXCHANGE * real:
                failures.append(f"{n}: exchange {i}: counterfactual {modelled:.5f} vs direct bill {real:.5f}")
        if abs(sum(ledger) - d["usd"]) > TOLERANCE_SESSION * d["usd"]:
            failures.append(f"{n}: ledger counterfactual {sum(ledger):.4f} vs direct bill {d['usd']:.4f}")
    for f in failures:
        print("FAIL", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    main()
