"""A stand-in LLM provider for the proxy tests: OpenAI chat completions,
OpenAI Responses and Anthropic Messages, JSON and SSE.

It records every request (GET /_requests answers them, POST /_reset forgets
them) and answers like a scripted model that reads its input:
- when the conversation holds the result of a `memory_fetch` call, it answers
  text: "FETCHED:\n" followed by the fetched slice's text, verbatim;
- else, when `memory_fetch` is offered and a text holds a `mem://<id>` pointer,
  it calls `memory_fetch` for lines 3-7 of that pointer;
- else it answers "no pointer".
Header `x-test-scenario` changes that: `mixed` (memory_fetch and the client's
`run_tests` in one turn, then `run_tests` alone once the fetch is answered),
`error_400` / `error_500` (provider errors), `cut` (a stream that stops in the
middle). Tool results whose call is not in the conversation are a 400, as a
real provider answers them.

Run: python3 upstream.py  → prints the port on its first line.

Copy for the real clients (tests/clients/: captures, suite.py). When the
request offers a shell tool (Claude Code's `Bash`, Codex's `shell`/
`shell_command`/`exec_command`/`local_shell`, Codex code mode's freeform
`exec`, the framework drivers' `shell`) it plays an agent:
- a user turn with no tool result yet: call the shell with STANDIN_COMMAND
  (default: 3000 lines, ~63 KB, with ONE planted line `PLANTED-<n>-7f3a9c`
  whose number only the output tells; Codex code mode gets JavaScript with an
  `// @exec` pragma raising its 10,000-token output budget);
- a tool result of this turn holds the planted line: answer it;
- a result holds only a `mem://` pointer (Cairn offloaded the output): call
  `memory_grep` {uri, pattern: "PLANTED"} on it when offered, else
  `memory_fetch` {uri}, then answer from that result;
- a follow-up turn (no tool result after the user's last message) whose
  earlier assistant text holds the planted line: answer it again.
Header `x-standin-preamble: 1` (or "preamble" in the model name): text
before each tool call (Anthropic text block / Responses message / chat
content), else none.
Header `x-standin-turn` (or the word in the model name) changes the turn:
- `parallel`: the first tool turn calls the shell TWICE in one answer, the
  big command and `printf 'second-call-%s\n' ok`;
- `mixed`: the turn that reads the big output (its result holds the planted
  line, or a `mem://` pointer: then WITH the memory_grep/memory_fetch call,
  in ONE answer) also calls the shell with `printf 'mixed-call-%s\n' ok`,
  until a result holds `mixed-call-ok`. Direct (no pointer) that turn is the
  shell call alone; through Cairn it mixes Cairn's tool and the client's.
The answer then names the planted line and each `second-call-ok` /
`mixed-call-ok` the turn's results hold (a follow-up turn repeats them). Requests without a shell tool (titles, summaries)
get plain text. Ids (message, tool call, reasoning) differ per answer.

Provider rules, each a 400 in the provider's own error shape, logged on
stderr and kept in the request's record (`status`, `error`): a tool result
without its call; a tool call (tool_use / function_call / custom_tool_call /
chat tool_calls) without its result; a Responses `reasoning` item not
followed by an item; an Anthropic `thinking` block whose signature is not
one this stand-in issued for that text.

Prompt-cache emulation in `usage` (tokens = bytes / 4). Units in cache
order: tools, then system blocks / instructions, then each content block
(Anthropic) or message / input item (OpenAI), each json.dumps'ed without
`cache_control`. Anthropic: a request reads the longest prefix an earlier
request wrote (written at its `cache_control` breakpoints) and writes from
there to its last breakpoint: `input_tokens` (uncached),
`cache_read_input_tokens`, `cache_creation_input_tokens`. OpenAI (chat and
Responses): cached = the longest common byte prefix with any earlier
request of the same model, if >= 1024 tokens, rounded down to 128:
`prompt_tokens_details.cached_tokens` / `input_tokens_details.cached_tokens`.
POST /_reset forgets the requests, the cache and the issued signatures.
Each record also has `t` (arrival, epoch s), `usage` and `answer`.

It also answers HEAD/GET on any path, refuses WebSocket upgrades (so clients
fall back to HTTP+SSE), accepts chunked/gzip request bodies, and emits a
`thinking` block (Anthropic, when thinking is on) or a `reasoning` item with
encrypted_content (Responses with `reasoning`) so the follow-up request
shows how the client echoes them back.
"""

