"""A scripted model that bills like the provider, for the replay benchmark.

It answers each request of a replayed session with the session's recorded
step (corpus.py): the shell call, or the answer quoting the needed lines.
The step is the number of client-visible assistant steps already in the
conversation; calls to a proxy's own retrieval tools (`memory_*`,
`headroom_retrieve`) are not steps.

Before answering, it checks that every needed line is visible somewhere in
what it was sent (texts, and the strings of texts that are JSON). A line it
cannot see it retrieves, as a model would, through the tools the request
offers: `memory_grep` {uri, pattern: the line, fixed: true} on the pointer
found in the tool result that produced it (Cairn), or `headroom_retrieve`
{hash} on the hash found there (Headroom). A line still missing after one
retrieval per source (or with no way to retrieve it) is lost; the answer is
sent anyway and the loss is recorded (and whether the line is there with
only its spacing changed: `reformatted`).

Usage, by the providers' caching rules (tokens = bytes / 4 of each unit's
JSON; units in cache order: tools, system / instructions, then each
content block (Anthropic) or message / item (OpenAI)):
- Anthropic: a request reads the longest prefix an earlier request wrote,
  writes from there to its last `cache_control` breakpoint (prefixes under
  1,024 tokens are not cached) and pays the rest as plain input;
- OpenAI: the longest prefix, in whole units, that an earlier request of
  the same model sent is read if it holds >= 1,024 tokens, rounded down to
  128; there are no write charges.
TTLs are not modelled (a replay runs in minutes). Output tokens = bytes / 4
of the answer's content.

REPLAY_DUMP=DIR keeps each request body in DIR.
GET /_requests answers the records (usage, kind: call / retrieve / answer,
lost and recovered lines), POST /_reset forgets records and cache.
Run: python3 standin.py CORPUS.json  -> prints its port.
"""

import hashlib
import json
import os
import re
import sys
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
RECORDS = []
CACHE = {"anthropic": set(), "openai": set()}
SCRIPTS = {}
OUTPUTS = {}
SESSION = re.compile(r"\[replay session: ([\w.-]+)\]")
POINTER = re.compile(r"mem://([0-9a-f]{12,64})")
WHITESPACE = re.compile(r"\s+")
HASH = re.compile(r"(?:hash=|<<ccr:)([a-f0-9]{8,64})")
RETRIEVAL = ("memory_fetch", "memory_grep", "memory_search", "headroom_retrieve")
SHELL = {"claude": "Bash", "codex": "exec_command", "chat": "shell"}
MIN_CACHED = 1024
# REPLAY_DUMP=dir keeps every request body there (to see what a proxy sent).
DUMP = os.environ.get("REPLAY_DUMP")


def strings(value):
    """Every string in a JSON value, and those of strings that are JSON."""
    if isinstance(value, str):
        yield value
        if value[:1] in "{[":
            try:
                yield from strings(json.loads(value))
            except ValueError:
                pass
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)


def steps_of(api, body):
    """The conversation as (kind, name, payload) events in order:
    ("call", tool name, call id) for assistant tool calls, ("text",) for
    assistant texts, ("result", call id, content) for tool results."""
    events = []
    if api == "messages":
        for m in body.get("messages", []):
            content = m.get("content")
            blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
            for b in blocks:
                if not isinstance(b, dict):
                    continue
                if m.get("role") == "assistant" and b.get("type") == "tool_use":
                    events.append(("call", b.get("name"), b.get("id")))
                elif m.get("role") == "assistant" and b.get("type") == "text":
                    events.append(("text", None, None))
                elif b.get("type") == "tool_result":
                    events.append(("result", b.get("tool_use_id"), b.get("content")))
    elif api == "chat":
        for m in body.get("messages", []):
            if m.get("role") == "assistant":
                for c in m.get("tool_calls") or []:
                    events.append(("call", c["function"]["name"], c["id"]))
                if m.get("content") and not m.get("tool_calls"):
                    events.append(("text", None, None))
            elif m.get("role") == "tool":
                events.append(("result", m.get("tool_call_id"), m.get("content")))
    else:
        items = body.get("input")
        for it in items if isinstance(items, list) else []:
            kind = it.get("type")
            if kind == "function_call":
                events.append(("call", it.get("name"), it.get("call_id")))
            elif kind == "message" and it.get("role") == "assistant":
                events.append(("text", None, None))
            elif kind == "function_call_output":
                events.append(("result", it.get("call_id"), it.get("output")))
    return events


