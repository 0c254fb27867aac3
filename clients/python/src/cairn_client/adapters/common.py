"""Framework-free pieces of the adapters: the offload marker and the tools' logic."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from .._async_client import AsyncCairn
from .._sync_client import Cairn
from ..types import GrepResult, PutResult, SearchPage, Slice

__all__ = [
    "DEFAULT_THRESHOLD_CHARS",
    "CAIRN_TOOL_NAMES",
    "FETCH_DESCRIPTION",
    "GREP_DESCRIPTION",
    "SEARCH_DESCRIPTION",
    "Offloader",
    "AsyncOffloader",
    "marker",
    "is_marker",
    "fetch_text",
    "grep_text",
    "search_text",
]

#: Outputs longer than this many characters are offloaded (Cairn's proxy default).
DEFAULT_THRESHOLD_CHARS = 6000
#: The adapters' own tools: their outputs (pages of a memory) are never offloaded again.
CAIRN_TOOL_NAMES = frozenset({"memory_fetch", "memory_grep", "memory_search"})

_MARKER = re.compile(r"^\[cairn: (offloaded|folded) ")

FETCH_DESCRIPTION = (
    "Read part of a memory stored in Cairn (a large tool output that was offloaded). "
    "`uri` is a mem:// pointer from a marker or a previous `next` (or a memory id). "
    "Give `start`/`end` lines (1-based, inclusive; at most 2,000 lines and 64 KiB a call) or "
    "`max_tokens` for as many whole lines as fit. The answer is JSON: `text`, `start`, `end`, "
    "`total_lines`, and `next` (the pointer to pass next; null at the end)."
)
GREP_DESCRIPTION = (
    "grep -n inside a memory stored in Cairn: `uri` (mem:// pointer or id), `pattern` (a regex; "
    "`fixed` for a literal), `ignore_case`, `context` lines, `max_matches`, `after` (continue "
    "after this line: pass a previous `next`). JSON answer: `matches` [{line, text, uri}], `next`."
)
SEARCH_DESCRIPTION = (
    "Full-text search over every memory stored in Cairn (words, \"phrases\", prefix*, AND/OR/NOT). "
    "JSON answer: results best first, each with its mem:// `uri`, `title` and matching `hits` "
    "(line numbers and text)."
)


def is_marker(text: str) -> bool:
    """True when ``text`` already is a Cairn marker (never offloaded twice)."""
    return bool(_MARKER.match(text))


def marker(put: PutResult, tool_name: str | None) -> str:
    """Cairn's marker for an offloaded output, followed by the stored summary."""
    what = f"tool_output {tool_name}" if tool_name else "tool_output"
    head = (
        f"[cairn: offloaded {what} · {put['uri']} · {put['lines']} lines, {put['tokens']} tokens]"
    )
    hint = (
        f"(The full output is stored in Cairn. Read it with memory_fetch(uri=\"{put['uri']}\", "
        "start, end) or memory_grep(uri, pattern).)"
    )
    return f"{head}\n{put['summary']}\n{hint}"


class _Base:
    def __init__(
        self,
        threshold_chars: int = DEFAULT_THRESHOLD_CHARS,
        *,
        type: str = "TOOL_OUTPUT",
        thread: str | None = None,
        tags: list[str] | None = None,
        skip_tools: frozenset[str] | set[str] = CAIRN_TOOL_NAMES,
    ) -> None:
        self.threshold_chars = threshold_chars
        self.type = type
        self.thread = thread
        self.tags = tags
        self.skip_tools = frozenset(skip_tools)
        # sha256 of an offloaded text → its marker: a text seen again costs no put.
        self._markers: dict[str, str] = {}

    def wants(self, text: str, tool_name: str | None) -> bool:
        if tool_name is not None and tool_name in self.skip_tools:
            return False
        return len(text) > self.threshold_chars and not is_marker(text)

    def _fields(self, tool_name: str | None) -> dict[str, Any]:
        return dict(
            type=self.type,
            subtype=tool_name,
            title=f"{tool_name} output" if tool_name else "tool output",
            thread=self.thread,
            tags=self.tags,
        )


class Offloader(_Base):
    """Stores texts over ``threshold_chars`` in Cairn (sync) and returns their marker."""

    def __init__(self, client: Cairn, threshold_chars: int = DEFAULT_THRESHOLD_CHARS, **kw: Any) -> None:
        super().__init__(threshold_chars, **kw)
        self.client = client

    def offload(self, text: str, tool_name: str | None = None) -> str:
        """``text`` itself when it is small (or a marker), else its marker."""
        if not self.wants(text, tool_name):
            return text
        key = hashlib.sha256(text.encode("utf-8")).hexdigest()
        if key not in self._markers:
            put = self.client.put(text, **self._fields(tool_name))
            self._markers[key] = marker(put, tool_name)
        return self._markers[key]