import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REQUESTS = []
LOCK = threading.Lock()
POINTER = re.compile(r"mem://([0-9a-f]{12,64})")


def texts(value):
    """Every string inside a JSON value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from texts(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from texts(v)


def fetch_result(api, body):
    """The text of the last memory_fetch result in the conversation, if any."""
    found = None
    if api == "chat":
        names = {}
        for m in body.get("messages", []):
            for c in m.get("tool_calls") or []:
                names[c["id"]] = c["function"]["name"]
            if m.get("role") == "tool" and names.get(m.get("tool_call_id")) == "memory_fetch":
                found = m["content"]
    elif api == "responses":
        names = {}
        for item in body.get("input", []) if isinstance(body.get("input"), list) else []:
            if item.get("type") == "function_call":
                names[item["call_id"]] = item["name"]
            if item.get("type") == "function_call_output" and names.get(item["call_id"]) == "memory_fetch":
                found = item["output"]
    else:
        names = {}
        for m in body.get("messages", []):
            if isinstance(m.get("content"), list):
                for b in m["content"]:
                    if b.get("type") == "tool_use":
                        names[b["id"]] = b["name"]
                    if b.get("type") == "tool_result" and names.get(b["tool_use_id"]) == "memory_fetch":
                        found = b["content"]
    if found is None:
        return None
    if isinstance(found, list):
        found = "".join(p.get("text", "") for p in found)
    try:
        d = json.loads(found)
    except ValueError:
        return found
    return d.get("text", found) if isinstance(d, dict) else found


def offered(api, body, name):
    for t in body.get("tools") or []:
        if t.get("name") == name or t.get("function", {}).get("name") == name:
            return True
    return False


def broken_pairs(api, body):
    """A tool result without its call, as providers refuse it."""
    calls = set()
    if api == "chat":
        for m in body.get("messages", []):
            for c in m.get("tool_calls") or []:
                calls.add(c["id"])
            if m.get("role") == "tool" and m.get("tool_call_id") not in calls:
                return m.get("tool_call_id")
    elif api == "responses" and isinstance(body.get("input"), list):
        for item in body["input"]:
            if item.get("type") in ("function_call", "custom_tool_call"):
                calls.add(item["call_id"])
            if item.get("type") in ("function_call_output", "custom_tool_call_output") and item["call_id"] not in calls:
                return item["call_id"]
    elif api == "messages":
        for m in body.get("messages", []):
            for b in m["content"] if isinstance(m.get("content"), list) else []:
                if b.get("type") == "tool_use":
                    calls.add(b["id"])
                if b.get("type") == "tool_result" and b["tool_use_id"] not in calls:
                    return b["tool_use_id"]
    return None


SHELLS = ("Bash", "shell", "shell_command", "exec_command", "local_shell", "container.exec")


def all_tools(body):
    """Top-level tools plus Codex's `additional_tools` input items, namespaces flattened."""
    found = list(body.get("tools") or [])
    for item in body.get("input") if isinstance(body.get("input"), list) else []:
        if item.get("type") == "additional_tools":
            found += item.get("tools") or []
    flat = []
    while found:
        t = found.pop(0)
        if t.get("type") == "namespace":
            found += t.get("tools") or []
        else:
            flat.append(t)
    return flat


import hashlib
import os

# What the scripted model runs: 3000 lines (~63 KB) with ONE planted line that
# only the output tells (the command holds "PLANTED-" and "-7f3a9c" apart, the
# number comes from awk), so a model can only answer by reading the output.
COMMAND = os.environ.get("STANDIN_COMMAND") or \
    "seq -f 'row %04g filler-text' 1 3000 | awk 'NR==1234{$0=\"PLANTED-\" NR*3 \"-7f3a9c\"}1'"
PLANTED = re.compile(os.environ.get("STANDIN_PLANTED") or r"PLANTED-\d+-7f3a9c")
# Codex code mode: JavaScript calling tools.exec_command; print the raw output (not the JSON object).
CODE_MODE_JS_TEMPLATE = ('// @exec: {"max_output_tokens": 100000}\n'
                         "const r = await tools.exec_command({cmd: %s, max_output_tokens: 100000});\n"
                         "text(typeof r === \"object\" && r !== null && \"output\" in r ? r.output : JSON.stringify(r));\n")