def position(events):
    """(client steps taken, client results in order, retrievals since the last client step)."""
    names, taken, results, since = {}, 0, [], []
    for kind, a, b in events:
        if kind == "call":
            names[b] = a
            if a in RETRIEVAL:
                since.append(b)
            else:
                taken, since = taken + 1, []
        elif kind == "text":
            taken, since = taken + 1, []
        elif names.get(a) not in RETRIEVAL:
            results.append(b)
    return taken, results, since


def cache_units(api, body):
    """(serialized unit, is a breakpoint) in cache order."""
    def unit(value):
        if isinstance(value, dict):
            bp = "cache_control" in value
            value = {k: v for k, v in value.items() if k != "cache_control"}
        else:
            bp = False
        return json.dumps(value, sort_keys=False), bp
    units = [unit(t) for t in body.get("tools") or []]
    if api == "messages":
        system = body.get("system")
        units += [unit(b) for b in (system if isinstance(system, list) else [{"type": "text", "text": system}] if system else [])]
        for m in body.get("messages", []):
            content = m.get("content")
            for b in content if isinstance(content, list) else [{"type": "text", "text": content}]:
                u, bp = unit(b)
                units.append((m.get("role", "") + u, bp))
    elif api == "chat":
        units += [unit(m) for m in body.get("messages", [])]
    else:
        if body.get("instructions"):
            units.append(unit(body["instructions"]))
        items = body.get("input")
        units += [unit(it) for it in (items if isinstance(items, list) else [items])]
    return units


