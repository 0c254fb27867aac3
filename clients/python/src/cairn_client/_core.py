"""The typed core shared by :class:`~cairn_client.Cairn` and :class:`~cairn_client.AsyncCairn`:
configuration, request descriptions (:class:`Call`), the retry policy, bodies and answers.

Neither client builds a URL or parses an answer itself; each only runs the :class:`Call`
objects built here with its own transport (``httpx.Client`` or ``httpx.AsyncClient``).
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import random
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, Any, Generic, TypeVar, Union, cast

import httpx

from .errors import CairnConnectionError, CairnError, error_from_response
from .uri import MemUri, parse_uri

__all__ = ["Config", "Call", "DEFAULT_URL", "PutBody", "AsyncPutBody"]

T = TypeVar("T")

DEFAULT_URL = "http://127.0.0.1:8077"
UPLOAD_CHUNK = 1 << 20  # bytes read from a file per request-body chunk

#: What :meth:`Cairn.put` accepts as content: ``bytes``, ``str`` (sent as UTF-8), a file path
#: (``os.PathLike``; a plain ``str`` is content, not a path), a binary file object, or an
#: iterable of ``bytes``/``str`` chunks — everything but ``bytes``/``str`` is streamed.
PutBody = Union[bytes, bytearray, memoryview, str, "os.PathLike[str]", IO[bytes], Iterable[bytes], Iterable[str]]
#: :class:`AsyncCairn` also takes async iterables of chunks.
AsyncPutBody = Union[PutBody, AsyncIterable[bytes], AsyncIterable[str]]

RETRY_STATUSES = frozenset({429, 503})
RETRY_EXCEPTIONS: tuple[type[Exception], ...] = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.ReadError,
    httpx.WriteError,
    httpx.RemoteProtocolError,
    httpx.PoolTimeout,
)


@dataclass(frozen=True)
class Config:
    """Client settings. ``url`` defaults to ``$CAIRN_URL`` then ``http://127.0.0.1:8077``,
    ``api_key`` to ``$CAIRN_API_KEY`` (sent as ``Authorization: Bearer <key>``)."""

    url: str = DEFAULT_URL
    api_key: str | None = None
    timeout: float = 60.0
    upload_timeout: float | None = 600.0
    max_retries: int = 3
    backoff: float = 0.5
    max_backoff: float = 30.0
    retry_put: bool = False
    headers: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def resolve(
        cls,
        url: str | None = None,
        api_key: str | None = None,
        **kwargs: Any,
    ) -> Config:
        url = url or os.environ.get("CAIRN_URL") or DEFAULT_URL
        if api_key is None:
            api_key = os.environ.get("CAIRN_API_KEY") or None
        return cls(url=url.rstrip("/"), api_key=api_key, **kwargs)

    def default_headers(self) -> dict[str, str]:
        from . import __version__

        headers = {"User-Agent": f"cairn-client-python/{__version__}", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        headers.update(self.headers)
        return headers

    def timeout_for(self, call: Call[Any]) -> httpx.Timeout:
        if call.upload:
            return httpx.Timeout(self.timeout, read=self.upload_timeout, write=self.upload_timeout)
        return httpx.Timeout(self.timeout)

    def retry_delay(self, call: Call[Any], attempt: int, error: Exception) -> float | None:
        """Seconds to wait before retrying ``call`` after ``error`` on ``attempt`` (0-based),
        or ``None`` for no retry. Only idempotent calls are retried (a put only with
        ``retry_put=True`` and a body that can be sent again), on 429/503 answers
        (``Retry-After`` honoured; never a spent budget) and broken connections."""
        if attempt >= self.max_retries:
            return None
        if not (call.idempotent or (call.upload and self.retry_put)):
            return None
        if call.upload and not call.replayable:
            return None
        delay: float = min(self.max_backoff, self.backoff * float(2**attempt)) * (0.5 + random.random() / 2)
        if isinstance(error, CairnError) and not isinstance(error, CairnConnectionError):
            if error.status not in RETRY_STATUSES or error.code == "budget_exceeded":
                return None
            if error.retry_after is not None:
                if error.retry_after > self.max_backoff:
                    return None
                delay = max(delay, error.retry_after)
            return delay
        if isinstance(error, RETRY_EXCEPTIONS):
            return delay
        return None


@dataclass
class Call(Generic[T]):
    """One request: what to send and how to read the answer."""

    method: str
    path: str
    parse: Callable[[Any], T]
    params: list[tuple[str, str | int | float | bool | None]] = field(default_factory=list)
    json: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    idempotent: bool = True
    upload: bool = False
    replayable: bool = True
    content: Any = None


def _identity(x: Any) -> Any:
    return x


def _none(_: Any) -> None:
    return None


def _str(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def params(**kw: Any) -> list[tuple[str, str | int | float | bool | None]]:
    """Query parameters without the ``None`` ones; lists are comma-joined (``tags``),
    booleans are ``true``/``false``."""
    out: list[tuple[str, str | int | float | bool | None]] = []
    for key, value in kw.items():
        if value is None:
            continue
        if isinstance(value, (list, tuple, set, frozenset)):
            value = ",".join(str(v) for v in value)
        out.append((key, _str(value)))
    return out


def mem_id(memory: str | Mapping[str, Any] | MemUri) -> str:
    """An id from an id, an id prefix, a ``mem://`` URI, a parsed URI or a memory answer."""
    if isinstance(memory, MemUri):
        return memory.id
    if isinstance(memory, Mapping):
        return str(memory["id"])
    if memory.startswith("mem://"):
        return parse_uri(memory).id
    return memory