CODE_MODE_JS = CODE_MODE_JS_TEMPLATE % json.dumps(COMMAND)
# The second shell call of `x-standin-turn: parallel` / `mixed`: a small output that only the
# result tells (the command holds "-call-" and "ok" apart), so the answer must come from it.
SECOND_COMMAND = "printf 'second-call-%s\\n' ok"
MIXED_COMMAND = "printf 'mixed-call-%s\\n' ok"
EXTRA = re.compile(r"\b(?:second|mixed)-call-ok\b")
MEMORY_TOOLS = ("memory_fetch", "memory_grep", "memory_search")


def shell_tool(body):
    """(name, parameters schema, tool type) of the first shell tool offered."""
    tools = all_tools(body)
    for t in tools:
        # Codex "code mode": one freeform `exec` tool that runs JavaScript calling tools.exec_command.
        if t.get("type") == "custom" and t.get("name") == "exec":
            return "exec", None, "custom"
    for t in tools:
        name = t.get("name") or t.get("function", {}).get("name") or t.get("type")
        if name in SHELLS:
            schema = t.get("input_schema") or t.get("parameters") or t.get("function", {}).get("parameters") or {}
            return name, schema, t.get("type")
    return None


def shell_args(name, schema, command=None):
    command = command or COMMAND
    if name == "exec" and schema is None:
        return CODE_MODE_JS_TEMPLATE % json.dumps(command)
    props = (schema or {}).get("properties") or {}
    args = {}
    for key in ("command", "cmd"):
        if key in props:
            kind = props[key].get("type")
            args[key] = ["bash", "-lc", command] if kind == "array" else command
            break
    else:
        args["command"] = command
    if "description" in props:
        args["description"] = "Print the stand-in's 3000 lines" if command == COMMAND else "Print one short line"
    if "max_output_tokens" in props:
        args["max_output_tokens"] = 100000
    if "workdir" in props and "workdir" in (schema.get("required") or []):
        args["workdir"] = "."
    return args


def part_text(value):
    """The text of a tool result / message content in any shape."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(part_text(v) for v in value)
    if isinstance(value, dict):
        if "text" in value and isinstance(value["text"], str):
            return value["text"]
        if "content" in value:
            return part_text(value["content"])
        if "output" in value:
            return part_text(value["output"])
    return ""


def conversation(api, body):
    """The conversation as a flat list: ("user", text), ("assistant", text),
    ("call", id, name, args) and ("result", id, text), in order. "user" is a
    user's own message (not one that only carries tool results)."""
    out = []
    if api == "responses":
        items = body.get("input")
        if isinstance(items, str):
            return [("user", items)]
        for it in items or []:
            t = it.get("type", "message")
            if t == "message":
                if it.get("role") == "user":
                    out.append(("user", part_text(it.get("content"))))
                elif it.get("role") == "assistant":
                    out.append(("assistant", part_text(it.get("content"))))
            elif t in ("function_call", "custom_tool_call", "local_shell_call"):
                out.append(("call", it.get("call_id"), it.get("name"), it.get("arguments") or it.get("input")))
            elif t.endswith("_call_output"):
                out.append(("result", it.get("call_id"), part_text(it.get("output"))))
        return out
    for m in body.get("messages", []):
        role, content = m.get("role"), m.get("content")
        if api == "chat":
            if role == "user":
                out.append(("user", part_text(content)))
            elif role == "assistant":
                out.append(("assistant", part_text(content)))
                for c in m.get("tool_calls") or []:
                    out.append(("call", c.get("id"), c["function"]["name"], c["function"].get("arguments")))
            elif role == "tool":
                out.append(("result", m.get("tool_call_id"), part_text(content)))
            continue
        if role not in ("user", "assistant"):
            continue
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
        if role == "user" and not any(b.get("type") == "tool_result" for b in blocks):
            out.append(("user", part_text(blocks)))
            continue
        for b in blocks:
            if b.get("type") == "text":
                out.append((role, b.get("text", "")))
            elif b.get("type") == "tool_use":
                out.append(("call", b.get("id"), b.get("name"), b.get("input")))
            elif b.get("type") == "tool_result":
                out.append(("result", b.get("tool_use_id"), part_text(b.get("content"))))
    return out


def preamble_on(headers, body):
    return headers.get("x-standin-preamble", "") not in ("", "0") or "preamble" in str(body.get("model", ""))


def turn_mode(headers, body):
    """`x-standin-turn: parallel|mixed` (or "parallel" / "mixed" in the model name), else ""."""
    mode = headers.get("x-standin-turn", "").strip().lower()
    if mode in ("parallel", "mixed"):
        return mode
    model = str(body.get("model", "")).lower()
    return next((m for m in ("parallel", "mixed") if m in model), "")


