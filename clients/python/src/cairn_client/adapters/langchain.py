"""LangChain adapter (``pip install 'cairn-client[langchain]'``; the middleware needs
``langchain`` ≥ 1.0).

- :func:`cairn_tools` — ``memory_fetch``, ``memory_grep`` and ``memory_search`` as ``BaseTool`` s
  (sync through :class:`~cairn_client.Cairn`, async through :class:`~cairn_client.AsyncCairn`).
- :class:`CairnOffloadMiddleware` — an agent middleware (``create_agent(middleware=[...])``)
  that stores every ``ToolMessage`` over ``threshold_chars`` in Cairn and replaces its content
  with Cairn's marker and summary, as the tool returns it.
- :func:`offload_tool_messages` — the same on a message list, for graphs without middleware.

.. code-block:: python

    from langchain.agents import create_agent
    from cairn_client import Cairn
    from cairn_client.adapters.langchain import CairnOffloadMiddleware, cairn_tools

    cairn = Cairn()
    agent = create_agent(model, tools=[run_tests, *cairn_tools(cairn)],
                         middleware=[CairnOffloadMiddleware(cairn)])
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForToolRun, CallbackManagerForToolRun
from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.tools import BaseTool
from pydantic import BaseModel, ConfigDict, Field

from .._async_client import AsyncCairn
from .._sync_client import Cairn
from .common import (
    CAIRN_TOOL_NAMES,
    DEFAULT_THRESHOLD_CHARS,
    FETCH_DESCRIPTION,
    GREP_DESCRIPTION,
    SEARCH_DESCRIPTION,
    AsyncOffloader,
    Offloader,
    afetch_text,
    agrep_text,
    asearch_text,
    fetch_text,
    grep_text,
    search_text,
)

__all__ = [
    "MemoryFetchTool",
    "MemoryGrepTool",
    "MemorySearchTool",
    "cairn_tools",
    "offload_tool_messages",
    "CairnOffloadMiddleware",
]


class FetchArgs(BaseModel):
    uri: str = Field(description="mem:// pointer (from a marker or a previous `next`) or memory id")
    start: int | None = Field(default=None, description="first line (1-based)")
    end: int | None = Field(default=None, description="last line (inclusive)")
    max_tokens: int | None = Field(default=None, description="as many whole lines as fit (>= 16)")


class GrepArgs(BaseModel):
    uri: str = Field(description="mem:// pointer or memory id")
    pattern: str = Field(description="regular expression (or a literal with fixed=true)")
    fixed: bool | None = None
    ignore_case: bool | None = None
    context: int | None = Field(default=None, description="context lines (0-10)")
    max_matches: int | None = Field(default=None, description="1-1000, default 100")
    after: int | None = Field(default=None, description="continue after this line (a previous `next`)")


class SearchArgs(BaseModel):
    query: str = Field(description="words, \"phrases\", prefix*, AND/OR/NOT")
    limit: int | None = None
    thread: str | None = None


class _CairnTool(BaseTool):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    client: Cairn | None = None
    async_client: AsyncCairn | None = None

    def _sync(self) -> Cairn:
        if self.client is None:
            raise RuntimeError(f"{self.name}: no sync Cairn client given (pass client=Cairn(...))")
        return self.client


class MemoryFetchTool(_CairnTool):
    name: str = "memory_fetch"
    description: str = FETCH_DESCRIPTION
    args_schema: type[BaseModel] = FetchArgs

    def _run(self, uri: str, start: int | None = None, end: int | None = None,
             max_tokens: int | None = None,
             run_manager: CallbackManagerForToolRun | None = None) -> str:
        return fetch_text(self._sync(), uri, start, end, max_tokens)

    async def _arun(self, uri: str, start: int | None = None, end: int | None = None,
                    max_tokens: int | None = None,
                    run_manager: AsyncCallbackManagerForToolRun | None = None) -> str:
        if self.async_client is None:
            result: str = await super()._arun(uri, start, end, max_tokens)
            return result
        return await afetch_text(self.async_client, uri, start, end, max_tokens)


class MemoryGrepTool(_CairnTool):
    name: str = "memory_grep"
    description: str = GREP_DESCRIPTION
    args_schema: type[BaseModel] = GrepArgs

    def _run(self, uri: str, pattern: str, fixed: bool | None = None,
             ignore_case: bool | None = None, context: int | None = None,
             max_matches: int | None = None, after: int | None = None,
             run_manager: CallbackManagerForToolRun | None = None) -> str:
        return grep_text(self._sync(), uri, pattern, fixed, ignore_case, context, max_matches, after)

    async def _arun(self, uri: str, pattern: str, fixed: bool | None = None,
                    ignore_case: bool | None = None, context: int | None = None,
                    max_matches: int | None = None, after: int | None = None,
                    run_manager: AsyncCallbackManagerForToolRun | None = None) -> str:
        if self.async_client is None:
            result: str = await super()._arun(uri, pattern, fixed, ignore_case, context, max_matches, after)
            return result
        return await agrep_text(self.async_client, uri, pattern, fixed, ignore_case, context,
                                max_matches, after)


class MemorySearchTool(_CairnTool):
    name: str = "memory_search"
    description: str = SEARCH_DESCRIPTION
    args_schema: type[BaseModel] = SearchArgs

    def _run(self, query: str, limit: int | None = None, thread: str | None = None,
             run_manager: CallbackManagerForToolRun | None = None) -> str:
        return search_text(self._sync(), query, limit, thread)

    async def _arun(self, query: str, limit: int | None = None, thread: str | None = None,
                    run_manager: AsyncCallbackManagerForToolRun | None = None) -> str:
        if self.async_client is None:
            result: str = await super()._arun(query, limit, thread)
            return result
        return await asearch_text(self.async_client, query, limit, thread)


def cairn_tools(client: Cairn | None = None, async_client: AsyncCairn | None = None) -> list[BaseTool]:
    """The three Cairn tools; give ``client`` for sync runs and/or ``async_client`` for async
    ones (without it, async runs call the sync client in a thread)."""
    if client is None and async_client is None:
        client = Cairn()
    return [
        MemoryFetchTool(client=client, async_client=async_client),
        MemoryGrepTool(client=client, async_client=async_client),
        MemorySearchTool(client=client, async_client=async_client),
    ]


def _text(message: ToolMessage) -> str | None:
    return message.content if isinstance(message.content, str) else None


def offload_tool_messages(
    messages: Sequence[BaseMessage],
    client: Cairn | Offloader,
    threshold_chars: int = DEFAULT_THRESHOLD_CHARS,
) -> list[BaseMessage]:
    """A copy of ``messages`` where every ``ToolMessage`` with text over ``threshold_chars``
    (Cairn's own tools excepted) is stored in Cairn and replaced by the marker and summary."""
    off = client if isinstance(client, Offloader) else Offloader(client, threshold_chars)
    out: list[BaseMessage] = []
    for message in messages:
        if isinstance(message, ToolMessage):
            text = _text(message)
            if text is not None:
                replaced = off.offload(text, message.name)
                if replaced is not text:
                    message = message.model_copy(update={"content": replaced})
        out.append(message)
    return out


try:  # the middleware needs `langchain` (the agents package), not just langchain-core
    from langchain.agents.middleware import AgentMiddleware
    from langchain.agents.middleware.types import ToolCallRequest
except ImportError:  # pragma: no cover
    AgentMiddleware = object  # type: ignore[misc,assignment]
    ToolCallRequest = Any  # type: ignore[misc,assignment]


class CairnOffloadMiddleware(AgentMiddleware):
    """Offloads every tool result over ``threshold_chars`` to Cairn as the tool returns it
    (``wrap_tool_call``/``awrap_tool_call``): the agent's state, and so the model, only ever
    hold the marker and summary; the original is in Cairn, durable and shared."""

    def __init__(
        self,
        client: Cairn | None = None,
        threshold_chars: int = DEFAULT_THRESHOLD_CHARS,
        *,
        async_client: AsyncCairn | None = None,
        thread: str | None = None,
        tags: list[str] | None = None,
        skip_tools: frozenset[str] | set[str] = CAIRN_TOOL_NAMES,
    ) -> None:
        super().__init__()
        if client is None and async_client is None:
            client = Cairn()
        self.sync_offloader = (
            Offloader(client, threshold_chars, thread=thread, tags=tags, skip_tools=skip_tools)
            if client is not None else None
        )
        self.async_offloader = (
            AsyncOffloader(async_client, threshold_chars, thread=thread, tags=tags,
                           skip_tools=skip_tools)
            if async_client is not None else None
        )

    def wrap_tool_call(self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Any]) -> Any:
        result = handler(request)
        if isinstance(result, ToolMessage) and self.sync_offloader is not None:
            text = _text(result)
            if text is not None:
                name = result.name or request.tool_call.get("name")
                replaced = self.sync_offloader.offload(text, name)
                if replaced is not text:
                    return result.model_copy(update={"content": replaced})
        return result

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[Any]]
    ) -> Any:
        result = await handler(request)
        if isinstance(result, ToolMessage):
            text = _text(result)
            if text is not None:
                name = result.name or request.tool_call.get("name")
                if self.async_offloader is not None:
                    replaced = await self.async_offloader.offload(text, name)
                elif self.sync_offloader is not None:
                    import asyncio

                    replaced = await asyncio.to_thread(self.sync_offloader.offload, text, name)
                else:  # pragma: no cover
                    return result
                if replaced is not text:
                    return result.model_copy(update={"content": replaced})
        return result
