"""The synchronous client, :class:`Cairn`.

GENERATED from ``_async_client.py`` by ``scripts/unasync.py``: do not edit; edit that file
and run ``python scripts/unasync.py``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Iterable, Mapping, Sequence
from typing import IO, Any, TypeVar

import httpx

from . import _core
from ._core import PutBody, Call, Config, mem_id, memory_path, params
from .errors import CairnConnectionError, CairnError
from .types import (
    JSON,
    GrepAcrossPage,
    GrepMatch,
    GrepResult,
    ImportResult,
    ListPage,
    Memory,
    MemoryGrep,
    PutResult,
    QueryResult,
    RefsPage,
    SearchPage,
    Slice,
    TokensResult,
)
from .uri import MemUri, parse_uri

T = TypeVar("T")
MemoryRef = str | Mapping[str, Any] | MemUri


class Cairn:
    """A client of a Cairn server.

    ``url`` defaults to ``$CAIRN_URL`` (else ``http://127.0.0.1:8077``) and ``api_key`` to
    ``$CAIRN_API_KEY`` (sent as ``Authorization: Bearer``). Idempotent calls (reads, deletes,
    token counts, compress/governor, imports of a re-sendable archive) are retried up to
    ``max_retries`` times with exponential backoff on 429/503 answers (honouring
    ``Retry-After``) and broken connections; a put only with ``retry_put=True`` and a body that
    can be sent again (bytes, str, a path, a seekable file). Errors raise
    :class:`~cairn_client.errors.CairnError` subclasses.
    """

    def __init__(
        self,
        url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        upload_timeout: float | None = 600.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        retry_put: bool = False,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.Client | None = None,
    ) -> None:
        self.config = Config.resolve(
            url,
            api_key,
            timeout=timeout,
            upload_timeout=upload_timeout,
            max_retries=max_retries,
            backoff=backoff,
            max_backoff=max_backoff,
            retry_put=retry_put,
            headers=dict(headers or {}),
        )
        self._owns_http = http_client is None
        self._http = http_client or httpx.Client(timeout=httpx.Timeout(timeout))
        self._headers = self.config.default_headers()

    @property
    def url(self) -> str:
        return self.config.url

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> Cairn:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ transport

    def _request(self, call: Call[Any]) -> httpx.Request:
        headers = dict(self._headers)
        headers.update(call.headers)
        content = call.content() if call.content is not None else None
        return self._http.build_request(
            call.method,
            self.config.url + call.path,
            params=call.params,
            json=call.json,
            content=content,
            headers=headers,
            timeout=self.config.timeout_for(call),
        )

    def _open(self, call: Call[Any]) -> httpx.Response:
        """Send ``call`` with retries; the answer is open (streamed) and successful."""
        attempt = 0
        while True:
            error: Exception
            try:
                response = self._http.send(self._request(call), stream=True)
            except httpx.TransportError as exc:
                error = exc
            else:
                if response.status_code < 400:
                    return response
                try:
                    body = response.read()
                except httpx.TransportError:
                    body = b""
                finally:
                    response.close()
                error = _core.error_for(response, body)
            delay = self.config.retry_delay(call, attempt, error)
            if delay is None:
                if isinstance(error, CairnError):
                    raise error
                raise _core.connection_error(error, self.config.url) from error
            _core._sync_sleep(delay)
            attempt += 1

    def _send(self, call: Call[T]) -> T:
        attempt = 0
        while True:
            try:
                response = self._open(call)
                try:
                    body = response.read()
                finally:
                    response.close()
            except httpx.TransportError as exc:
                # A connection broken while reading the answer.
                delay = self.config.retry_delay(call, attempt, exc)
                if delay is None:
                    raise _core.connection_error(exc, self.config.url) from exc
                _core._sync_sleep(delay)
                attempt += 1
                continue
            return call.parse(_core.decode(body))

    def _iter(self, call: Call[Any], chunk_size: int) -> Iterator[bytes]:
        response = self._open(call)
        try:
            for chunk in response.iter_bytes(chunk_size):
                yield chunk
        except httpx.TransportError as exc:
            raise _core.connection_error(exc, self.config.url) from exc
        finally:
            response.close()

    # ------------------------------------------------------------ storing

    def put(
        self,
        content: PutBody,
        *,
        type: str | None = None,
        subtype: str | None = None,
        mime: str | None = None,
        title: str | None = None,
        tags: Iterable[str] | None = None,
        thread: str | None = None,
        checkpoint: str | None = None,
        directory: str | None = None,
        ttl_seconds: int | None = None,
        pinned: bool | None = None,
    ) -> PutResult:
        """Store ``content`` (``POST /v1/memories``, raw body, fields as query parameters).

        ``bytes`` and ``str`` are sent as they are; a path (``pathlib.Path``), a binary file
        object or an iterable of chunks is streamed, never held whole in memory.
        The answer says ``deduplicated`` when the namespace already had this content."""
        body = _core._sync_prepare_body(content, mime)
        call = _core.put_call(
            body,
            type=type,
            subtype=subtype,
            mime=mime,
            title=title,
            tags=tags,
            thread=thread,
            checkpoint=checkpoint,
            directory=directory,
            ttl_seconds=ttl_seconds,
            pinned=pinned,
        )
        result: PutResult = self._send(call)
        return result

    def put_file(self, path: str | os.PathLike[str], **fields: Any) -> PutResult:
        """Store the file at ``path`` (streamed)."""
        import pathlib

        return self.put(pathlib.Path(path), **fields)

    def delete(self, memory: MemoryRef) -> None:
        """Delete a memory (``DELETE /v1/memories/{id}``)."""
        self._send(_core.delete_call(memory_path(memory)))

    # ------------------------------------------------------------ reading

    def get(self, memory: MemoryRef) -> Memory:
        """A memory's metadata and summary, without content."""
        result: Memory = self._send(_core.get_call(memory_path(memory)))
        return result

    def iter_content(
        self,
        memory: MemoryRef,
        *,
        chunk_size: int = 65536,
        byte_range: tuple[int, int | None] | None = None,
    ) -> Iterator[bytes]:
        """The whole content (or ``byte_range=(first, last)``, inclusive, ``last`` ``None`` for
        the end), streamed in chunks."""
        call = _core.get_call(memory_path(memory, "/content"))
        call.headers["Accept"] = "*/*"
        if byte_range is not None:
            first, last = byte_range
            call.headers["Range"] = f"bytes={first}-{'' if last is None else last}"
        return self._iter(call, chunk_size)

    def read_content(self, memory: MemoryRef) -> bytes:
        """The whole content as ``bytes`` (for small memories; see :meth:`iter_content`)."""
        parts = []
        for chunk in self.iter_content(memory):
            parts.append(chunk)
        return b"".join(parts)

    def download(self, memory: MemoryRef, dest: str | os.PathLike[str] | IO[bytes]) -> int:
        """Stream the content into a file path or a binary file object; the number of bytes."""
        return self._save(self.iter_content(memory), dest)

    def _save(self, chunks: Iterator[bytes], dest: str | os.PathLike[str] | IO[bytes]) -> int:
        total = 0
        if isinstance(dest, (str, os.PathLike)):
            with open(dest, "wb") as f:
                for chunk in chunks:
                    f.write(chunk)
                    total += len(chunk)
        else:
            for chunk in chunks:
                dest.write(chunk)
                total += len(chunk)
        return total

    def lines(
        self,
        memory: MemoryRef,
        start: int | None = None,
        end: int | None = None,
        *,
        max_tokens: int | None = None,
        model: str | None = None,
    ) -> Slice:
        """Lines ``start``–``end`` (1-based, inclusive; default the server's 200 lines).
        With ``max_tokens`` (≥ 16): the longest run of whole lines from ``start`` that fits."""
        q = params(start=start, end=end, max_tokens=max_tokens, model=model)
        result: Slice = self._send(_core.get_call(memory_path(memory, "/lines"), q))
        return result

    def byte_slice(self, memory: MemoryRef, offset: int = 0, length: int | None = None) -> Slice:
        """``length`` bytes (default and most 64 KiB) from ``offset``."""
        q = params(offset=offset, length=length)
        result: Slice = self._send(_core.get_call(memory_path(memory, "/bytes"), q))
        return result

    def chunk(self, memory: MemoryRef, n: int) -> Slice:
        """Chunk ``n`` (from 0) of about 32 KiB; the memory's ``chunks`` says how many."""
        result: Slice = self._send(_core.get_call(memory_path(memory, f"/chunks/{int(n)}")))
        return result

    def fetch(
        self, uri: str | MemUri, *, max_tokens: int | None = None, model: str | None = None
    ) -> Slice:
        """Resolve a ``mem://`` pointer (a range, a byte window, a budget, a previous ``next``)."""
        if isinstance(uri, str):
            parse_uri(uri)  # a clear local error for what is not a pointer
        q = _core.fetch_params(uri, max_tokens, model)
        result: Slice = self._send(_core.get_call("/v1/fetch", q))
        return result

    def iter_slices(
        self,
        memory: MemoryRef,
        start: int | None = None,
        end: int | None = None,
        *,
        max_tokens: int | None = None,
        model: str | None = None,
    ) -> Iterator[Slice]:
        """Page through a memory following each slice's ``next`` until the end (or line
        ``end``): line windows, or token-budgeted pages with ``max_tokens``. The texts put
        together give back the content. A ``mem://`` URI with a range or budget starts there."""
        if isinstance(memory, str) and memory.startswith("mem://") and not parse_uri(memory).is_whole:
            page = self.fetch(memory, max_tokens=max_tokens, model=model)
        else:
            page = self.lines(memory, start, end, max_tokens=max_tokens, model=model)
        while True:
            yield page
            nxt = page.get("next")
            if not nxt or (end is not None and page["end"] >= end):
                return
            pointer = parse_uri(nxt)
            if end is not None and pointer.start is not None:
                # `next` continues to the end of the memory; keep the caller's `end`.
                page = self.lines(
                    pointer.id, pointer.start, end, max_tokens=pointer.max_tokens, model=model
                )
            else:
                page = self.fetch(nxt)

    # ------------------------------------------------------------ grep, query, search

    def grep(
        self,
        memory: MemoryRef,
        pattern: str,
        *,
        fixed: bool | None = None,
        ignore_case: bool | None = None,
        context: int | None = None,
        max_matches: int | None = None,
        after: int | None = None,
    ) -> GrepResult:
        """``grep -n`` inside one memory; ``next`` continues as ``after``."""
        q = params(
            pattern=pattern,
            fixed=fixed,
            ignore_case=ignore_case,
            context=context,
            max_matches=max_matches,
            after=after,
        )
        result: GrepResult = self._send(_core.get_call(memory_path(memory, "/grep"), q))
        return result

    def iter_grep(
        self,
        memory: MemoryRef,
        pattern: str,
        *,
        fixed: bool | None = None,
        ignore_case: bool | None = None,
        context: int | None = None,
        max_matches: int | None = None,
        after: int | None = None,
    ) -> Iterator[GrepMatch]:
        """Every match in the memory, following ``next`` request by request."""
        while True:
            page = self.grep(
                memory,
                pattern,
                fixed=fixed,
                ignore_case=ignore_case,
                context=context,
                max_matches=max_matches,
                after=after,
            )
            for match in page["matches"]:
                yield match
            nxt = page.get("next")
            if nxt is None:
                return
            after = nxt

    def grep_across(
        self,
        pattern: str,
        *,
        fixed: bool | None = None,
        ignore_case: bool | None = None,
        context: int | None = None,
        max_matches: int | None = None,
        memories: int | None = None,
        cursor: str | None = None,
        type: str | None = None,
        subtype: str | None = None,
        tag: str | None = None,
        thread: str | None = None,
        checkpoint: str | None = None,
        directory: str | None = None,
        since: Any = None,
        until: Any = None,
    ) -> GrepAcrossPage:
        """grep across the namespace's memories (``GET /v1/grep``), newest first, one page."""
        q = params(
            pattern=pattern,
            fixed=fixed,
            ignore_case=ignore_case,
            context=context,
            max_matches=max_matches,
            memories=memories,
            cursor=cursor,
            **_core.filters(type, subtype, tag, thread, checkpoint, directory, since, until),
        )
        result: GrepAcrossPage = self._send(_core.get_call("/v1/grep", q))
        return result

    def iter_grep_across(self, pattern: str, **options: Any) -> Iterator[MemoryGrep]:
        """Every memory with matches (same options as :meth:`grep_across`), following
        ``next_cursor`` to the end. A memory whose matches span two requests comes twice."""
        cursor = options.pop("cursor", None)
        while True:
            page = self.grep_across(pattern, cursor=cursor, **options)
            for result in page["results"]:
                yield result
            cursor = page.get("next_cursor")
            if not cursor:
                return

    def query(self, memory: MemoryRef, jq: str) -> QueryResult:
        """Run a jq program over a JSON (or JSON lines) memory."""
        result: QueryResult = self._send(
            _core.get_call(memory_path(memory, "/query"), params(jq=jq))
        )
        return result

    def search(
        self,
        q: str,
        *,
        limit: int | None = None,
        wait_ms: int | None = None,
        type: str | None = None,
        subtype: str | None = None,
        tag: str | None = None,
        thread: str | None = None,
        checkpoint: str | None = None,
        directory: str | None = None,
        since: Any = None,
        until: Any = None,
    ) -> SearchPage:
        """Full-text search (BM25), best first; ``wait_ms`` reads your own recent puts."""
        query = params(
            q=q,
            limit=limit,
            wait_ms=wait_ms,
            **_core.filters(type, subtype, tag, thread, checkpoint, directory, since, until),
        )
        result: SearchPage = self._send(_core.get_call("/v1/search", query))
        return result

    def list_memories(
        self,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        type: str | None = None,
        subtype: str | None = None,
        tag: str | None = None,
        thread: str | None = None,
        checkpoint: str | None = None,
        directory: str | None = None,
        since: Any = None,
        until: Any = None,
    ) -> ListPage:
        """One page of memories, newest first (``next_cursor`` continues)."""
        q = params(
            limit=limit,
            cursor=cursor,
            **_core.filters(type, subtype, tag, thread, checkpoint, directory, since, until),
        )
        result: ListPage = self._send(_core.get_call("/v1/memories", q))
        return result

    def iter_memories(self, *, page_size: int | None = None, **filters: Any) -> Iterator[Memory]:
        """Every memory matching the filters of :meth:`list_memories`, newest first,
        following ``next_cursor`` to the end."""
        cursor = filters.pop("cursor", None)
        while True:
            page = self.list_memories(limit=page_size, cursor=cursor, **filters)
            for memory in page["memories"]:
                yield memory
            cursor = page.get("next_cursor")
            if not cursor:
                return

    def refs(
        self,
        *,
        thread: str | None = None,
        checkpoint: str | None = None,
        directory: str | None = None,
        limit: int | None = None,
    ) -> RefsPage:
        """The memories linked to exactly one of ``thread``, ``checkpoint``, ``directory``."""
        q = params(thread=thread, checkpoint=checkpoint, directory=directory, limit=limit)
        result: RefsPage = self._send(_core.get_call("/v1/refs", q))
        return result

    # ------------------------------------------------------------ context management

    def compress(
        self,
        messages: Sequence[Mapping[str, Any]],
        strategy: str,
        *,
        model: str | None = None,
        system: Any = None,
        format: str | None = None,
        threshold_chars: int | None = None,
        summary_chars: int | None = None,
        keep_recent: int | None = None,
        preserve_prefix: int | None = None,
        leave_tools: Sequence[str] | None = None,
        leave_roles: Sequence[str] | None = None,
        thread: str | None = None,
        **extra: Any,
    ) -> JSON:
        """Compress an OpenAI chat or Anthropic Messages list (``POST /v1/compress``);
        what is taken out is stored first and pointed to. Retried like a read: its stores
        are content-addressed, so sending it twice stores nothing new."""
        doc = dict(
            messages=list(messages),
            strategy=strategy,
            model=model,
            system=system,
            format=format,
            threshold_chars=threshold_chars,
            summary_chars=summary_chars,
            keep_recent=keep_recent,
            preserve_prefix=preserve_prefix,
            leave_tools=list(leave_tools) if leave_tools is not None else None,
            leave_roles=list(leave_roles) if leave_roles is not None else None,
            thread=thread,
            **extra,
        )
        result: JSON = self._send(_core.post_json("/v1/compress", doc, idempotent=True))
        return result

    def governor(
        self,
        messages: Sequence[Mapping[str, Any]] | None = None,
        *,
        tokens: int | None = None,
        model: str | None = None,
        system: Any = None,
        apply: bool | None = None,
        strategy: str | None = None,
        **extra: Any,
    ) -> JSON:
        """The context's tier and advice (``POST /v1/governor``) from ``messages`` or ``tokens``;
        ``apply=True`` also returns the compressed messages."""
        doc = dict(
            messages=list(messages) if messages is not None else None,
            tokens=tokens,
            model=model,
            system=system,
            apply=apply,
            strategy=strategy,
            **extra,
        )
        result: JSON = self._send(_core.post_json("/v1/governor", doc, idempotent=True))
        return result

    def tokens(
        self,
        text: str | None = None,
        *,
        messages: Sequence[Mapping[str, Any]] | None = None,
        system: Any = None,
        model: str | None = None,
    ) -> TokensResult:
        """Count the tokens of ``text`` or of a message list (``POST /v1/tokens``)."""
        doc = dict(
            text=text,
            messages=list(messages) if messages is not None else None,
            system=system,
            model=model,
        )
        result: TokensResult = self._send(_core.post_json("/v1/tokens", doc, idempotent=True))
        return result

    def usage(
        self,
        model: str,
        input_tokens: int,
        output_tokens: int,
        *,
        estimated_input_tokens: int | None = None,
    ) -> JSON:
        """Report a provider's usage (``POST /v1/usage``; never retried: it adds to the day).
        Raises :class:`~cairn_client.errors.BudgetExceededError` once the budget is spent."""
        doc = dict(
            model=model,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            estimated_input_tokens=estimated_input_tokens,
        )
        result: JSON = self._send(_core.post_json("/v1/usage", doc, idempotent=False))
        return result

    def stats(self) -> JSON:
        """The namespace in figures (``GET /v1/stats``)."""
        result: JSON = self._send(_core.get_call("/v1/stats"))
        return result

    def health(self) -> JSON:
        """``GET /healthz``."""
        result: JSON = self._send(_core.get_call("/healthz"))
        return result

    # ------------------------------------------------------------ export / import

    def iter_export(self, *, chunk_size: int = 1 << 16) -> Iterator[bytes]:
        """The namespace as one tar archive (``GET /v1/export``), streamed."""
        call = _core.get_call("/v1/export")
        call.headers["Accept"] = "*/*"
        return self._iter(call, chunk_size)

    def export(self, dest: str | os.PathLike[str] | IO[bytes]) -> int:
        """Stream the namespace's archive into a path or binary file; the number of bytes."""
        return self._save(self.iter_export(), dest)

    def import_archive(self, archive: PutBody) -> ImportResult:
        """Restore an archive made by :meth:`export` (a path, file, bytes or chunk iterator,
        streamed). Importing twice changes nothing."""
        if isinstance(archive, str) and not isinstance(archive, os.PathLike):
            import pathlib

            archive = pathlib.Path(archive)
        body = _core._sync_prepare_body(archive, None)
        result: ImportResult = self._send(_core.import_call(body))
        return result


__all__ = ["Cairn", "CairnConnectionError", "mem_id"]