def decide_agent(api, body, preamble, mode=""):
    """The scripted agent: run the shell, read the planted line from its result;
    when the result is only a Cairn pointer, memory_grep (else memory_fetch) it;
    a follow-up turn answers from what was said before.
    mode "parallel": the first tool turn calls the shell twice (COMMAND and
    SECOND_COMMAND); mode "mixed": until a result holds `mixed-call-ok`, the turn
    that reads the output also calls the shell with MIXED_COMMAND (through Cairn:
    memory_grep and the shell in ONE turn; direct: the shell alone). The answer
    names the planted line and every `second-call-ok` / `mixed-call-ok` the
    turn's results hold."""
    n = len(REQUESTS)
    evs = conversation(api, body)
    last_user = max((i for i, e in enumerate(evs) if e[0] == "user"), default=-1)
    turn, before = evs[last_user + 1:], evs[:last_user + 1] if last_user >= 0 else []
    names = {e[1]: e[2] for e in evs if e[0] == "call"}
    results = [(names.get(e[1]), e[2]) for e in turn if e[0] == "result"]
    extras = []
    for _, text in results:
        for x in EXTRA.findall(text):
            if x not in extras:
                extras.append(x)
    also = "".join(f"; the other call printed: {x}" for x in extras)
    shell = shell_tool(body)
    mixed_call = [(shell[0], shell_args(shell[0], shell[1], MIXED_COMMAND))] \
        if mode == "mixed" and "mixed-call-ok" not in extras else []
    for _, text in results:
        m = PLANTED.search(text)
        if m:
            if mixed_call:
                return ("Now one more short command." if preamble else None), mixed_call
            return f"The planted line is: {m.group(0)}{also} (stand-in request {n})", []
    said = None
    for e in before:
        if e[0] == "assistant" and PLANTED.search(e[1]):
            said = PLANTED.search(e[1]).group(0)
            said_extras = list(dict.fromkeys(EXTRA.findall(e[1])))
    if not results:
        if said and len(evs) > 1:
            again = "".join(f"; the other call printed: {x}" for x in said_extras)
            return f"Follow-up: the planted line was {said}{again} (stand-in request {n})", []
        calls = [(shell[0], shell_args(shell[0], shell[1]))]
        if mode == "parallel":
            calls.append((shell[0], shell_args(shell[0], shell[1], SECOND_COMMAND)))
        return ("I'll run the command and look for the planted line." if preamble else None), calls
    called = {name for name, _ in results}
    pointer = None
    for _, text in results:
        m = POINTER.search(text)
        if m:
            pointer = m.group(1)
    lead = "The output was stored; let me search it." if preamble else None
    if pointer and offered(api, body, "memory_grep") and "memory_grep" not in called:
        return lead, [("memory_grep", {"uri": f"mem://{pointer}", "pattern": "PLANTED"})] + mixed_call
    if pointer and offered(api, body, "memory_fetch") and "memory_fetch" not in called:
        return lead, [("memory_fetch", {"uri": f"mem://{pointer}"})] + mixed_call
    return f"I could not find the planted line (stand-in request {n})", []


def decide(api, body, scenario, headers):
    """(text, calls): what the scripted model says."""
    n = len(REQUESTS)
    if shell_tool(body) and not scenario:
        return decide_agent(api, body, preamble_on(headers, body), turn_mode(headers, body))
    if not all_tools(body) and not scenario:
        return f"Stand-in text (request {n})", []   # titles, summaries
    fetched = fetch_result(api, body)
    if scenario == "mixed":
        if fetched is None:
            pointer = next((m for t in texts(body.get("messages") or body.get("input")) for m in POINTER.findall(t)), None)
            return None, [("memory_fetch", {"uri": f"mem://{pointer}#L3-7"}), ("run_tests", {"path": "tests/"})]
        return "after fetch", [("run_tests", {"path": "tests/"})]
    if fetched is not None:
        return "FETCHED:\n" + fetched, []
    if offered(api, body, "memory_fetch"):
        convo = body.get("messages") if api != "responses" else body.get("input")
        for t in texts(convo):
            m = POINTER.search(t)
            if m:
                return None, [("memory_fetch", {"uri": f"mem://{m.group(1)}#L3-7"})]
    return f"no pointer (request {n})", []


# ---- provider rules (400s in the provider's own error shape) ----

ISSUED = set()   # thinking signatures this stand-in gave out


