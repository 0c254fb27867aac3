"""Drives Cairn's LLM proxy with the official `openai` and `anthropic` SDKs
against the stand-in upstream (upstream.py). Every check raises on failure;
the last line printed is a JSON summary.

usage: client_check.py passthrough|sidecar|limited <cairn-url> <upstream-url>
"""

import json
import sys
import time
import urllib.request

import anthropic
import httpx2 as httpx
import openai

MODE, CAIRN, UPSTREAM = sys.argv[1], sys.argv[2].rstrip("/"), sys.argv[3].rstrip("/")
ALPHA = "alpha-key-0001"       # Cairn key of namespace `alpha`
TIGHT = "tight-key-0002"       # Cairn key of namespace `tight` (10-token daily budget)
SIDE = "side-key-0003"         # Cairn key of the sidecar server's namespace
OPENAI_KEY = "sk-test-PASSTHROUGH-openai-0001"
ANTHROPIC_KEY = "sk-ant-test-PASSTHROUGH-0001"

BIG = "".join(f"line {i:05d}: {'abcdefghij' * 5}\n" for i in range(1, 1001))   # 62 KB, 1000 lines
EXPECTED = "FETCHED:\n" + "".join(BIG.splitlines(keepends=True)[2:7])
RUN_TESTS_OPENAI = {"type": "function", "function": {"name": "run_tests", "description": "Run the tests",
                                                     "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}
RUN_TESTS_ANTHROPIC = {"name": "run_tests", "description": "Run the tests",
                       "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}
RUN_TESTS_RESPONSES = {"type": "function", "name": "run_tests", "description": "Run the tests",
                       "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}
summary = {}
anthropic_version = anthropic.Anthropic(api_key="x").default_headers["anthropic-version"]


def upstream_requests():
    with urllib.request.urlopen(UPSTREAM + "/_requests") as r:
        return [q for q in json.load(r) if q["method"] == "POST"]


def reset():
    urllib.request.urlopen(urllib.request.Request(UPSTREAM + "/_reset", data=b"{}", method="POST")).read()


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def openai_client(key=ALPHA):
    if MODE == "sidecar":
        return openai.OpenAI(base_url=CAIRN + "/v1", api_key=key, max_retries=0)
    return openai.OpenAI(base_url=CAIRN + "/v1", api_key=OPENAI_KEY, max_retries=0,
                         default_headers={"X-Cairn-Key": key})


def anthropic_client(key=ALPHA):
    if MODE == "sidecar":
        return anthropic.Anthropic(base_url=CAIRN, api_key=key, max_retries=0)
    return anthropic.Anthropic(base_url=CAIRN, api_key=ANTHROPIC_KEY, max_retries=0,
                               default_headers={"X-Cairn-Key": key})


def chat_history(big=BIG):
    return [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Run the tests and tell me what failed."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_run", "type": "function", "function": {"name": "run_tests", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_run", "content": big},
    ]


def anthropic_history(big=BIG):
    return [
        {"role": "user", "content": "Run the tests and tell me what failed."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_run", "name": "run_tests", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_run",
                                      "content": [{"type": "text", "text": big}], "cache_control": {"type": "ephemeral"}}]},
    ]


def responses_history(big=BIG):
    return [
        {"role": "user", "content": "Run the tests and tell me what failed."},
        {"type": "function_call", "call_id": "call_run", "name": "run_tests", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_run", "output": big},
    ]


def first_body():
    return json.loads(upstream_requests()[0]["body"])


def messages_prefix(raw, key):
    """The raw bytes of the `key` array of a JSON body, without its closing bracket."""
    start = raw.index(f"\"{key}\":[") + len(key) + 4
    end = json.JSONDecoder().raw_decode(raw[start - 1:])[1] + start - 1
    return raw[start:end - 1]


def check_offloaded_and_fetched(api, text, requests):
    body = json.loads(requests[0]["body"])
    if api == "chat":
        marker = body["messages"][3]["content"]
        names = [t["function"]["name"] for t in body["tools"]]
    elif api == "responses":
        marker = body["input"][2]["output"]
        names = [t["name"] for t in body["tools"]]
    else:
        marker = body["messages"][2]["content"][0]["content"][0]["text"]
        names = [t["name"] for t in body["tools"]]
    check(marker.startswith("[cairn: offloaded tool_output run_tests · mem://"), f"{api}: marker {marker[:80]!r}")
    check(len(marker) < 2000, f"{api}: marker of {len(marker)} chars")
    check(names[0] == "run_tests" and "memory_fetch" in names, f"{api}: tools {names}")
    check(len(requests) == 2, f"{api}: {len(requests)} upstream calls")
    check(text == EXPECTED, f"{api}: final text {text[:120]!r}")
    return marker


def key_headers(request, provider):
    h = request["headers"]
    check("x-cairn-key" not in h, "X-Cairn-Key went upstream")
    if MODE == "sidecar":
        if provider == "openai":
            check(h.get("authorization") == "Bearer sk-sidecar-openai-secret-9", f"upstream auth {h.get('authorization')}")
        else:
            check(h.get("x-api-key") == "sk-ant-sidecar-secret-9", f"upstream key {h.get('x-api-key')}")
            check("authorization" not in h, "the caller's key went upstream")
    else:
        if provider == "openai":
            check(h.get("authorization") == f"Bearer {OPENAI_KEY}", "provider key not passed through")
        else:
            # This SDK sends its key as a bearer token; older ones as x-api-key.
            check(ANTHROPIC_KEY in (h.get("x-api-key"), h.get("authorization", "").removeprefix("Bearer ")),
                  "provider key not passed through")
            check(h.get("anthropic-version") == anthropic_version, "anthropic-version not passed through")


def chat_checks():
    client = openai_client()
    reset()
    raw = client.chat.completions.with_raw_response.create(model="gpt-4o", messages=chat_history(), tools=[RUN_TESTS_OPENAI])
    answer = raw.parse()
    requests = upstream_requests()
    check_offloaded_and_fetched("chat", answer.choices[0].message.content, requests)
    key_headers(requests[0], "openai")
    check(raw.headers.get("x-cairn-offloaded") == "1", f"x-cairn-offloaded {raw.headers.get('x-cairn-offloaded')}")
    check(int(raw.headers["x-cairn-tokens-before"]) > 10 * int(raw.headers["x-cairn-tokens-after"]), "tokens before/after")
    check(raw.headers.get("x-cairn-tier") == "normal", "tier header")
    check(raw.headers.get("x-ratelimit-remaining-requests") == "4999", "rate-limit header not passed through")
    check(answer.usage.prompt_tokens == 200 and answer.usage.prompt_tokens_details.cached_tokens == 128, f"usage {answer.usage}")
    # Streaming, with and without usage asked for.
    for include_usage in (True, False):
        reset()
        kwargs = {"stream_options": {"include_usage": True}} if include_usage else {}
        chunks = list(client.chat.completions.create(model="gpt-4o", messages=chat_history(), tools=[RUN_TESTS_OPENAI],
                                                     stream=True, **kwargs))
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        check_offloaded_and_fetched("chat", text, upstream_requests())
        usage = [c.usage for c in chunks if c.usage]
        if include_usage:
            check(len(usage) == 1 and usage[0].prompt_tokens == 200, f"stream usage {usage}")
        else:
            check(not usage, "usage chunk the client did not ask for")
        check(not any(c.choices and c.choices[0].delta.tool_calls for c in chunks), "Cairn's call leaked into the stream")
    # Two turns of a growing conversation: the second carries the first's messages byte for byte.
    reset()
    turn1 = chat_history()
    first = client.chat.completions.create(model="gpt-4o", messages=turn1, tools=[RUN_TESTS_OPENAI])
    turn2 = turn1 + [{"role": "assistant", "content": first.choices[0].message.content},
                     {"role": "user", "content": "Now run them again."},
                     {"role": "assistant", "content": None, "tool_calls": [
                         {"id": "call_again", "type": "function", "function": {"name": "run_tests", "arguments": "{}"}}]},
                     {"role": "tool", "tool_call_id": "call_again", "content": BIG.replace("line", "LINE")}]
    client.chat.completions.create(model="gpt-4o", messages=turn2, tools=[RUN_TESTS_OPENAI])
    calls = upstream_requests()
    one, two = calls[0]["body"], calls[2]["body"]
    prefix = messages_prefix(one, "messages")
    check(messages_prefix(two, "messages").startswith(prefix), "turn 2 does not carry turn 1's messages byte for byte")
    check(json.loads(one)["tools"] == json.loads(two)["tools"], "tools changed between turns")
    summary["chat_prefix_bytes"] = len(prefix)
    # A turn that calls Cairn's tool and the client's: the client gets its own call only, and its next request is valid.
    reset()
    mixed = client.chat.completions.create(model="gpt-4o", messages=chat_history(), tools=[RUN_TESTS_OPENAI],
                                           extra_headers={"x-test-scenario": "mixed"})
    calls = mixed.choices[0].message.tool_calls
    check([c.function.name for c in calls] == ["run_tests"], f"mixed turn calls {calls}")
    history = chat_history() + [mixed.choices[0].message.model_dump(exclude_none=True),
                                {"role": "tool", "tool_call_id": calls[0].id, "content": "2 passed"}]
    after = client.chat.completions.create(model="gpt-4o", messages=history, tools=[RUN_TESTS_OPENAI])
    check(after.choices[0].message is not None, "the history after a mixed turn was refused")
    # Upstream errors pass through with their bodies.
    for scenario, error in (("error_400", openai.BadRequestError), ("error_500", openai.InternalServerError)):
        try:
            client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}],
                                           extra_headers={"x-test-scenario": scenario})
            raise AssertionError(f"{scenario} did not raise")
        except error as e:
            check("stand-in says" in str(e), f"{scenario}: body not passed through: {e}")
    # A stream the upstream cuts is cut for the client too.
    try:
        for _ in client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "a long answer please " * 20}],
                                                stream=True, extra_headers={"x-test-scenario": "cut"}):
            pass
        raise AssertionError("a cut stream ended cleanly")
    except (openai.APIError, httpx.HTTPError):
        pass
    # Models pass through.
    check([m.id for m in client.models.list()] == ["gpt-4o"], "models not passed through")


