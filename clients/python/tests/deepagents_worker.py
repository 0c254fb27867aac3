"""One deepagents 'agent process' for test_adapter_deepagents.py (run as a subprocess, so the
second phase really is a fresh process that only has Cairn).

    python deepagents_worker.py evict URL ROOT   # run_tests → 500 KB result evicted to Cairn
    python deepagents_worker.py read URL ROOT PATH  # read_file pages, grep and glob it back

Prints one JSON document on stdout.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool

from deepagents import create_deep_agent

from cairn_client import Cairn
from cairn_client.adapters.deepagents import CairnBackend


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


class ScriptedChatModel(GenericFakeChatModel):
    script: Any = None

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.script(messages))])


def call(name: str, args: dict[str, Any], cid: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": cid, "type": "tool_call"}])


GUTTER = re.compile(r"^\s*(\d+)(?:\.(\d+))?  (.*)$")
HEADER = re.compile(r"^@@ lines (\d+)-(\d+) of (\d+)(?: \| next offset (\d+))? @@$")


def parse_read(text: str) -> tuple[list[tuple[int, str]], int | None]:
    """read_file's answer as (line number, text) rows and the next offset: either a
    `@@ lines a-b of n | next offset k @@` header over raw lines, or `cat -n`-style gutters."""
    first, _, rest = text.partition("\n")
    h = HEADER.match(first)
    if h:
        a, b = int(h.group(1)), int(h.group(2))
        rows = rest.split("\n")[: b - a + 1]
        return list(zip(range(a, b + 1), rows)), int(h.group(4)) if h.group(4) else None
    found = [GUTTER.match(line) for line in text.split("\n")]
    numbered = [(int(m.group(1)), m.group(3)) for m in found if m and m.group(2) is None]
    return numbered, numbered[-1][0] if len(numbered) == 1000 else None


def main() -> None:
    phase, url, root = sys.argv[1], sys.argv[2], sys.argv[3]
    cairn = Cairn(url)
    backend = CairnBackend(cairn, root=root)
    out: dict[str, Any] = {}

    @tool
    def run_tests() -> str:
        """Run the test suite and return its output."""
        return big_output(root)

    if phase == "evict":
        def script(messages: list[BaseMessage]) -> AIMessage:
            tools = [m for m in messages if isinstance(m, ToolMessage)]
            if not tools:
                return call("run_tests", {}, "call_run_1")
            out["notice"] = tools[-1].content
            return AIMessage(content="the output was saved")
    else:
        path = sys.argv[4]
        out["pages"] = []
        limit = 1000

        def script(messages: list[BaseMessage]) -> AIMessage:
            tools = [m for m in messages if isinstance(m, ToolMessage)]
            if not tools:
                return call("read_file", {"file_path": path, "offset": 0, "limit": limit}, "r0")
            last = tools[-1]
            text = last.content if isinstance(last.content, str) else str(last.content)
            if last.tool_call_id.startswith("r"):
                numbered, next_offset = parse_read(text)
                out["pages"].append(numbered)
                n = len(out["pages"])
                if next_offset is not None:
                    return call("read_file", {"file_path": path, "offset": next_offset, "limit": limit},
                                f"r{n}")
                return call("grep", {"pattern": "FAILED", "path": "/large_tool_results",
                                     "output_mode": "content"}, "g")
            if last.tool_call_id == "g":
                out["grep"] = text
                return call("glob", {"pattern": "*", "path": "/large_tool_results"}, "gl")
            if last.tool_call_id == "gl":
                out["glob"] = text
                return call("ls", {"path": "/large_tool_results"}, "ls")
            out["ls"] = text
            return AIMessage(content="done")

    model = ScriptedChatModel(messages=iter([]), script=script)
    agent = create_deep_agent(model, tools=[run_tests], backend=backend)
    agent.invoke({"messages": [HumanMessage("go")]}, {"recursion_limit": 200})
    if phase == "read":
        out["download"] = backend.download_files([sys.argv[4]])[0].content.decode()  # type: ignore[union-attr]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