def signature(thinking):
    sig = "sig-" + hashlib.sha256(thinking.encode()).hexdigest()[:24]
    with LOCK:
        ISSUED.add(sig)
    return sig


def broken_reasoning(api, body):
    """A Responses `reasoning` item not followed by the item that followed it
    (the real API: "Item 'rs_…' of type 'reasoning' was provided without its
    required following item."), or an Anthropic thinking block whose
    signature is not one this stand-in gave for that text."""
    if api == "responses" and isinstance(body.get("input"), list):
        items = body["input"]
        for k, item in enumerate(items):
            if item.get("type") != "reasoning":
                continue
            following = items[k + 1] if k + 1 < len(items) else None
            if following is None or following.get("type") == "reasoning":
                return f"Item '{item.get('id')}' of type 'reasoning' was provided without its required following item."
    if api == "messages":
        for i, m in enumerate(body.get("messages", [])):
            for k, b in enumerate(m["content"] if isinstance(m.get("content"), list) else []):
                if b.get("type") == "thinking":
                    given = b.get("signature") or ""
                    if given not in ISSUED or given != "sig-" + hashlib.sha256(b.get("thinking", "").encode()).hexdigest()[:24]:
                        return f"messages.{i}.content.{k}: Invalid `signature` in `thinking` block"
    return None


def unanswered_call(api, body):
    """A tool call in the history without its result."""
    evs = conversation(api, body)
    answered = {e[1] for e in evs if e[0] == "result"}
    for e in evs:
        if e[0] == "call" and e[1] not in answered:
            if api == "messages":
                return f"messages: `tool_use` ids were found without `tool_result` blocks immediately after: {e[1]}. Each `tool_use` block must have a corresponding `tool_result` block in the next message."
            if api == "chat":
                return f"An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {e[1]}"
            return f"No tool output found for function call {e[1]}."
    return None


# ---- prompt-cache emulation ----

CACHE = {"anthropic": set(), "openai": {}}   # written prefix hashes / model -> earlier prompts


def tokens(n_bytes):
    return n_bytes // 4


def strip_cache_control(value):
    if isinstance(value, dict):
        return {k: strip_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_cache_control(v) for v in value]
    return value


def prompt_units(api, body):
    """The prompt as units in cache order: (serialized unit, has cache_control)."""
    units = []
    def add(value):
        units.append((json.dumps(strip_cache_control(value)), isinstance(value, dict) and "cache_control" in value))
    for t in body.get("tools") or []:
        add(t)
    if api == "messages":
        system = body.get("system")
        for b in system if isinstance(system, list) else ([{"type": "text", "text": system}] if system else []):
            add(b)
        for m in body.get("messages", []):
            content = m.get("content")
            for b in content if isinstance(content, list) else [{"type": "text", "text": content}]:
                add(dict(b, _role=m.get("role")) if isinstance(b, dict) else b)
    elif api == "chat":
        for m in body.get("messages", []):
            add(m)
    else:
        if body.get("instructions"):
            add(body["instructions"])
        items = body.get("input")
        for it in items if isinstance(items, list) else [items]:
            add(it)
    return units


def cache_usage(api, body):
    """(input_tokens total, cache read, cache write) for this request."""
    units = prompt_units(api, body)
    total = tokens(sum(len(u) for u, _ in units))
    if api == "messages":
        h, acc, prefixes = hashlib.sha256(), 0, []
        for u, bp in units:
            h.update(u.encode()); acc += len(u)
            prefixes.append((h.hexdigest(), tokens(acc), bp))
        with LOCK:
            written = CACHE["anthropic"]
            read = max((t for d, t, _ in prefixes if d in written), default=0)
            bps = [(d, t) for d, t, bp in prefixes if bp]
            last_bp = bps[-1][1] if bps else 0
            write = max(0, last_bp - read)
            for d, _ in bps:
                written.add(d)
        return total, read, write
    joined = "".join(u for u, _ in units)
    model = body.get("model", "")
    with LOCK:
        earlier = CACHE["openai"].setdefault(model, [])
        common = max((len(os.path.commonprefix([joined, e])) for e in earlier), default=0)
        earlier.append(joined)
    cached = tokens(common)
    cached = cached // 128 * 128 if cached >= 1024 else 0
    return total, min(cached, total), 0


CTX = threading.local()


def rid():
    """This request's number: ids differ between answers, as a real provider's do."""
    return getattr(CTX, "n", 0)