class AsyncOffloader(_Base):
    """Stores texts over ``threshold_chars`` in Cairn (async) and returns their marker."""

    def __init__(
        self, client: AsyncCairn, threshold_chars: int = DEFAULT_THRESHOLD_CHARS, **kw: Any
    ) -> None:
        super().__init__(threshold_chars, **kw)
        self.client = client

    async def offload(self, text: str, tool_name: str | None = None) -> str:
        if not self.wants(text, tool_name):
            return text
        key = hashlib.sha256(text.encode("utf-8")).hexdigest()
        if key not in self._markers:
            put = await self.client.put(text, **self._fields(tool_name))
            self._markers[key] = marker(put, tool_name)
        return self._markers[key]


# ---------------------------------------------------------------- tool answers


def _slice_json(s: Slice) -> str:
    keys = ("uri", "start", "end", "total_lines", "truncated", "tokens", "next", "text")
    return json.dumps({k: s.get(k) for k in keys if k in s}, ensure_ascii=False)


def _is_pointer(uri: str) -> bool:
    return uri.startswith("mem://") and ("#" in uri or "?" in uri)


def fetch_args(
    uri: str, start: int | None, end: int | None, max_tokens: int | None
) -> tuple[bool, dict[str, Any]]:
    """(``True`` → ``fetch(uri, ...)``, ``False`` → ``lines(uri, ...)``) and the arguments."""
    if _is_pointer(uri) and start is None and end is None:
        return True, {"max_tokens": max_tokens}
    return False, {"start": start, "end": end, "max_tokens": max_tokens}


def fetch_text(client: Cairn, uri: str, start: int | None = None, end: int | None = None,
               max_tokens: int | None = None) -> str:
    use_fetch, kw = fetch_args(uri, start, end, max_tokens)
    s = client.fetch(uri, **kw) if use_fetch else client.lines(uri, **kw)
    return _slice_json(s)


async def afetch_text(client: AsyncCairn, uri: str, start: int | None = None, end: int | None = None,
                      max_tokens: int | None = None) -> str:
    use_fetch, kw = fetch_args(uri, start, end, max_tokens)
    s = await client.fetch(uri, **kw) if use_fetch else await client.lines(uri, **kw)
    return _slice_json(s)


def _grep_json(g: GrepResult) -> str:
    return json.dumps(
        {
            "id": g["id"],
            "matches": [
                {"line": m["line"], "text": m["text"], "uri": m["uri"],
                 **({"before": m["before"], "after": m["after"]} if m["before"] or m["after"] else {})}
                for m in g["matches"]
            ],
            "truncated": g["truncated"],
            "next": g.get("next"),
        },
        ensure_ascii=False,
    )


def _grep_kw(pattern: str, fixed: bool | None, ignore_case: bool | None, context: int | None,
             max_matches: int | None, after: int | None) -> dict[str, Any]:
    return dict(pattern=pattern, fixed=fixed, ignore_case=ignore_case, context=context,
                max_matches=max_matches, after=after)


def grep_text(client: Cairn, uri: str, pattern: str, fixed: bool | None = None,
              ignore_case: bool | None = None, context: int | None = None,
              max_matches: int | None = None, after: int | None = None) -> str:
    kw = _grep_kw(pattern, fixed, ignore_case, context, max_matches, after)
    return _grep_json(client.grep(uri, **kw))


async def agrep_text(client: AsyncCairn, uri: str, pattern: str, fixed: bool | None = None,
                     ignore_case: bool | None = None, context: int | None = None,
                     max_matches: int | None = None, after: int | None = None) -> str:
    kw = _grep_kw(pattern, fixed, ignore_case, context, max_matches, after)
    return _grep_json(await client.grep(uri, **kw))


def _search_json(p: SearchPage) -> str:
    return json.dumps(
        {"results": [
            {"uri": r["uri"], "title": r["title"], "type": r["type"], "subtype": r["subtype"],
             "score": r["score"], "hits": r["hits"]}
            for r in p["results"]
        ]},
        ensure_ascii=False,
    )


def search_text(client: Cairn, query: str, limit: int | None = None, thread: str | None = None) -> str:
    return _search_json(client.search(query, limit=limit, thread=thread))


async def asearch_text(client: AsyncCairn, query: str, limit: int | None = None,
                       thread: str | None = None) -> str:
    return _search_json(await client.search(query, limit=limit, thread=thread))
