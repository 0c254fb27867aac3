"""One user turn of a LangChain agent (langchain.agents.create_agent) with a `shell` tool.

    python langchain_case.py --base-url http://127.0.0.1:8077 --variant openai-chat --turn 1 --state s.json

Variants: anthropic-thinking (ChatAnthropic, extended thinking on, base URL = bare host),
openai-chat (ChatOpenAI, chat completions), openai-responses (ChatOpenAI, use_responses_api=True),
openai-responses-reasoning (the same with a reasoning model, store=False and
include=["reasoning.encrypted_content"], so reasoning items go back in the history).
Each with a "-stream" suffix: the model is built with streaming=True (SSE to the provider)
and the agent is run with agent.stream(stream_mode=["messages", "values"]), every chunk consumed.
--header K:V (repeatable) adds a header to every model request (the stand-in's switches).
Turn 1 writes the conversation (langchain_core messages_to_dict) to --state; turn 2 loads it
with messages_from_dict, adds the follow-up and writes the longer history back.
Prints one JSON line {"final", "ok", "error", "requests"}; exit 0 on success, 1 on failure.
"""

import os

# No LangSmith tracing or other telemetry.
for var in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING"):
    os.environ[var] = "false"
for var in ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY", "LANGSMITH_ENDPOINT", "LANGCHAIN_ENDPOINT"):
    os.environ.pop(var, None)

import argparse
import json
import subprocess
import sys

TURNS = {
    1: "Run the command in the shell tool and tell me the line that starts with PLANTED.",
    2: "Thanks. Now say the planted line again in one sentence.",
}
BASE_VARIANTS = ("anthropic-thinking", "openai-chat", "openai-responses", "openai-responses-reasoning")
VARIANTS = BASE_VARIANTS + tuple(v + "-stream" for v in BASE_VARIANTS)
SYSTEM = "You are a helpful assistant. Use the shell tool when asked to run commands."


def run_shell(command: str) -> str:
    proc = subprocess.run(["bash", "-lc", command], capture_output=True, text=True, timeout=60)
    return proc.stdout + proc.stderr


def make_model(variant, base_url, headers=None):
    stream = variant.endswith("-stream")
    variant = variant.removesuffix("-stream")
    bare = base_url.rstrip("/")
    if bare.endswith("/v1"):
        bare = bare[: -len("/v1")]
    if variant == "anthropic-thinking":
        from langchain_anthropic import ChatAnthropic
        return ChatAnthropic(model="claude-sonnet-4-5", api_key="sk-ant-test", base_url=bare,
                             max_tokens=4096, thinking={"type": "enabled", "budget_tokens": 1024},
                             streaming=stream, default_headers=headers or None)
    from langchain_openai import ChatOpenAI
    v1 = bare + "/v1"
    if variant == "openai-chat":
        return ChatOpenAI(model="gpt-4.1", api_key="sk-test", base_url=v1, streaming=stream,
                          default_headers=headers or None)
    if variant == "openai-responses":
        return ChatOpenAI(model="gpt-4.1", api_key="sk-test", base_url=v1, use_responses_api=True,
                          streaming=stream, default_headers=headers or None)
    return ChatOpenAI(model="gpt-5", api_key="sk-test", base_url=v1, use_responses_api=True,
                      reasoning={"effort": "low"}, store=False, include=["reasoning.encrypted_content"],
                      streaming=stream, default_headers=headers or None)


def final_text(message):
    text = getattr(message, "text", None)
    if isinstance(text, str):  # a property in langchain-core 1.x (a str subclass)
        return str(text)
    if callable(text):  # langchain-core < 1.0 had .text()
        return text()
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") in ("text", "output_text"))


def one_turn(args, counter):
    from langchain.agents import create_agent
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.messages import AIMessage, HumanMessage, messages_from_dict, messages_to_dict
    from langchain_core.tools import tool

    class CountModelCalls(BaseCallbackHandler):
        def on_chat_model_start(self, serialized, messages, **kwargs):
            counter[0] += 1

        def on_llm_start(self, serialized, prompts, **kwargs):
            counter[0] += 1

    @tool
    def shell(command: str) -> str:
        """Run a shell command with bash and return its output (stdout, then stderr).

        Args:
            command: The command line to run.
        """
        return run_shell(command)

    agent = create_agent(make_model(args.variant, args.base_url, args.headers), tools=[shell], system_prompt=SYSTEM)

    history = []
    if args.turn > 1:
        with open(args.state) as f:
            history = messages_from_dict(json.load(f)["messages"])
    inputs = {"messages": history + [HumanMessage(TURNS[args.turn])]}
    config = {"callbacks": [CountModelCalls()], "recursion_limit": 25}
    if args.variant.endswith("-stream"):
        # Token chunks ("messages") as an app would show them, plus the state ("values").
        messages = None
        for mode, chunk in agent.stream(inputs, config=config, stream_mode=["messages", "values"]):
            if mode == "values":
                messages = chunk["messages"]
    else:
        messages = agent.invoke(inputs, config=config)["messages"]
    with open(args.state, "w") as f:
        json.dump({"framework": "langchain", "variant": args.variant, "turn": args.turn,
                   "messages": messages_to_dict(messages)}, f, indent=1, default=str)
    last = messages[-1]
    if not isinstance(last, AIMessage):
        raise RuntimeError(f"last message is a {type(last).__name__}, not an AIMessage")
    return final_text(last)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--base-url", required=True)
    p.add_argument("--variant", required=True, choices=VARIANTS)
    p.add_argument("--turn", type=int, required=True, choices=sorted(TURNS))
    p.add_argument("--state", required=True)
    p.add_argument("--header", action="append", default=[], metavar="K:V",
                   help="an extra HTTP header on every model request (repeatable), e.g. x-standin-turn:mixed")
    args = p.parse_args()
    args.headers = dict((k.strip(), v.strip()) for k, _, v in (h.partition(":") for h in args.header))

    counter = [0]
    out = {"final": None, "ok": False, "error": None, "requests": 0}
    try:
        out["final"] = one_turn(args, counter)
        out["ok"] = bool(out["final"])
        if not out["ok"]:
            out["error"] = "empty final output"
    except BaseException as e:  # noqa: BLE001 - report everything
        out["error"] = f"{type(e).__name__}: {e}"
    out["requests"] = counter[0]
    print(json.dumps(out), flush=True)
    sys.exit(0 if out["ok"] else 1)


if __name__ == "__main__":
    main()
