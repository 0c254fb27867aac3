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
`error_400` / `error_500` (provider errors), `refuse_round` (a 400 to
Cairn's retrieval round only), `cut` (a stream that stops in the
middle), `reasoning` (a Responses reasoning item, or an Anthropic thinking
block, opens every answer, with no text before a call). Tool results whose
call is not in the conversation are a 400, as a real provider answers them;
so are a reasoning item sent back without the item that followed it and a
thinking block whose signature this stand-in did not give. A Responses
answer echoes the request's `tools`, as the real API does.

Run: python3 upstream.py  → prints the port on its first line.
"""

import gzip
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
    return json.loads(found)["text"]


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


def broken_reasoning(api, body):
    """A Responses `reasoning` item not followed by the item that followed it
    (the real API: "Item 'rs_…' of type 'reasoning' was provided without its
    required following item."), or an Anthropic thinking block whose
    signature is not the one this stand-in gave it."""
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
                given = b.get("signature") or ""
                # (blocks of other providers' making, as in captured requests, are not checked)
                if b.get("type") == "thinking" and given.startswith("sig-") and given != signature(b.get("thinking", "")):
                    return f"messages.{i}.content.{k}: Invalid `signature` in `thinking` block"
    return None


def signature(thinking):
    return "sig-" + str(sum(thinking.encode()) % 1000003)


def decide(api, body, scenario):
    """(text, calls): what the scripted model says."""
    fetched = fetch_result(api, body)
    n = len(REQUESTS)
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


def messages_json(text, calls, model, reasoning=False):
    content = []
    if reasoning:
        thought = f"thinking {len(REQUESTS)}"
        content.append({"type": "thinking", "thinking": thought, "signature": signature(thought)})
    if text:
        content.append({"type": "text", "text": text})
    for i, (name, args) in enumerate(calls):
        content.append({"type": "tool_use", "id": f"toolu_{i}_{name}", "name": name, "input": args})
    return {"id": "msg_standin", "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None, "usage": USAGE["messages"]}


def messages_events(text, calls, model, reasoning=False):
    start_usage = dict(USAGE["messages"], output_tokens=1)
    yield "message_start", {"type": "message_start", "message": {
        "id": "msg_standin", "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": start_usage}}
    index = 0
    if reasoning:
        thought = f"thinking {len(REQUESTS)}"
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
        output.append({"type": "reasoning", "id": f"rs_{len(REQUESTS)}", "summary": [],
                       "encrypted_content": "opaque"})
    if text:
        output.append({"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                       "content": [{"type": "output_text", "text": text, "annotations": []}]})
    for i, (name, args) in enumerate(calls):
        output.append({"type": "function_call", "id": f"fc_{i}", "call_id": f"call_{i}_{name}", "name": name,
                       "arguments": json.dumps(args), "status": "completed"})
    return output


def responses_json(text, calls, model, reasoning=False, tools=()):
    return {"id": "resp_standin", "object": "response", "created_at": 1, "status": "completed", "model": model,
            "output": responses_output(text, calls, reasoning), "parallel_tool_calls": True, "tool_choice": "auto",
            "tools": list(tools), "usage": USAGE["responses"], "error": None, "incomplete_details": None,
            "instructions": None, "metadata": {}, "temperature": 1.0, "top_p": 1.0, "text": {"format": {"type": "text"}}}


def responses_events(text, calls, model, reasoning=False, tools=()):
    seq = iter(range(1000))
    shell = dict(responses_json(None, [], model, tools=tools), status="in_progress", output=[], usage=None)
    yield "response.created", {"type": "response.created", "sequence_number": next(seq), "response": shell}
    yield "response.in_progress", {"type": "response.in_progress", "sequence_number": next(seq), "response": shell}
    for index, item in enumerate(responses_output(text, calls, reasoning)):
        if item["type"] == "reasoning":
            yield "response.output_item.added", {"type": "response.output_item.added", "sequence_number": next(seq), "output_index": index,
                                                 "item": dict(item, encrypted_content=None)}
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
    yield "response.completed", {"type": "response.completed", "sequence_number": next(seq),
                                 "response": responses_json(text, calls, model, reasoning, tools)}


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
        self.send_json(404, {"error": {"message": "no such path", "type": "invalid_request_error"}})

    def record(self, body):
        self.entry = {"method": self.command, "path": self.path,
                      "headers": {k.lower(): v for k, v in self.headers.items()},
                      "body": body}
        with LOCK:
            REQUESTS.append(self.entry)

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
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
        # `refuse_round`: a 400 to any request that carries a memory_fetch
        # result (Cairn's retrieval round), as a provider refuses a body.
        refused = scenario == "refuse_round" and api in ("chat", "responses", "messages") \
            and fetch_result(api, body) is not None
        if scenario == "error_400" or scenario == "error_500" or refused:
            status = 400 if refused else int(scenario[-3:])
            if anthropic:
                self.send_json(status, {"type": "error", "error": {"type": "invalid_request_error", "message": f"stand-in says {status}"}})
            else:
                self.send_json(status, {"error": {"message": f"stand-in says {status}", "type": "invalid_request_error", "param": None, "code": "standin"}})
            return
        # Faults (tests/proxy/faults.rs): `reset` closes the connection without
        # an answer; `status_429` / `status_529` refuse with the provider's
        # error and `retry-after: 7`; `gzip` sends its JSON answer
        # gzip-encoded whatever the request accepted; `huge` answers a JSON
        # body of 3 MiB.
        if scenario == "reset":
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if scenario in ("status_429", "status_529"):
            status = int(scenario[-3:])
            kind = "rate_limit_error" if status == 429 else "overloaded_error"
            error = ({"type": "error", "error": {"type": kind, "message": f"stand-in says {status}"}} if anthropic
                     else {"error": {"message": f"stand-in says {status}", "type": kind, "param": None, "code": kind}})
            self.send_json(status, error, headers=[("retry-after", "7")])
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
        refused = broken_reasoning(api, body)
        if refused:
            if anthropic:
                self.send_json(400, {"type": "error", "error": {"type": "invalid_request_error", "message": refused}})
            else:
                self.send_json(400, {"error": {"message": refused, "type": "invalid_request_error", "param": "input", "code": None}})
            return
        text, calls = decide(api, body, scenario)
        model = body.get("model", "model")
        reasoning = scenario == "reasoning"
        tools = body.get("tools") or []
        if not body.get("stream"):
            if api == "chat":
                answer = chat_json(text, calls, model)
            elif api == "messages":
                answer = messages_json(text, calls, model, reasoning)
            else:
                answer = responses_json(text, calls, model, reasoning, tools)
            if scenario == "huge":
                answer["padding"] = "x" * (3 << 20)
            if scenario == "gzip":
                packed = gzip.compress(json.dumps(answer).encode())
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-encoding", "gzip")
                self.send_header("content-length", str(len(packed)))
                self.end_headers()
                self.wfile.write(packed)
                return
            self.send_json(200, answer)
            return
        if api == "chat":
            events = chat_events(text, calls, model, (body.get("stream_options") or {}).get("include_usage"))
        elif api == "messages":
            events = messages_events(text, calls, model, reasoning)
        else:
            events = responses_events(text, calls, model, reasoning, tools)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("x-request-id", "req_standin_123")
        self.send_header("connection", "close")
        self.end_headers()
        # `stall`: two events, then silence (longer than the test's idle
        # limit); `malformed`: an event whose data is not JSON after the first.
        # `cut_round`: only a retrieval round (a memory_fetch result in the
        # body) is cut.
        cut = scenario == "cut" or (scenario == "cut_round" and fetch_result(api, body) is not None)
        for i, (name, data) in enumerate(events):
            if cut and i == 2:
                self.wfile.flush()
                self.close_connection = True
                return
            if scenario == "stall" and i == 2:
                self.wfile.flush()
                time.sleep(8)
                self.close_connection = True
                return
            if scenario == "malformed" and i == 1:
                self.wfile.write(b"data: {not json\n\n")
            # `flood`: 1 GiB of SSE comments as fast as the reader takes
            # them, the bytes handed to the socket so far kept in the
            # request's `flooded` (a slow reader must hold this back).
            if scenario == "flood" and i == 1:
                line = b": " + b"x" * 65530 + b"\n\n"
                mine = self.entry
                with LOCK:
                    mine["flooded"] = 0
                try:
                    for _ in range((1 << 30) // len(line)):
                        self.wfile.write(line)
                        with LOCK:
                            mine["flooded"] += len(line)
                except OSError:
                    with LOCK:
                        mine["cancelled"] = True
                    self.close_connection = True
                    return
            # `slow`: one event every 0.3 s, padded out to ~40 events; a write
            # that fails means the reader went away: recorded as `cancelled`.
            if scenario == "slow" and i == 1:
                try:
                    for _ in range(40):
                        self.wfile.write(b": still thinking\n\n")
                        self.wfile.flush()
                        time.sleep(0.3)
                except OSError:
                    with LOCK:
                        REQUESTS[-1]["cancelled"] = True
                    self.close_connection = True
                    return
            payload = data if isinstance(data, str) else json.dumps(data)
            chunk = (f"event: {name}\n" if name else "") + f"data: {payload}\n\n"
            self.wfile.write(chunk.encode())
            self.wfile.flush()
        self.close_connection = True


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
