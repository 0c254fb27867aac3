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

Copy for the real-client captures (tests/clients/): when the request offers a
shell tool (Claude Code's `Bash`, Codex's `shell`/`shell_command`/`exec_command`/
`local_shell`) and the conversation holds no result for it yet, the model calls
it with `seq 1 3000`; once a result is there it answers final text.  Requests
that offer no shell tool (titles, summaries) get plain text.  It also answers
HEAD/GET on any path, refuses WebSocket upgrades (so clients fall back to
HTTP+SSE), accepts chunked/gzip request bodies, and emits a `thinking` block
(Anthropic, when thinking is on) or a `reasoning` item with encrypted_content
(Responses) so the follow-up request shows how the client echoes them back.
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
            if item.get("type") == "function_call":
                calls.add(item["call_id"])
            if item.get("type") == "function_call_output" and item["call_id"] not in calls:
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


import os
COMMAND = os.environ.get("STANDIN_COMMAND", "seq 1 3000")  # what the scripted model runs
CODE_MODE_JS = "const r = await tools.exec_command({cmd: %s});\ntext(r);\n" % json.dumps(COMMAND)


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
        return CODE_MODE_JS
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
        args["description"] = "Print the numbers 1 to 3000"
    if "workdir" in props and "workdir" in (schema.get("required") or []):
        args["workdir"] = "."
    return args


def has_tool_result(api, body):
    if api == "responses":
        items = body.get("input") if isinstance(body.get("input"), list) else []
        return any(i.get("type", "").endswith("_call_output") for i in items)
    for m in body.get("messages", []):
        for b in m["content"] if isinstance(m.get("content"), list) else []:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                return True
    return False


def decide(api, body, scenario):
    """(text, calls): what the scripted model says."""
    n = len(REQUESTS)
    shell = shell_tool(body)
    if shell and not scenario:
        if not has_tool_result(api, body):
            return None, [(shell[0], shell_args(shell[0], shell[1]))]
        fetched = fetch_result(api, body)
        if fetched is not None:
            return f"Line 1234 is 1234. FETCHED:\n{fetched}\n(stand-in request {n})", []
        if offered(api, body, "memory_fetch"):
            convo = body.get("messages") if api != "responses" else body.get("input")
            for t in texts(convo):
                m = POINTER.search(t)
                if m:
                    return None, [("memory_fetch", {"uri": f"mem://{m.group(1)}#L3-7"})]
        return f"Line 1234 is 1234. (stand-in request {n})", []
    if api in ("messages", "responses") and not all_tools(body) and not scenario:
        return f"Stand-in text (request {n})", []
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


USAGE = {
    "chat": {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105,
             "prompt_tokens_details": {"cached_tokens": 64}},
    "responses": {"input_tokens": 100, "output_tokens": 5, "total_tokens": 105,
                  "input_tokens_details": {"cached_tokens": 32}, "output_tokens_details": {"reasoning_tokens": 0}},
    "messages": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 50,
                 "cache_creation_input_tokens": 20},
}


def chat_json(text, calls, model):
    message = {"role": "assistant", "content": text, "refusal": None}
    if calls:
        message["tool_calls"] = [{"id": f"call_{i}_{name}", "type": "function",
                                  "function": {"name": name, "arguments": json.dumps(args)}}
                                 for i, (name, args) in enumerate(calls)]
    return {"id": "chatcmpl-standin", "object": "chat.completion", "created": 1, "model": model,
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": USAGE["chat"]}


def chat_events(text, calls, model, include_usage):
    base = {"id": "chatcmpl-standin", "object": "chat.completion.chunk", "created": 1, "model": model}
    yield None, {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}
    if text:
        for piece in split(text):
            yield None, {**base, "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
    for i, (name, args) in enumerate(calls):
        arguments = json.dumps(args)
        yield None, {**base, "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": i, "id": f"call_{i}_{name}", "type": "function", "function": {"name": name, "arguments": ""}}]},
            "finish_reason": None}]}
        for piece in split(arguments):
            yield None, {**base, "choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": i, "function": {"arguments": piece}}]}, "finish_reason": None}]}
    yield None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls" if calls else "stop"}]}
    if include_usage:
        yield None, {**base, "choices": [], "usage": USAGE["chat"]}
    yield None, "[DONE]"