def anthropic_checks():
    client = anthropic_client()
    reset()
    raw = client.messages.with_raw_response.create(model="claude-sonnet-4-6", max_tokens=100,
                                                   messages=anthropic_history(), tools=[RUN_TESTS_ANTHROPIC])
    answer = raw.parse()
    requests = upstream_requests()
    check_offloaded_and_fetched("messages", answer.content[0].text, requests)
    key_headers(requests[0], "anthropic")
    check(answer.usage.cache_read_input_tokens == 100 and answer.usage.input_tokens == 20, f"usage {answer.usage}")
    check(raw.headers.get("x-cairn-offloaded") == "1", "x-cairn-offloaded")
    reset()
    with client.messages.stream(model="claude-sonnet-4-6", max_tokens=100, messages=anthropic_history(),
                                tools=[RUN_TESTS_ANTHROPIC]) as stream:
        final = stream.get_final_message()
    check_offloaded_and_fetched("messages", "".join(b.text for b in final.content if b.type == "text"), upstream_requests())
    check(all(b.type == "text" for b in final.content), f"stream blocks {final.content}")
    check(final.usage.output_tokens == 10 and final.usage.cache_read_input_tokens == 100, f"stream usage {final.usage}")
    # Growing conversation.
    reset()
    turn1 = anthropic_history()
    first = client.messages.create(model="claude-sonnet-4-6", max_tokens=100, messages=turn1, tools=[RUN_TESTS_ANTHROPIC])
    turn2 = turn1 + [{"role": "assistant", "content": [{"type": "text", "text": first.content[0].text}]},
                     {"role": "user", "content": "Now run them again."}]
    client.messages.create(model="claude-sonnet-4-6", max_tokens=100, messages=turn2, tools=[RUN_TESTS_ANTHROPIC])
    calls = upstream_requests()
    check(messages_prefix(calls[2]["body"], "messages").startswith(messages_prefix(calls[0]["body"], "messages")),
          "anthropic turn 2 does not carry turn 1's messages byte for byte")
    # Mixed turn, streaming: only the client's call reaches it, with contiguous block indexes.
    reset()
    with client.messages.stream(model="claude-sonnet-4-6", max_tokens=100, messages=anthropic_history(),
                                tools=[RUN_TESTS_ANTHROPIC], extra_headers={"x-test-scenario": "mixed"}) as stream:
        mixed = stream.get_final_message()
    uses = [b for b in mixed.content if b.type == "tool_use"]
    check([b.name for b in uses] == ["run_tests"], f"mixed stream blocks {mixed.content}")
    history = anthropic_history() + [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in mixed.content]},
                                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": uses[0].id, "content": "2 passed"}]}]
    client.messages.create(model="claude-sonnet-4-6", max_tokens=100, messages=history, tools=[RUN_TESTS_ANTHROPIC])
    for scenario, error in (("error_400", anthropic.BadRequestError), ("error_500", anthropic.InternalServerError)):
        try:
            client.messages.create(model="claude-sonnet-4-6", max_tokens=10, messages=[{"role": "user", "content": "hi"}],
                                   extra_headers={"x-test-scenario": scenario})
            raise AssertionError(f"{scenario} did not raise")
        except error as e:
            check("stand-in says" in str(e), f"{scenario}: {e}")
    count = client.messages.count_tokens(model="claude-sonnet-4-6", messages=[{"role": "user", "content": "hello"}])
    check(count.input_tokens > 0, "count_tokens not passed through")