def usage_of(api):
    total, read, write = getattr(CTX, "cache", (100, 0, 0))
    if api == "messages":
        return {"input_tokens": total - read - write, "output_tokens": 5, "cache_read_input_tokens": read,
                "cache_creation_input_tokens": write}
    if api == "chat":
        return {"prompt_tokens": total, "completion_tokens": 5, "total_tokens": total + 5,
                "prompt_tokens_details": {"cached_tokens": read}}
    return {"input_tokens": total, "output_tokens": 5, "total_tokens": total + 5,
            "input_tokens_details": {"cached_tokens": read}, "output_tokens_details": {"reasoning_tokens": 0}}


def chat_json(text, calls, model):
    message = {"role": "assistant", "content": text, "refusal": None}
    if calls:
        message["tool_calls"] = [{"id": f"call_{rid()}_{i}_{name}", "type": "function",
                                  "function": {"name": name, "arguments": json.dumps(args)}}
                                 for i, (name, args) in enumerate(calls)]
    return {"id": f"chatcmpl-standin-{rid()}", "object": "chat.completion", "created": 1, "model": model,
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": usage_of("chat")}


def chat_events(text, calls, model, include_usage):
    base = {"id": f"chatcmpl-standin-{rid()}", "object": "chat.completion.chunk", "created": 1, "model": model}
    yield None, {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}
    if text:
        for piece in split(text):
            yield None, {**base, "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
    for i, (name, args) in enumerate(calls):
        arguments = json.dumps(args)
        yield None, {**base, "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": i, "id": f"call_{rid()}_{i}_{name}", "type": "function", "function": {"name": name, "arguments": ""}}]},
            "finish_reason": None}]}
        for piece in split(arguments):
            yield None, {**base, "choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": i, "function": {"arguments": piece}}]}, "finish_reason": None}]}
    yield None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls" if calls else "stop"}]}
    if include_usage:
        yield None, {**base, "choices": [], "usage": usage_of("chat")}
    yield None, "[DONE]"


def messages_json(text, calls, model, thinking=False):
    content = []
    if thinking:
        thought = f"Request {len(REQUESTS)}: deciding the next step."
        content.append({"type": "thinking", "thinking": thought, "signature": signature(thought)})
    if text:
        content.append({"type": "text", "text": text})
    for i, (name, args) in enumerate(calls):
        content.append({"type": "tool_use", "id": f"toolu_{rid()}_{i}_{name}", "name": name, "input": args})
    return {"id": f"msg_standin_{rid()}", "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None, "usage": usage_of("messages")}


def messages_events(text, calls, model, thinking=False):
    start_usage = dict(usage_of("messages"), output_tokens=1)
    yield "message_start", {"type": "message_start", "message": {
        "id": f"msg_standin_{rid()}", "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": start_usage}}
    index = 0
    if thinking:
        thought = f"Request {len(REQUESTS)}: deciding the next step."
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": thought}}
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "signature_delta", "signature": signature(thought)}}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
        index += 1
    if text:
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}
        yield "ping", {"type": "ping"}
        for piece in split(text):
            yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
        index += 1
    for i, (name, args) in enumerate(calls):
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": {
            "type": "tool_use", "id": f"toolu_{rid()}_{i}_{name}", "name": name, "input": {}}}
        for piece in split(json.dumps(args)):
            yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": piece}}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
        index += 1
    yield "message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None},
                            "usage": {"output_tokens": 5}}
    yield "message_stop", {"type": "message_stop"}


def responses_output(text, calls, reasoning=False):
    output = []
    if reasoning:
        output.append({"type": "reasoning", "id": f"rs_{len(REQUESTS)}", "summary": [{"type": "summary_text", "text": "**Planning** stand-in"}],
                       "encrypted_content": "gAAAAstand-in-encrypted-reasoning"})
    if text:
        output.append({"type": "message", "id": f"msg_{rid()}", "status": "completed", "role": "assistant",
                       "content": [{"type": "output_text", "text": text, "annotations": []}]})
    for i, (name, args) in enumerate(calls):
        if isinstance(args, str):  # freeform (custom) tool: raw text input
            output.append({"type": "custom_tool_call", "id": f"ctc_{rid()}_{i}", "call_id": f"call_{rid()}_{i}_{name}", "name": name,
                           "input": args, "status": "completed"})
            continue
        output.append({"type": "function_call", "id": f"fc_{rid()}_{i}", "call_id": f"call_{rid()}_{i}_{name}", "name": name,
                       "arguments": json.dumps(args), "status": "completed"})
    return output


