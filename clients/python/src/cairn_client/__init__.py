"""Cairn client: a typed sync (:class:`Cairn`) and async (:class:`AsyncCairn`) client of the
Cairn memory store's HTTP API, on httpx.

>>> from cairn_client import Cairn
>>> with Cairn() as cairn:                      # $CAIRN_URL, $CAIRN_API_KEY
...     m = cairn.put(big_log, type="TOOL_OUTPUT", subtype="pytest")
...     cairn.lines(m["id"], 400, 520)["text"]
"""

from __future__ import annotations

__version__ = "0.1.0"

from ._async_client import AsyncCairn
from ._core import DEFAULT_URL, AsyncPutBody, PutBody
from ._sync_client import Cairn
from .errors import (
    AmbiguousIdError,
    BudgetExceededError,
    CairnConnectionError,
    CairnError,
    ForbiddenError,
    InsufficientStorageError,
    IntegrityError,
    InvalidArchiveError,
    InvalidRequestError,
    NotFoundError,
    PayloadTooLargeError,
    QueryError,
    RangeNotSatisfiableError,
    RateLimitedError,
    UnauthorizedError,
    UnavailableError,
)
from .types import (
    GrepAcrossPage,
    GrepMatch,
    GrepResult,
    ImportResult,
    ListPage,
    Memory,
    MemoryGrep,
    PutResult,
    QueryResult,
    Ref,
    RefsPage,
    SearchHit,
    SearchPage,
    SearchResult,
    Slice,
    TokensResult,
)
from .uri import InvalidUriError, MemUri, parse_uri

__all__ = [
    "__version__",
    "Cairn",
    "AsyncCairn",
    "DEFAULT_URL",
    "PutBody",
    "AsyncPutBody",
    "MemUri",
    "parse_uri",
    "InvalidUriError",
    "CairnError",
    "CairnConnectionError",
    "InvalidRequestError",
    "NotFoundError",
    "AmbiguousIdError",
    "UnauthorizedError",
    "ForbiddenError",
    "PayloadTooLargeError",
    "RangeNotSatisfiableError",
    "BudgetExceededError",
    "RateLimitedError",
    "QueryError",
    "InvalidArchiveError",
    "IntegrityError",
    "UnavailableError",
    "InsufficientStorageError",
    "Memory",
    "PutResult",
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
]