def seconds(value: Any) -> str | None:
    """``since``/``until``: RFC 3339 strings, datetimes or Unix seconds."""
    if value is None:
        return None
    if hasattr(value, "isoformat"):
        return cast(str, value.isoformat())
    return str(value)


def filters(
    type: str | None = None,
    subtype: str | None = None,
    tag: str | None = None,
    thread: str | None = None,
    checkpoint: str | None = None,
    directory: str | None = None,
    since: Any = None,
    until: Any = None,
) -> dict[str, Any]:
    return dict(
        type=type,
        subtype=subtype,
        tag=tag,
        thread=thread,
        checkpoint=checkpoint,
        directory=directory,
        since=seconds(since),
        until=seconds(until),
    )


def error_for(response: httpx.Response, body: bytes) -> CairnError:
    return error_from_response(response.status_code, body, dict(response.headers))


def decode(body: bytes) -> Any:
    if not body:
        return None
    return json.loads(body)


def connection_error(exc: Exception, url: str) -> CairnConnectionError:
    return CairnConnectionError(
        f"cannot reach Cairn at {url}: {type(exc).__name__}: {exc}", code="connection_error"
    )


# ---------------------------------------------------------------- request bodies


def _content_type(body: Any, mime: str | None) -> str:
    # A raw body with Content-Type application/json would be read as a JSON put body
    # ({content, ...}), so JSON content goes as octet-stream with `mime` in the query.
    if mime and not mime.split(";")[0].strip().lower().endswith("json"):
        return mime
    if isinstance(body, str):
        return "text/plain; charset=utf-8"
    return "application/octet-stream"


def _file_length(f: Any) -> int | None:
    try:
        pos = int(f.tell())
        size = os.fstat(f.fileno()).st_size
        return max(0, size - pos)
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None


def _read_chunks(f: IO[bytes], chunk: int = UPLOAD_CHUNK) -> Iterator[bytes]:
    while True:
        data = f.read(chunk)
        if not data:
            return
        yield data


def _path_chunks(path: os.PathLike[str]) -> Iterator[bytes]:
    with open(path, "rb") as f:
        yield from _read_chunks(f)


def _encode(chunks: Iterable[bytes | str]) -> Iterator[bytes]:
    for chunk in chunks:
        yield chunk.encode("utf-8") if isinstance(chunk, str) else bytes(chunk) if not isinstance(chunk, bytes) else chunk


async def _aencode(chunks: AsyncIterable[bytes | str]) -> AsyncIterator[bytes]:
    async for chunk in chunks:
        yield chunk.encode("utf-8") if isinstance(chunk, str) else bytes(chunk) if not isinstance(chunk, bytes) else chunk


async def _athread_chunks(make: Callable[[], Iterator[bytes]]) -> AsyncIterator[bytes]:
    """Drive a blocking chunk iterator (a file) from the event loop, one read per thread hop."""
    it = make()
    sentinel = object()
    while True:
        chunk = await asyncio.to_thread(next, it, sentinel)
        if chunk is sentinel:
            return
        yield cast(bytes, chunk)


@dataclass
class Body:
    """A prepared request body: ``make()`` gives fresh content for each attempt."""

    make: Callable[[], Any]
    headers: dict[str, str]
    replayable: bool