def responses_json(text, calls, model, reasoning=False):
    return {"id": f"resp_{rid()}", "object": "response", "created_at": 1, "status": "completed", "model": model,
            "output": responses_output(text, calls, reasoning), "parallel_tool_calls": True, "tool_choice": "auto",
            "tools": [], "usage": usage_of("responses"), "error": None, "incomplete_details": None,
            "instructions": None, "metadata": {}, "temperature": 1.0, "top_p": 1.0, "text": {"format": {"type": "text"}}}


def responses_events(text, calls, model, reasoning=False):
    seq = iter(range(1000))
    shell = dict(responses_json(None, [], model), status="in_progress", output=[], usage=None)
    yield "response.created", {"type": "response.created", "sequence_number": next(seq), "response": shell}
    yield "response.in_progress", {"type": "response.in_progress", "sequence_number": next(seq), "response": shell}
    for index, item in enumerate(responses_output(text, calls, reasoning)):
        if item["type"] == "reasoning":
            yield "response.output_item.added", {"type": "response.output_item.added", "sequence_number": next(seq), "output_index": index,
                                                 "item": {"type": "reasoning", "id": item["id"], "summary": []}}
        elif item["type"] == "custom_tool_call":
            yield "response.output_item.added", {"type": "response.output_item.added", "sequence_number": next(seq), "output_index": index,
                                                 "item": dict(item, input="", status="in_progress")}
            yield "response.custom_tool_call_input.delta", {"type": "response.custom_tool_call_input.delta", "sequence_number": next(seq),
                                                            "item_id": item["id"], "output_index": index, "delta": item["input"]}
            yield "response.custom_tool_call_input.done", {"type": "response.custom_tool_call_input.done", "sequence_number": next(seq),
                                                           "item_id": item["id"], "output_index": index, "input": item["input"]}
        elif item["type"] == "message":
            yield "response.output_item.added", {"type": "response.output_item.added", "sequence_number": next(seq), "output_index": index,
                                                 "item": dict(item, status="in_progress", content=[])}
            yield "response.content_part.added", {"type": "response.content_part.added", "sequence_number": next(seq), "item_id": item["id"],
                                                  "output_index": index, "content_index": 0,
                                                  "part": {"type": "output_text", "text": "", "annotations": []}}
            for piece in split(text):
                yield "response.output_text.delta", {"type": "response.output_text.delta", "sequence_number": next(seq), "item_id": item["id"],
                                                     "output_index": index, "content_index": 0, "delta": piece, "logprobs": []}
            yield "response.output_text.done", {"type": "response.output_text.done", "sequence_number": next(seq), "item_id": item["id"],
                                                "output_index": index, "content_index": 0, "text": text, "logprobs": []}
            yield "response.content_part.done", {"type": "response.content_part.done", "sequence_number": next(seq), "item_id": item["id"],
                                                 "output_index": index, "content_index": 0, "part": item["content"][0]}
        else:
            yield "response.output_item.added", {"type": "response.output_item.added", "sequence_number": next(seq), "output_index": index,
                                                 "item": dict(item, arguments="", status="in_progress")}
            for piece in split(item["arguments"]):
                yield "response.function_call_arguments.delta", {"type": "response.function_call_arguments.delta", "sequence_number": next(seq),
                                                                 "item_id": item["id"], "output_index": index, "delta": piece}
            yield "response.function_call_arguments.done", {"type": "response.function_call_arguments.done", "sequence_number": next(seq),
                                                             "item_id": item["id"], "output_index": index, "arguments": item["arguments"]}
        yield "response.output_item.done", {"type": "response.output_item.done", "sequence_number": next(seq), "output_index": index, "item": item}
    yield "response.completed", {"type": "response.completed", "sequence_number": next(seq), "response": responses_json(text, calls, model, reasoning)}