def usage(api, body):
    """(input tokens in all, cache read, cache write)."""
    units = cache_units(api, body)
    h = hashlib.sha256(str(body.get("model")).encode())
    prefixes, size = [], 0
    for u, bp in units:
        h.update(u.encode())
        size += len(u)
        prefixes.append((h.hexdigest(), size // 4, bp))
    total = size // 4
    with LOCK:
        if api == "messages":
            written = CACHE["anthropic"]
            read = max((t for d, t, _ in prefixes if d in written), default=0)
            marks = [(d, t) for d, t, bp in prefixes if bp and t >= MIN_CACHED]
            write = max(0, marks[-1][1] - read) if marks else 0
            written.update(d for d, _ in marks)
            return total, read, write
        seen = CACHE["openai"]
        common = max((t for d, t, _ in prefixes if d in seen), default=0)
        seen.update(d for d, _, _ in prefixes)
    cached = common // 128 * 128 if common >= MIN_CACHED else 0
    return total, cached, 0


def decide(api, body):
    """(text, [(tool, args)], record fields) for this request."""
    session = next((m.group(1) for s in strings(body.get("messages") or body.get("input") or [])
                    for m in [SESSION.search(s)] if m), None)
    script = SCRIPTS.get(session)
    if script is None:
        return "no replay session in this request", [], {"kind": "unknown"}
    steps = [s for turn in script for s in turn["steps"]]
    taken, results, since = position(steps_of(api, body))
    if taken >= len(steps):
        return "the session is over", [], {"kind": "extra", "session": session}
    step = steps[taken]
    base = {"session": session, "step": taken}
    if "call" in step:
        return None, [(step["call"], None)], dict(base, kind="call")
    seen = "\n".join(strings(body))
    call_steps = [i for i, s in enumerate(steps) if "call" in s]
    missing = [(src, line) for src, line in step["needed"] if line not in seen]
    offered = {t.get("name") or (t.get("function") or {}).get("name") for t in tools_of(api, body)}
    calls, lost = [], []
    for src, line in missing:
        k = call_steps.index(src)
        result = json.dumps(results[k]) if k < len(results) else ""
        pointer, hashed = POINTER.search(result), HASH.search(result)
        if since:
            lost.append(line)  # retrieved once already this step: still not there
        elif pointer and "memory_grep" in offered:
            calls.append(("memory_grep", {"uri": f"mem://{pointer.group(1)}", "pattern": line, "fixed": True}))
        elif hashed and "headroom_retrieve" in offered:
            args = {"hash": hashed.group(1)}
            if ("headroom_retrieve", args) not in calls:
                calls.append(("headroom_retrieve", args))
        else:
            lost.append(line)
    if calls:
        return None, calls, dict(base, kind="retrieve", retrievals=len(calls))
    # A lost line whose characters are all there, only spaced differently
    # (JSON re-serialized compactly, say): not byte for byte, but readable.
    squeezed = WHITESPACE.sub("", seen) if lost else ""
    reformatted = [line for line in lost if WHITESPACE.sub("", line) in squeezed]
    return step["answer"], [], dict(base, kind="answer", needed=len(step["needed"]),
                                    retrievals_made=len(since), lost=lost, reformatted=reformatted)


def tools_of(api, body):
    """The tools offered, Codex's namespaced `additional_tools` included."""
    tools = list(body.get("tools") or [])
    for it in body.get("input") if isinstance(body.get("input"), list) else []:
        if it.get("type") == "additional_tools":
            tools += it.get("tools") or []
    return [t for t in tools if isinstance(t, dict)]


def answer(api, model, text, calls, n, use):
    """The provider's JSON answer."""
    total, read, write = use
    shape = SHELL_ARGS.get(api)
    content = []
    if api == "messages":
        if text:
            content.append({"type": "text", "text": text})
        for i, (name, args) in enumerate(calls):
            content.append({"type": "tool_use", "id": f"toolu_{n}_{i}", "name": shape[0] if args is None else name,
                            "input": shape[1](name) if args is None else args})
        out = len(json.dumps(content)) // 4
        return {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": model, "content": content,
                "stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": total - read - write, "cache_read_input_tokens": read,
                          "cache_creation_input_tokens": write, "output_tokens": out}}
    if api == "chat":
        message = {"role": "assistant", "content": text}
        if calls:
            message["tool_calls"] = [{"id": f"call_{n}_{i}", "type": "function", "function": {
                "name": shape[0] if args is None else name,
                "arguments": json.dumps(shape[1](name) if args is None else args)}} for i, (name, args) in enumerate(calls)]
        out = len(json.dumps(message)) // 4
        return {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 1, "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
                "usage": {"prompt_tokens": total, "completion_tokens": out, "total_tokens": total + out,
                          "prompt_tokens_details": {"cached_tokens": read}}}
    output = []
    if text:
        output.append({"type": "message", "id": f"msg_{n}", "status": "completed", "role": "assistant",
                       "content": [{"type": "output_text", "text": text, "annotations": []}]})
    for i, (name, args) in enumerate(calls):
        output.append({"type": "function_call", "id": f"fc_{n}_{i}", "call_id": f"call_{n}_{i}",
                       "name": shape[0] if args is None else name, "status": "completed",
                       "arguments": json.dumps(shape[1](name) if args is None else args)})
    out = len(json.dumps(output)) // 4
    return {"id": f"resp_{n}", "object": "response", "created_at": 1, "status": "completed", "model": model,
            "output": output, "usage": {"input_tokens": total, "output_tokens": out, "total_tokens": total + out,
                                        "input_tokens_details": {"cached_tokens": read},
                                        "output_tokens_details": {"reasoning_tokens": 0}}}


def command_of(key):
    return "replay " + key


SHELL_ARGS = {
    "messages": ("Bash", lambda key: {"command": command_of(key), "description": f"Run {key}"}),
    "chat": ("shell", lambda key: {"command": command_of(key)}),
    "responses": ("exec_command", lambda key: {"cmd": command_of(key)}),
}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, value):
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path.startswith("/_requests"):
            with LOCK:
                self.reply(200, list(RECORDS))
        else:
            self.reply(200, {"ok": True})

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        if self.path == "/_reset":
            with LOCK:
                RECORDS.clear()
                CACHE["anthropic"].clear()
                CACHE["openai"].clear()
            return self.reply(200, {"ok": True})
        path = self.path.split("?")[0]
        api = {"/v1/messages": "messages", "/v1/chat/completions": "chat", "/v1/responses": "responses"}.get(path)
        if api is None:
            return self.reply(404, {"error": {"type": "not_found", "message": path}})
        try:
            body = json.loads(raw)
        except ValueError as e:
            return self.reply(400, {"error": {"type": "invalid_request_error", "message": str(e)}})
        if body.get("stream") and api == "chat":
            return self.reply(400, {"error": {"type": "invalid_request_error", "message": "the replay streams Messages and Responses only"}})
        if DUMP:
            with open(os.path.join(DUMP, f"{len(RECORDS):05d}.json"), "wb") as f:
                f.write(raw)
        text, calls, fields = decide(api, body)
        use = usage(api, body)
        with LOCK:
            # Ids count this session's requests: the same in every run,
            # however the sessions interleave.
            session = fields.get("session") or ""
            n = f"{zlib.crc32(session.encode()):08x}{sum(1 for r in RECORDS if r.get('session') == session)}"
            value = answer(api, body.get("model", ""), text, calls, n, use)
            u = value["usage"]
            out = u.get("output_tokens", u.get("completion_tokens", 0))
            RECORDS.append(dict(fields, api=api, model=body.get("model"), bytes=len(raw), input=use[0],
                                cache_read=use[1], cache_write=use[2], output=out))
        if body.get("stream"):
            self.stream(api, value)
        else:
            self.reply(200, value)

    def stream(self, api, value):
        """The answer as the provider streams it (what Claude Code and Codex ask for)."""
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        for name, data in (messages_events if api == "messages" else responses_events)(value):
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()
        self.close_connection = True