def _prepare(body: Any, mime: str | None, *, is_async: bool) -> Body:
    headers = {"Content-Type": _content_type(body, mime)}
    if isinstance(body, (bytes, bytearray, memoryview)):
        data = bytes(body)
        return Body(lambda: data, headers, True)
    if isinstance(body, str):
        encoded = body.encode("utf-8")
        return Body(lambda: encoded, headers, True)
    if isinstance(body, os.PathLike):
        path = body
        headers["Content-Length"] = str(os.stat(path).st_size)
        if is_async:
            return Body(lambda: _athread_chunks(lambda: _path_chunks(path)), headers, True)
        return Body(lambda: _path_chunks(path), headers, True)
    if hasattr(body, "read"):
        f = cast(IO[bytes], body)
        length = _file_length(f)
        if length is not None:
            headers["Content-Length"] = str(length)
        try:
            start: int | None = f.tell() if f.seekable() else None
        except (OSError, ValueError, AttributeError):
            start = None

        def rewind() -> None:
            if start is not None:
                f.seek(start)

        def make_sync() -> Iterator[bytes]:
            rewind()
            return _encode(_read_chunks(f))

        if is_async:
            return Body(lambda: _athread_chunks(make_sync), headers, start is not None)
        return Body(make_sync, headers, start is not None)
    if isinstance(body, AsyncIterable):
        if not is_async:
            raise TypeError("an async iterable body needs AsyncCairn")
        once = _Once(lambda: _aencode(cast(AsyncIterable[Union[bytes, str]], body)))
        return Body(once, headers, False)
    if isinstance(body, Iterable) and not isinstance(body, Mapping):
        it = cast(Iterable[Union[bytes, str]], body)
        if is_async:
            async def agen() -> AsyncIterator[bytes]:
                for chunk in _encode(it):
                    yield chunk

            return Body(_Once(agen), headers, False)
        return Body(_Once(lambda: _encode(it)), headers, False)
    raise TypeError(f"cannot send a {type(body).__name__} as content")


class _Once:
    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self._used = False

    def __call__(self) -> Any:
        if self._used:
            raise RuntimeError("a streamed iterator body cannot be sent twice")
        self._used = True
        return self._make()


def _sync_prepare_body(body: Any, mime: str | None) -> Body:
    return _prepare(body, mime, is_async=False)


def _async_prepare_body(body: Any, mime: str | None) -> Body:
    return _prepare(body, mime, is_async=True)


def _sync_sleep(delay: float) -> None:
    time.sleep(delay)


async def _async_sleep(delay: float) -> None:
    await asyncio.sleep(delay)


# ---------------------------------------------------------------- calls


def put_call(
    body: Body,
    *,
    type: str | None,
    subtype: str | None,
    mime: str | None,
    title: str | None,
    tags: Iterable[str] | None,
    thread: str | None,
    checkpoint: str | None,
    directory: str | None,
    ttl_seconds: int | None,
    pinned: bool | None,
) -> Call[Any]:
    q = params(
        type=type,
        subtype=subtype,
        mime=mime,
        title=title,
        tags=[tags] if isinstance(tags, str) else list(tags) if tags is not None else None,
        thread=thread,
        checkpoint=checkpoint,
        directory=directory,
        ttl_seconds=ttl_seconds,
        pinned=pinned,
    )
    return Call(
        "POST",
        "/v1/memories",
        _identity,
        params=q,
        headers=dict(body.headers),
        idempotent=False,
        upload=True,
        replayable=body.replayable,
        content=body.make,
    )


def import_call(body: Body) -> Call[Any]:
    headers = dict(body.headers)
    headers["Content-Type"] = "application/x-tar"
    # Importing twice changes nothing (README), so an import whose archive can be sent
    # again is retried like any idempotent call.
    return Call(
        "POST",
        "/v1/import",
        _identity,
        headers=headers,
        idempotent=body.replayable,
        upload=True,
        replayable=body.replayable,
        content=body.make,
    )


def get_call(path: str, q: list[tuple[str, str | int | float | bool | None]] | None = None) -> Call[Any]:
    return Call("GET", path, _identity, params=q or [])


def post_json(path: str, doc: Mapping[str, Any], *, idempotent: bool) -> Call[Any]:
    return Call(
        "POST",
        path,
        _identity,
        json={k: v for k, v in doc.items() if v is not None},
        idempotent=idempotent,
    )


def delete_call(path: str) -> Call[None]:
    return Call("DELETE", path, _none)


def memory_path(memory: str | Mapping[str, Any] | MemUri, suffix: str = "") -> str:
    from urllib.parse import quote

    return f"/v1/memories/{quote(mem_id(memory), safe='')}{suffix}"


def fetch_params(
    uri: str | MemUri, max_tokens: int | None, model: str | None
) -> list[tuple[str, str | int | float | bool | None]]:
    return params(uri=str(uri), max_tokens=max_tokens, model=model)