def split(text, size=40):
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send_json(self, status, value, headers=()):
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("x-request-id", "req_standin_123")
        self.send_header("x-ratelimit-remaining-requests", "4999")
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/_requests":
            with LOCK:
                self.send_json(200, REQUESTS)
            return
        if self.path.startswith("/v1/models"):
            self.record(None)
            self.send_json(200, {"object": "list", "data": [{"id": "gpt-4o", "object": "model", "created": 1, "owned_by": "standin"}]})
            return
        self.record(None)
        if self.headers.get("upgrade", "").lower() == "websocket":
            # No WebSocket here: a plain 426 makes clients fall back to HTTP+SSE.
            self.send_json(426, {"error": {"message": "websocket not supported by stand-in", "type": "invalid_request_error"}})
            return
        self.send_json(404, {"error": {"message": "no such path", "type": "invalid_request_error"}})

    def do_HEAD(self):
        self.record(None)
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def read_body(self):
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            raw = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                raw += self.rfile.read(size)
                self.rfile.readline()
        else:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
        enc = self.headers.get("content-encoding", "").lower()
        if enc == "gzip":
            import gzip
            raw = gzip.decompress(raw)
        elif enc == "zstd":
            import zstandard
            raw = zstandard.ZstdDecompressor().decompressobj().decompress(raw)
        return raw

    def record(self, body):
        rec = {"method": self.command, "path": self.path, "t": time.time(),
               "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body}
        with LOCK:
            REQUESTS.append(rec)
        self.rec = rec
        return rec

    def refuse(self, anthropic, message, param=None):
        """A 400 in the provider's shape, logged on stderr and in the record."""
        print(f"stand-in 400: {self.path}: {message}", file=sys.stderr, flush=True)
        self.rec.update(status=400, error=message)
        if anthropic:
            self.send_json(400, {"type": "error", "error": {"type": "invalid_request_error", "message": message}})
        else:
            self.send_json(400, {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": None}})

    def do_POST(self):
        raw = self.read_body()
        if self.path == "/_reset":
            with LOCK:
                REQUESTS.clear()
                ISSUED.clear()
                CACHE["anthropic"].clear()
                CACHE["openai"].clear()
            self.send_json(200, {})
            return
        body = json.loads(raw) if raw else {}
        rec = self.record(raw.decode())
        path = self.path.split("?")[0]
        api = {"/v1/chat/completions": "chat", "/v1/responses": "responses",
               "/v1/messages": "messages", "/v1/messages/count_tokens": "count"}.get(path)
        scenario = self.headers.get("x-test-scenario", "")
        anthropic = api in ("messages", "count")
        if scenario == "error_400" or scenario == "error_500":
            status = int(scenario[-3:])
            rec["status"] = status
            if anthropic:
                self.send_json(status, {"type": "error", "error": {"type": "invalid_request_error", "message": f"stand-in says {status}"}})
            else:
                self.send_json(status, {"error": {"message": f"stand-in says {status}", "type": "invalid_request_error", "param": None, "code": "standin"}})
            return
        if api == "count":
            rec["status"] = 200
            self.send_json(200, {"input_tokens": len(raw) // 4})
            return
        if api is None:
            rec["status"] = 404
            self.send_json(404, {"error": {"message": "no such path", "type": "invalid_request_error"}})
            return
        orphan = broken_pairs(api, body)
        if orphan:
            return self.refuse(anthropic, f"tool result {orphan} has no matching tool call")
        refused = broken_reasoning(api, body) or unanswered_call(api, body)
        if refused:
            return self.refuse(anthropic, refused, "input" if api == "responses" else None)
        CTX.cache = cache_usage(api, body)
        CTX.n = len(REQUESTS)
        text, calls = decide(api, body, scenario, {k.lower(): v for k, v in self.headers.items()})
        rec.update(status=200, usage=usage_of(api), answer={"text": text, "calls": [c[0] for c in calls]})
        model = body.get("model", "model")
        thinking = api == "messages" and (body.get("thinking") or {}).get("type") in ("enabled", "adaptive") and bool(body.get("tools"))
        reasoning = api == "responses" and bool(body.get("reasoning")) and bool(all_tools(body))
        if not body.get("stream"):
            if api == "messages":
                self.send_json(200, messages_json(text, calls, model, thinking))
            elif api == "responses":
                self.send_json(200, responses_json(text, calls, model, reasoning))
            else:
                self.send_json(200, chat_json(text, calls, model))
            return
        if api == "chat":
            stream = chat_events(text, calls, model, (body.get("stream_options") or {}).get("include_usage"))
        elif api == "messages":
            stream = messages_events(text, calls, model, thinking)
        else:
            stream = responses_events(text, calls, model, reasoning)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("x-request-id", "req_standin_123")
        self.send_header("connection", "close")
        self.end_headers()
        for i, (name, data) in enumerate(stream):
            if scenario == "cut" and i == 2:
                self.wfile.flush()
                self.close_connection = True
                return
            payload = data if isinstance(data, str) else json.dumps(data)
            chunk = (f"event: {name}\n" if name else "") + f"data: {payload}\n\n"
            self.wfile.write(chunk.encode())
            self.wfile.flush()
        self.close_connection = True


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
