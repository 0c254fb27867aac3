"""End to end with the OpenAI Agents SDK and its own scripted model (agents.testing.ScriptedModel):
a tool returns 500 KB, the offloader stores it in Cairn and the model only sees the marker; the
model greps it and pages it back through memory_fetch; the pages are the original, byte for byte."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, RunConfig, Runner, function_tool  # noqa: E402
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message  # noqa: E402
from agents.testing import function_call as fc  # noqa: E402

from cairn_client import AsyncCairn  # noqa: E402
from cairn_client.adapters.agents import CairnOutputOffloader, cairn_function_tools  # noqa: E402
from conftest import Server  # noqa: E402


def big_output(tag: str) -> str:
    lines: list[str] = []
    size = 0
    i = 0
    while size < 500_000:
        i += 1
        status = "FAILED" if i % 1000 == 0 else "PASSED"
        lines.append(f"tests/test_mod_{i % 37}.py::test_case_{i} {status} [{tag}] {'.' * (i % 40)}\n")
        size += len(lines[-1])
    return "".join(lines)


def outputs(call: ModelCall) -> list[dict[str, Any]]:
    return [x for x in call.input if isinstance(x, dict) and x.get("type") == "function_call_output"]


def test_agents_sdk_offload_grep_and_page_back(server: Server) -> None:
    original = big_output("agents-e2e")
    assert len(original) >= 500_000

    @function_tool
    def run_tests() -> str:
        """Run the test suite and return its output."""
        return original

    seen: dict[str, Any] = {"pages": [], "marker": None, "grep": None}
    model = ScriptedModel()

    def step(call: ModelCall) -> Any:
        outs = outputs(call)
        if not outs:
            return [fc("run_tests", {}, call_id="c-run")]
        # the 500 KB output never reaches the model: only the marker
        run_out = next(o for o in outs if o["call_id"] == "c-run")["output"]
        assert len(run_out) < 4000, len(run_out)
        last = outs[-1]
        if last["call_id"] == "c-run":
            seen["marker"] = run_out
            uri = re.search(r"mem://[0-9a-f]{64}", run_out)
            assert uri
            seen["uri"] = uri.group(0)
            model.enqueue(ModelStep.respond(step))
            return [fc("memory_grep", {"uri": seen["uri"], "pattern": "FAILED", "fixed": True},
                       call_id="c-grep")]
        if last["call_id"] == "c-grep":
            seen["grep"] = json.loads(last["output"])
            model.enqueue(ModelStep.respond(step))
            return [fc("memory_fetch", {"uri": seen["uri"], "start": 1, "max_tokens": 8000},
                       call_id="c-page-0")]
        page = json.loads(last["output"])
        seen["pages"].append(page)
        if page["next"]:
            model.enqueue(ModelStep.respond(step))
            return [fc("memory_fetch", {"uri": page["next"]}, call_id=f"c-page-{len(seen['pages'])}")]
        return [assistant_message(f"read {len(seen['pages'])} pages")]

    model.enqueue(ModelStep.respond(step))
    model.enqueue(ModelStep.respond(step))

    async def main() -> Any:
        async with AsyncCairn(server.url) as cairn:
            offloader = CairnOutputOffloader(cairn, threshold_chars=20_000, thread="agents-e2e")
            agent = Agent(name="coder", model=model,
                          tools=[run_tests, *cairn_function_tools(cairn)])
            result = await Runner.run(agent, "run the tests and read the failures", max_turns=60,
                                      run_config=RunConfig(call_model_input_filter=offloader,
                                                                tracing_disabled=True))
            stored = await cairn.read_content(seen["uri"])
            return result, offloader, stored

    result, offloader, stored = asyncio.run(main())
    assert result.final_output.startswith("read ")
    marker = seen["marker"]
    assert marker.startswith("[cairn: offloaded tool_output run_tests · mem://")
    assert seen["uri"] in offloader.offloaded
    # grep found exactly the failures
    failed = [n for n, line in enumerate(original.splitlines(), 1) if " FAILED " in line]
    assert [m["line"] for m in seen["grep"]["matches"]] == failed
    # paged back byte for byte, each page within its budget
    assert len(seen["pages"]) > 3
    assert all(p["tokens"] <= 8000 for p in seen["pages"])
    assert "".join(p["text"] for p in seen["pages"]) == original
    assert stored == original.encode()