def responses_checks():
    client = openai_client()
    reset()
    answer = client.responses.create(model="gpt-4.1", input=responses_history(), tools=[RUN_TESTS_RESPONSES],
                                     instructions="You are a coding agent.")
    requests = upstream_requests()
    check_offloaded_and_fetched("responses", answer.output_text, requests)
    check(answer.usage.input_tokens == 200, f"usage {answer.usage}")
    check(json.loads(requests[0]["body"])["instructions"] == "You are a coding agent.", "instructions changed")
    reset()
    with client.responses.stream(model="gpt-4.1", input=responses_history(), tools=[RUN_TESTS_RESPONSES]) as stream:
        text = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
        final = stream.get_final_response()
    check_offloaded_and_fetched("responses", text, upstream_requests())
    check(final.output_text == EXPECTED and final.usage.input_tokens == 200, f"final response {final.output_text[:60]!r} {final.usage}")
    check(all(i.type != "function_call" for i in final.output), "Cairn's call leaked into the response")
    reset()
    mixed = client.responses.create(model="gpt-4.1", input=responses_history(), tools=[RUN_TESTS_RESPONSES],
                                    extra_headers={"x-test-scenario": "mixed"})
    calls = [i for i in mixed.output if i.type == "function_call"]
    check([c.name for c in calls] == ["run_tests"], f"mixed output {mixed.output}")
    history = responses_history() + [i.model_dump(exclude_none=True) for i in mixed.output] + [
        {"type": "function_call_output", "call_id": calls[0].call_id, "output": "2 passed"}]
    client.responses.create(model="gpt-4.1", input=history, tools=[RUN_TESTS_RESPONSES])


