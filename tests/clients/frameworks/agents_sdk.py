"""One user turn of an OpenAI Agents SDK agent with a `shell` tool, against --base-url.

    python agents_sdk.py --base-url http://127.0.0.1:8077/v1 --variant responses --turn 1 --state s.json

Variants: responses (OpenAIResponsesModel, Runner.run), responses-stream (Runner.run_streamed),
chat (OpenAIChatCompletionsModel), chat-stream, reasoning (Responses, gpt-5 with
reasoning effort low, store=False, include reasoning.encrypted_content).
--header K:V (repeatable) adds a header to every model request (the stand-in's switches,
e.g. x-standin-turn:parallel). Turn 1 starts the conversation and writes result.to_input_list() to --state; turn 2 loads
it, adds the follow-up and writes the longer history back.
Prints one JSON line {"final", "ok", "error", "requests"}; exit 0 on success, 1 on failure.
"""

import os

# No tracing export, no telemetry: set before the SDK is imported.
os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "1"
os.environ.setdefault("OPENAI_AGENTS_DONT_LOG_MODEL_DATA", "1")

import argparse
import asyncio
import json
import subprocess
import sys

TURNS = {
    1: "Run the command in the shell tool and tell me the line that starts with PLANTED.",
    2: "Thanks. Now say the planted line again in one sentence.",
}
VARIANTS = ("responses", "responses-stream", "chat", "chat-stream", "reasoning")


def run_shell(command: str) -> str:
    proc = subprocess.run(["bash", "-lc", command], capture_output=True, text=True, timeout=60)
    return proc.stdout + proc.stderr


async def one_turn(args, counter):
    import httpx
    from openai import AsyncOpenAI
    from openai.types.shared import Reasoning

    import agents
    from agents import (Agent, ModelSettings, OpenAIChatCompletionsModel, OpenAIResponsesModel,
                        Runner, function_tool)

    agents.set_tracing_disabled(True)

    async def count(request):
        if request.method == "POST":
            counter[0] += 1

    client = AsyncOpenAI(api_key="sk-test", base_url=args.base_url, default_headers=args.headers,
                         http_client=httpx.AsyncClient(event_hooks={"request": [count]}, timeout=120))

    @function_tool
    def shell(command: str) -> str:
        """Run a shell command with bash and return its output (stdout, then stderr).

        Args:
            command: The command line to run.
        """
        return run_shell(command)

    settings = ModelSettings()
    if args.variant in ("chat", "chat-stream"):
        model = OpenAIChatCompletionsModel(model="gpt-4.1", openai_client=client)
    elif args.variant == "reasoning":
        model = OpenAIResponsesModel(model="gpt-5", openai_client=client)
        settings = ModelSettings(reasoning=Reasoning(effort="low"), store=False,
                                 response_include=["reasoning.encrypted_content"])
    else:
        model = OpenAIResponsesModel(model="gpt-4.1", openai_client=client)

    agent = Agent(name="Assistant", instructions="You are a helpful assistant. Use the shell tool when asked to run commands.",
                  model=model, model_settings=settings, tools=[shell])

    history = []
    if args.turn > 1:
        with open(args.state) as f:
            history = json.load(f)["items"]
    user = {"role": "user", "content": TURNS[args.turn]}
    agent_input = history + [user] if history else TURNS[args.turn]

    try:
        if args.variant.endswith("-stream"):
            result = Runner.run_streamed(agent, agent_input, max_turns=10)
            async for _event in result.stream_events():
                pass
        else:
            result = await Runner.run(agent, agent_input, max_turns=10)
    finally:
        await client.close()

    with open(args.state, "w") as f:
        json.dump({"framework": "openai-agents", "variant": args.variant, "turn": args.turn,
                   "items": result.to_input_list()}, f, indent=1, default=str)
    final = result.final_output
    return final if isinstance(final, str) else json.dumps(final, default=str)


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
    base = args.base_url.rstrip("/")
    args.base_url = base if base.endswith("/v1") else base + "/v1"

    counter = [0]
    out = {"final": None, "ok": False, "error": None, "requests": 0}
    try:
        out["final"] = asyncio.run(one_turn(args, counter))
        out["ok"] = bool(out["final"])
        if not out["ok"]:
            out["error"] = "empty final output"
    except BaseException as e:  # noqa: BLE001 - report everything, including SystemExit from deep inside
        out["error"] = f"{type(e).__name__}: {e}"
    out["requests"] = counter[0]
    print(json.dumps(out), flush=True)
    sys.exit(0 if out["ok"] else 1)


if __name__ == "__main__":
    main()
