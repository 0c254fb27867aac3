"""Typed shapes of Cairn's answers (``TypedDict``: the answers are plain ``dict`` s at
run time, so fields the server adds later are kept)."""

from __future__ import annotations

from typing import Any, TypedDict

__all__ = [
    "Memory",
    "PutResult",
    "Redacted",
    "Slice",
    "ListPage",
    "SearchHit",
    "SearchResult",
    "SearchPage",
    "GrepMatch",
    "GrepResult",
    "MemoryGrep",
    "GrepAcrossPage",
    "QueryResult",
    "Ref",
    "RefsPage",
    "ImportResult",
    "TokensResult",
    "JSON",
]

JSON = dict[str, Any]


class Memory(TypedDict):
    """A memory's metadata and summary (``GET /v1/memories/{id}``)."""

    id: str
    uri: str
    type: str
    subtype: str | None
    mime: str
    title: str | None
    tags: list[str]
    thread: str | None
    checkpoint: str | None
    directory: str | None
    bytes: int
    stored_bytes: int
    lines: int
    tokens: int
    token_method: str
    tokens_settling: bool
    chunks: int
    summary: str
    created_at: str
    updated_at: str
    last_accessed_at: str | None
    access_count: int
    pinned: bool
    expires_at: str | None
    corrupt: str | None


class Redacted(TypedDict):
    total: int
    kinds: dict[str, int]
    scanned: bool


class PutResult(Memory):
    """The answer to a put: the memory plus ``deduplicated`` (200 instead of 201),
    ``tokens_saved`` and what redaction replaced. Its ``tokens_settling`` (as
    every memory's) is true while ``tokens`` is the bytes/4 estimate of a large
    content whose exact count replaces it moments later (``get`` then shows it)."""

    deduplicated: bool
    tokens_saved: int
    redacted: Redacted


class _SliceBase(TypedDict):
    id: str
    uri: str
    start: int
    end: int
    offset: int
    length: int
    total_lines: int
    total_bytes: int
    text: str
    truncated: bool


class Slice(_SliceBase, total=False):
    """A line, byte, chunk or token-budgeted slice. ``next`` is the pointer of what follows
    (``None`` at the end); ``text_base64`` carries the exact bytes when they are not UTF-8;
    ``tokens``/``method`` come with ``max_tokens``; ``chunk``/``chunks`` with a chunk."""

    next: str | None
    text_base64: str | None
    tokens: int | None
    method: str | None
    chunk: int | None
    chunks: int | None


class ListPage(TypedDict):
    memories: list[Memory]
    next_cursor: str | None


class SearchHit(TypedDict):
    line: int
    text: str
    uri: str


class SearchResult(TypedDict):
    id: str
    uri: str
    type: str
    subtype: str | None
    title: str | None
    score: float
    match: str
    hits: list[SearchHit]


class _SearchPageBase(TypedDict):
    results: list[SearchResult]


class SearchPage(_SearchPageBase, total=False):
    indexed: bool | None


class GrepMatch(TypedDict):
    line: int
    text: str
    cut: bool
    uri: str
    before: list[Any]
    after: list[Any]


class GrepResult(TypedDict):
    """``grep -n`` inside one memory; ``next`` (a line number) continues as ``after``."""

    id: str
    matches: list[GrepMatch]
    scanned_bytes: int
    skipped_bytes: int
    truncated: bool
    next: int | None


class MemoryGrep(TypedDict):
    id: str
    uri: str
    type: str
    subtype: str | None
    title: str | None
    matches: list[GrepMatch]


class GrepAcrossPage(TypedDict):
    results: list[MemoryGrep]
    searched: int
    scanned_bytes: int
    skipped_bytes: int
    truncated: bool
    next_cursor: str | None


class QueryResult(TypedDict):
    id: str
    results: list[Any]
    truncated: bool
    inputs: int


class Ref(TypedDict):
    id: str
    uri: str
    type: str
    subtype: str | None
    title: str | None
    tokens: int
    summary_line: str
    created_at: str


class RefsPage(TypedDict):
    refs: list[Ref]


class ImportResult(TypedDict):
    memories: int
    imported: int
    skipped: int
    bytes: int


class TokensResult(TypedDict):
    tokens: int
    method: str
    model: str | None
    encoding: str | None
    exact: bool