def budget_checks():
    client = openai_client(TIGHT)
    client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    try:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        raise AssertionError("a spent budget did not answer 429")
    except openai.RateLimitError as e:
        check(e.body["code"] == "budget_exceeded", f"openai 429 body {e.body}")
        check(e.response.headers.get("x-should-retry") == "false", "429 invites retries")
    try:
        anthropic_client(TIGHT).messages.create(model="claude-sonnet-4-6", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
        raise AssertionError("a spent budget did not answer 429")
    except anthropic.RateLimitError as e:
        check(e.body["type"] == "error" and e.body["error"]["type"] == "rate_limit_error", f"anthropic 429 body {e.body}")


def sidecar_checks():
    client = openai_client(SIDE)
    reset()
    answer = client.chat.completions.create(model="gpt-4o", messages=chat_history(), tools=[RUN_TESTS_OPENAI])
    requests = upstream_requests()
    check_offloaded_and_fetched("chat", answer.choices[0].message.content, requests)
    for r in requests:
        key_headers(r, "openai")
        check(SIDE not in json.dumps(r), "the Cairn key went upstream")
    reset()
    answer = anthropic_client(SIDE).messages.create(model="claude-sonnet-4-6", max_tokens=100, messages=anthropic_history(),
                                                    tools=[RUN_TESTS_ANTHROPIC])
    for r in upstream_requests():
        key_headers(r, "anthropic")
        check(SIDE not in json.dumps(r), "the Cairn key went upstream")
    try:
        openai_client("wrong-key-0000").chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        raise AssertionError("a wrong Cairn key was accepted")
    except openai.AuthenticationError:
        pass


def limited_checks():
    """The namespace may make one request a second: the second of two at once
    is refused (429, `Retry-After: 1`), and each SDK's own retry waits and
    gets it through, as it would for the provider's rate limit."""
    openai_retrying = openai.OpenAI(base_url=CAIRN + "/v1", api_key=OPENAI_KEY, max_retries=2,
                                    default_headers={"X-Cairn-Key": ALPHA})
    anthropic_retrying = anthropic.Anthropic(base_url=CAIRN, api_key=ANTHROPIC_KEY, max_retries=2,
                                             default_headers={"X-Cairn-Key": ALPHA})
    calls = [
        lambda: openai_retrying.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}]),
        lambda: anthropic_retrying.messages.create(model="claude-sonnet-4-6", max_tokens=5,
                                                   messages=[{"role": "user", "content": "hi"}]),
    ]
    for call in calls:
        time.sleep(1.1)  # the bucket full again
        started = time.monotonic()
        call()
        call()
        waited = time.monotonic() - started
        check(waited >= 0.9, f"the second request was not held back by the limit ({waited:.2f} s)")
    try:
        openai_client().chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        openai_client().chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        raise AssertionError("two requests at once passed a limit of one a second")
    except openai.RateLimitError as e:
        check(e.body["code"] == "rate_limited" and e.body["type"] == "requests", f"openai 429 body {e.body}")
        check(e.response.headers.get("x-should-retry") is None, "a limit tells SDKs not to retry")
        check(e.response.headers.get("retry-after") == "1", f"retry-after {e.response.headers.get('retry-after')}")


if MODE == "sidecar":
    sidecar_checks()
elif MODE == "limited":
    limited_checks()
else:
    chat_checks()
    anthropic_checks()
    responses_checks()
    budget_checks()
print(json.dumps({"ok": True, **summary}))