def messages_events(value):
    """A Messages answer as its server-sent events."""
    usage = value["usage"]
    start = dict(value, content=[], stop_reason=None, usage=dict(usage, output_tokens=1))
    yield "message_start", {"type": "message_start", "message": start}
    for i, block in enumerate(value["content"]):
        if block["type"] == "text":
            yield "content_block_start", {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            yield "content_block_start", {"type": "content_block_start", "index": i, "content_block": dict(block, input={})}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        yield "content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": i}
    yield "message_delta", {"type": "message_delta", "delta": {"stop_reason": value["stop_reason"], "stop_sequence": None},
                            "usage": {"output_tokens": usage["output_tokens"]}}
    yield "message_stop", {"type": "message_stop"}


def responses_events(value):
    """A Responses answer as its server-sent events."""
    seq = iter(range(1_000_000))
    shell = dict(value, status="in_progress", output=[], usage=None)
    yield "response.created", {"type": "response.created", "sequence_number": next(seq), "response": shell}
    for index, item in enumerate(value["output"]):
        base = {"sequence_number": 0, "output_index": index, "item_id": item["id"]}
        if item["type"] == "message":
            text = item["content"][0]["text"]
            yield "response.output_item.added", {"type": "response.output_item.added", "sequence_number": next(seq),
                                                 "output_index": index, "item": dict(item, status="in_progress", content=[])}
            yield "response.content_part.added", dict(base, type="response.content_part.added", sequence_number=next(seq),
                                                      content_index=0, part={"type": "output_text", "text": "", "annotations": []})
            yield "response.output_text.delta", dict(base, type="response.output_text.delta", sequence_number=next(seq),
                                                     content_index=0, delta=text, logprobs=[])
            yield "response.output_text.done", dict(base, type="response.output_text.done", sequence_number=next(seq),
                                                    content_index=0, text=text, logprobs=[])
            yield "response.content_part.done", dict(base, type="response.content_part.done", sequence_number=next(seq),
                                                     content_index=0, part=item["content"][0])
        else:
            yield "response.output_item.added", {"type": "response.output_item.added", "sequence_number": next(seq),
                                                 "output_index": index, "item": dict(item, arguments="", status="in_progress")}
            yield "response.function_call_arguments.delta", dict(base, type="response.function_call_arguments.delta",
                                                                 sequence_number=next(seq), delta=item["arguments"])
            yield "response.function_call_arguments.done", dict(base, type="response.function_call_arguments.done",
                                                                sequence_number=next(seq), arguments=item["arguments"])
        yield "response.output_item.done", {"type": "response.output_item.done", "sequence_number": next(seq),
                                            "output_index": index, "item": item}
    yield "response.completed", {"type": "response.completed", "sequence_number": next(seq), "response": value}


def main():
    with open(sys.argv[1]) as f:
        corpus = json.load(f)
    for s in corpus["sessions"]:
        SCRIPTS[s["name"]] = s["turns"]
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
