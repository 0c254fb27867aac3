"""OpenAI Agents SDK adapter (``pip install 'cairn-client[agents]'``).

- :func:`cairn_function_tools` — ``memory_fetch``, ``memory_grep`` and ``memory_search`` as
  function tools, so the model pages offloaded outputs back.
- :class:`CairnOutputOffloader` — a ``call_model_input_filter`` (the hook
  ``ToolOutputTrimmer`` uses): before each model call, every tool output over
  ``threshold_chars`` is stored in Cairn and replaced by Cairn's marker and summary. Unlike
  the trimmer, nothing is lost: the original stays in Cairn, durable and shared.

.. code-block:: python

    from agents import Agent, RunConfig, Runner
    from cairn_client import AsyncCairn
    from cairn_client.adapters.agents import CairnOutputOffloader, cairn_function_tools

    cairn = AsyncCairn()
    agent = Agent(name="coder", tools=[run_tests, *cairn_function_tools(cairn)])
    result = await Runner.run(agent, "fix the build",
                              run_config=RunConfig(call_model_input_filter=CairnOutputOffloader(cairn)))
"""

from __future__ import annotations

from typing import Any

from agents import FunctionTool, function_tool
from agents.run_config import CallModelData, ModelInputData

from .._async_client import AsyncCairn
from .common import (
    CAIRN_TOOL_NAMES,
    DEFAULT_THRESHOLD_CHARS,
    FETCH_DESCRIPTION,
    GREP_DESCRIPTION,
    SEARCH_DESCRIPTION,
    AsyncOffloader,
    afetch_text,
    agrep_text,
    asearch_text,
)

__all__ = ["cairn_function_tools", "CairnOutputOffloader"]


def cairn_function_tools(client: AsyncCairn) -> list[FunctionTool]:
    """``memory_fetch``, ``memory_grep`` and ``memory_search`` bound to ``client``."""

    async def memory_fetch(
        uri: str,
        start: int | None = None,
        end: int | None = None,
        max_tokens: int | None = None,
    ) -> str:
        return await afetch_text(client, uri, start, end, max_tokens)

    async def memory_grep(
        uri: str,
        pattern: str,
        fixed: bool | None = None,
        ignore_case: bool | None = None,
        context: int | None = None,
        max_matches: int | None = None,
        after: int | None = None,
    ) -> str:
        return await agrep_text(client, uri, pattern, fixed, ignore_case, context, max_matches, after)

    async def memory_search(query: str, limit: int | None = None, thread: str | None = None) -> str:
        return await asearch_text(client, query, limit, thread)

    return [
        function_tool(memory_fetch, name_override="memory_fetch",
                      description_override=FETCH_DESCRIPTION, use_docstring_info=False),
        function_tool(memory_grep, name_override="memory_grep",
                      description_override=GREP_DESCRIPTION, use_docstring_info=False),
        function_tool(memory_search, name_override="memory_search",
                      description_override=SEARCH_DESCRIPTION, use_docstring_info=False),
    ]


class CairnOutputOffloader:
    """A ``RunConfig.call_model_input_filter`` that offloads large tool outputs to Cairn.

    Every ``function_call_output`` whose text is longer than ``threshold_chars`` (the outputs of
    the Cairn tools themselves excepted) is stored (type ``TOOL_OUTPUT``, the tool's name as
    subtype, ``thread``/``tags`` if given) and replaced by the marker
    ``[cairn: offloaded tool_output <tool> · mem://<id> · <lines> lines, <tokens> tokens]`` and
    the summary. An output already offloaded costs no second put. ``offloaded`` maps each
    stored memory's URI to the tool's ``call_id``.
    """

    def __init__(
        self,
        client: AsyncCairn,
        threshold_chars: int = DEFAULT_THRESHOLD_CHARS,
        *,
        thread: str | None = None,
        tags: list[str] | None = None,
        skip_tools: frozenset[str] | set[str] = CAIRN_TOOL_NAMES,
    ) -> None:
        self.offloader = AsyncOffloader(
            client, threshold_chars, thread=thread, tags=tags, skip_tools=skip_tools
        )
        self.offloaded: dict[str, str] = {}

    async def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        items = data.model_data.input
        names: dict[str, str] = {}
        for item in items:
            if isinstance(item, dict) and item.get("type") == "function_call":
                names[str(item.get("call_id"))] = str(item.get("name"))
        out: list[Any] = []
        changed = False
        for item in items:
            entry: Any = item
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                output = item.get("output")
                if isinstance(output, str):
                    call_id = str(item.get("call_id"))
                    replaced = await self.offloader.offload(output, names.get(call_id))
                    if replaced is not output:
                        first = replaced.split(" · ", 2)
                        if len(first) > 1:
                            self.offloaded[first[1]] = call_id
                        entry = {**item, "output": replaced}
                        changed = True
            out.append(entry)
        if not changed:
            return data.model_data
        return ModelInputData(input=out, instructions=data.model_data.instructions)
