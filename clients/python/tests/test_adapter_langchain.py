"""End to end with LangChain (create_agent) and a GenericFakeChatModel-based scripted model:
a tool returns 500 KB, the middleware stores it in Cairn and the ToolMessage holds only the
marker; the model greps it and pages it back through memory_fetch; byte for byte."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("langchain.agents")

from langchain.agents import create_agent  # noqa: E402
from langchain_core.callbacks import CallbackManagerForLLMRun  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from langchain_core.tools import tool  # noqa: E402

from cairn_client import AsyncCairn, Cairn  # noqa: E402
from cairn_client.adapters.langchain import (  # noqa: E402
    CairnOffloadMiddleware,
    cairn_tools,
    offload_tool_messages,
)
from conftest import Server  # noqa: E402
from test_adapter_agents import big_output  # noqa: E402

Script = Callable[[list[BaseMessage]], AIMessage]


class ScriptedChatModel(GenericFakeChatModel):
    """GenericFakeChatModel whose next message is computed from the conversation so far
    (so it can follow the pointers it is given), and which accepts bind_tools."""

    script: Any = None

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.script(messages))])


def call(name: str, args: dict[str, Any], cid: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": cid, "type": "tool_call"}])


def make_script(seen: dict[str, Any]) -> Script:
    def script(messages: list[BaseMessage]) -> AIMessage:
        tools = [m for m in messages if isinstance(m, ToolMessage)]
        if not tools:
            return call("run_tests", {}, "c-run")
        run_msg = next(m for m in tools if m.tool_call_id == "c-run")
        assert isinstance(run_msg.content, str) and len(run_msg.content) < 4000
        last = tools[-1]
        assert isinstance(last.content, str)
        if last.tool_call_id == "c-run":
            seen["marker"] = last.content
            m = re.search(r"mem://[0-9a-f]{64}", last.content)
            assert m
            seen["uri"] = m.group(0)
            return call("memory_grep", {"uri": seen["uri"], "pattern": "FAILED", "fixed": True}, "c-grep")
        if last.tool_call_id == "c-grep":
            seen["grep"] = json.loads(last.content)
            return call("memory_fetch", {"uri": seen["uri"], "start": 1, "max_tokens": 8000}, "c-page-0")
        page = json.loads(last.content)
        seen["pages"].append(page)
        if page["next"]:
            return call("memory_fetch", {"uri": page["next"]}, f"c-page-{len(seen['pages'])}")
        return AIMessage(content=f"read {len(seen['pages'])} pages")

    return script


def _check(seen: dict[str, Any], original: str, stored: bytes) -> None:
    assert seen["marker"].startswith("[cairn: offloaded tool_output run_tests · mem://")
    failed = [n for n, line in enumerate(original.splitlines(), 1) if " FAILED " in line]
    assert [m["line"] for m in seen["grep"]["matches"]] == failed
    assert len(seen["pages"]) > 3
    assert "".join(p["text"] for p in seen["pages"]) == original
    assert stored == original.encode()


def _fresh_messages() -> Iterator[AIMessage]:
    return iter([])


def test_langchain_agent_offload_grep_and_page_back(server: Server) -> None:
    original = big_output("langchain-e2e")

    @tool
    def run_tests() -> str:
        """Run the test suite and return its output."""
        return original

    seen: dict[str, Any] = {"pages": []}
    with Cairn(server.url) as cairn:
        model = ScriptedChatModel(messages=_fresh_messages(), script=make_script(seen))
        agent = create_agent(model, tools=[run_tests, *cairn_tools(cairn)],
                             middleware=[CairnOffloadMiddleware(cairn, threshold_chars=20_000)])
        state = agent.invoke({"messages": [HumanMessage("run the tests")]}, {"recursion_limit": 100})
        stored = cairn.read_content(seen["uri"])
    assert state["messages"][-1].content.startswith("read ")
    run_msgs = [m for m in state["messages"] if isinstance(m, ToolMessage) and m.tool_call_id == "c-run"]
    assert run_msgs[0].content == seen["marker"]  # the agent's state holds only the marker
    _check(seen, original, stored)


def test_langchain_agent_async(server: Server) -> None:
    original = big_output("langchain-async-e2e")

    @tool
    async def run_tests() -> str:
        """Run the test suite and return its output."""
        return original

    seen: dict[str, Any] = {"pages": []}

    async def main() -> bytes:
        async with AsyncCairn(server.url) as cairn:
            model = ScriptedChatModel(messages=_fresh_messages(), script=make_script(seen))
            agent = create_agent(model, tools=[run_tests, *cairn_tools(async_client=cairn)],
                                 middleware=[CairnOffloadMiddleware(async_client=cairn,
                                                                    threshold_chars=20_000)])
            await agent.ainvoke({"messages": [HumanMessage("run the tests")]}, {"recursion_limit": 100})
            return await cairn.read_content(seen["uri"])

    stored = asyncio.run(main())
    _check(seen, original, stored)


def test_offload_tool_messages_helper(server: Server) -> None:
    original = big_output("helper")
    msgs: list[BaseMessage] = [
        HumanMessage("hi"),
        call("run_tests", {}, "c1"),
        ToolMessage(content=original, tool_call_id="c1", name="run_tests"),
        ToolMessage(content="small", tool_call_id="c2", name="other"),
    ]
    with Cairn(server.url) as cairn:
        out = offload_tool_messages(msgs, cairn, threshold_chars=10_000)
        assert out[3].content == "small" and out[0] is msgs[0]
        marker = out[2].content
        assert isinstance(marker, str) and marker.startswith("[cairn: offloaded tool_output run_tests")
        assert offload_tool_messages(out, cairn, threshold_chars=10)[2].content == marker  # never twice
        uri = re.search(r"mem://[0-9a-f]{64}", marker)
        assert uri and cairn.read_content(uri.group(0)) == original.encode()


def test_langchain_tools_direct(server: Server) -> None:
    word = "quokka" + uuid.uuid4().hex[:10]
    text = "".join(f"line {i}\n" for i in range(1, 301)) + f"the {word} line\n"

    async def main(fetch_async: Any, search_async: Any) -> tuple[str, str]:
        return (await fetch_async.ainvoke({"uri": uri, "start": 301, "end": 301}),
                await search_async.ainvoke({"query": word}))

    with Cairn(server.url) as cairn:
        put = cairn.put(text, title="tools")
        uri = put["uri"]
        cairn.search(word, wait_ms=10000)
        fetch, grep, search = cairn_tools(cairn)
        page = json.loads(fetch.invoke({"uri": uri, "start": 2, "end": 3}))
        assert page["text"] == "line 2\nline 3\n" and page["next"]
        assert json.loads(fetch.invoke({"uri": page["next"]}))["start"] == 4
        g = json.loads(grep.invoke({"uri": uri, "pattern": word}))
        assert [m["line"] for m in g["matches"]] == [301]
        s = json.loads(search.invoke({"query": word}))
        assert s["results"][0]["uri"] == uri and s["results"][0]["hits"][0]["line"] == 301
        # async through the sync client (a thread) and through AsyncCairn
        f1, s1 = asyncio.run(main(fetch, search))
        assert json.loads(f1)["text"] == f"the {word} line\n" and json.loads(s1)["results"]

        async def with_async() -> tuple[str, str]:
            async with AsyncCairn(server.url) as ac:
                fa, _, sa = cairn_tools(async_client=ac)
                return await main(fa, sa)

        f2, s2 = asyncio.run(with_async())
        assert f2 == f1 and json.loads(s2)["results"][0]["uri"] == uri