def messages_json(text, calls, model, thinking=False):
    content = []
    if thinking:
        content.append({"type": "thinking", "thinking": "The user wants line 1234.", "signature": "c3RhbmQtaW4tc2lnbmF0dXJl"})
    if text:
        content.append({"type": "text", "text": text})
    for i, (name, args) in enumerate(calls):
        content.append({"type": "tool_use", "id": f"toolu_{i}_{name}", "name": name, "input": args})
    return {"id": "msg_standin", "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None, "usage": USAGE["messages"]}


def messages_events(text, calls, model, thinking=False):
    start_usage = dict(USAGE["messages"], output_tokens=1)
    yield "message_start", {"type": "message_start", "message": {
        "id": "msg_standin", "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": start_usage}}
    index = 0
    if thinking:
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": "The user wants line 1234."}}
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "signature_delta", "signature": "c3RhbmQtaW4tc2lnbmF0dXJl"}}
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
            "type": "tool_use", "id": f"toolu_{i}_{name}", "name": name, "input": {}}}
        for piece in split(json.dumps(args)):
            yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": piece}}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
        index += 1
    yield "message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None},
                            "usage": {"output_tokens": USAGE["messages"]["output_tokens"]}}
    yield "message_stop", {"type": "message_stop"}


def responses_output(text, calls, reasoning=False):
    output = []
    if reasoning:
        output.append({"type": "reasoning", "id": "rs_standin", "summary": [{"type": "summary_text", "text": "**Planning** stand-in"}],
                       "encrypted_content": "gAAAAstand-in-encrypted-reasoning"})
    if text:
        output.append({"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                       "content": [{"type": "output_text", "text": text, "annotations": []}]})
    for i, (name, args) in enumerate(calls):
        if isinstance(args, str):  # freeform (custom) tool: raw text input
            output.append({"type": "custom_tool_call", "id": f"ctc_{i}", "call_id": f"call_{i}_{name}", "name": name,
                           "input": args, "status": "completed"})
            continue
        output.append({"type": "function_call", "id": f"fc_{i}", "call_id": f"call_{i}_{name}", "name": name,
                       "arguments": json.dumps(args), "status": "completed"})
    return output


def responses_json(text, calls, model, reasoning=False):
    return {"id": "resp_standin", "object": "response", "created_at": 1, "status": "completed", "model": model,
            "output": responses_output(text, calls, reasoning), "parallel_tool_calls": True, "tool_choice": "auto",
            "tools": [], "usage": USAGE["responses"], "error": None, "incomplete_details": None,
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
        with LOCK:
            REQUESTS.append({"method": self.command, "path": self.path,
                             "headers": {k.lower(): v for k, v in self.headers.items()},
                             "body": body})

    def do_POST(self):
        raw = self.read_body()
        if self.path == "/_reset":
            with LOCK:
                REQUESTS.clear()
            self.send_json(200, {})
            return
        body = json.loads(raw) if raw else {}
        self.record(raw.decode())
        path = self.path.split("?")[0]
        api = {"/v1/chat/completions": "chat", "/v1/responses": "responses",
               "/v1/messages": "messages", "/v1/messages/count_tokens": "count"}.get(path)
        scenario = self.headers.get("x-test-scenario", "")
        anthropic = api in ("messages", "count")
        if scenario == "error_400" or scenario == "error_500":
            status = int(scenario[-3:])
            if anthropic:
                self.send_json(status, {"type": "error", "error": {"type": "invalid_request_error", "message": f"stand-in says {status}"}})
            else:
                self.send_json(status, {"error": {"message": f"stand-in says {status}", "type": "invalid_request_error", "param": None, "code": "standin"}})
            return
        if api == "count":
            self.send_json(200, {"input_tokens": len(raw) // 4})
            return
        if api is None:
            self.send_json(404, {"error": {"message": "no such path", "type": "invalid_request_error"}})
            return
        orphan = broken_pairs(api, body)
        if orphan:
            message = f"tool result {orphan} has no matching tool call"
            if anthropic:
                self.send_json(400, {"type": "error", "error": {"type": "invalid_request_error", "message": message}})
            else:
                self.send_json(400, {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}})
            return
        text, calls = decide(api, body, scenario)
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
            events = chat_events(text, calls, model, (body.get("stream_options") or {}).get("include_usage"))
        elif api == "messages":
            events = messages_events(text, calls, model, thinking)
        else:
            events = responses_events(text, calls, model, reasoning)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("x-request-id", "req_standin_123")
        self.send_header("connection", "close")
        self.end_headers()
        for i, (name, data) in enumerate(events):
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
