"""Exceptions: every error answer of Cairn (``{"error": {"code", "message", ...}}``)
becomes a :class:`CairnError` (or a subclass chosen by its ``code``)."""

from __future__ import annotations

import json
from typing import Any

__all__ = [
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
    "error_from_response",
]


class CairnError(Exception):
    """An error answer from Cairn.

    ``code`` is Cairn's error code (``not_found``, ``invalid_field``, …; ``http_<status>``
    when the answer carried no Cairn error body), ``message`` its message, ``status`` the
    HTTP status, ``details`` every other field of the error object (``field``, ``limit``,
    ``path``, ``budget``, ``resets_at``, …), ``retry_after`` the ``Retry-After`` seconds if any.
    """

    def __init__(
        self,
        message: str,
        *,
        code: str = "error",
        status: int | None = None,
        details: dict[str, Any] | None = None,
        request_id: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        self.details: dict[str, Any] = dict(details or {})
        self.request_id = request_id
        self.retry_after = retry_after

    @property
    def field(self) -> str | None:
        """The offending field or parameter (``invalid_field``/``invalid_request``), if named."""
        value = self.details.get("field")
        return value if isinstance(value, str) else None

    def __getitem__(self, key: str) -> Any:
        return self.details[key]

    def __str__(self) -> str:
        status = f"{self.status} " if self.status is not None else ""
        return f"{status}{self.code}: {self.message}"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(code={self.code!r}, status={self.status!r}, "
            f"message={self.message!r}, details={self.details!r})"
        )


class CairnConnectionError(CairnError):
    """The server could not be reached, or the connection broke (after any retries)."""


class InvalidRequestError(CairnError):
    """400: ``invalid_field``, ``invalid_request``, ``invalid_range``, ``invalid_id``, ``invalid_uri``,
    ``invalid_query``, ``invalid_messages``, ``invalid_json``, ``bad_body``, ``slice_too_large``…"""


class NotFoundError(CairnError):
    """404 ``not_found``."""


class AmbiguousIdError(CairnError):
    """409 ``ambiguous_id``: an id prefix matching several memories."""


class UnauthorizedError(CairnError):
    """401 ``unauthorized``: a missing or unknown API key."""


class ForbiddenError(CairnError):
    """403 ``forbidden``."""


class PayloadTooLargeError(CairnError):
    """413 ``payload_too_large``."""


class RangeNotSatisfiableError(CairnError):
    """416 ``range_not_satisfiable``."""


class BudgetExceededError(CairnError):
    """429 ``budget_exceeded``: the namespace's daily token or cost budget is spent
    (``details``: ``budget``, ``limit``, ``spent``, ``resets_at``)."""


class RateLimitedError(CairnError):
    """429 other than a budget."""


class QueryError(CairnError):
    """422 from a jq query: ``not_json``, ``jq_error``, ``query_limit``, ``query_too_large``."""


class InvalidArchiveError(CairnError):
    """422 ``invalid_archive`` from an import (``details['item']`` names the entry)."""


class IntegrityError(CairnError):
    """500 ``integrity_error``: stored content failed its checksum (``details['id']``)."""


class UnavailableError(CairnError):
    """503 ``unavailable``."""


class InsufficientStorageError(CairnError):
    """507 ``insufficient_storage``."""


_BY_CODE: dict[str, type[CairnError]] = {
    "not_found": NotFoundError,
    "ambiguous_id": AmbiguousIdError,
    "unauthorized": UnauthorizedError,
    "forbidden": ForbiddenError,
    "payload_too_large": PayloadTooLargeError,
    "range_not_satisfiable": RangeNotSatisfiableError,
    "budget_exceeded": BudgetExceededError,
    "not_json": QueryError,
    "jq_error": QueryError,
    "query_limit": QueryError,
    "query_too_large": QueryError,
    "invalid_archive": InvalidArchiveError,
    "integrity_error": IntegrityError,
    "unavailable": UnavailableError,
    "insufficient_storage": InsufficientStorageError,
}

_BY_STATUS: dict[int, type[CairnError]] = {
    400: InvalidRequestError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    409: AmbiguousIdError,
    413: PayloadTooLargeError,
    416: RangeNotSatisfiableError,
    429: RateLimitedError,
    503: UnavailableError,
    507: InsufficientStorageError,
}


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    from email.utils import parsedate_to_datetime
    import datetime as _dt

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.timezone.utc)
    return max(0.0, (when - _dt.datetime.now(_dt.timezone.utc)).total_seconds())


def error_from_response(
    status: int, body: bytes, headers: dict[str, str] | None = None
) -> CairnError:
    """Build the exception for an error answer (``status`` ≥ 400)."""
    headers = {k.lower(): v for k, v in (headers or {}).items()}
    code = f"http_{status}"
    message = ""
    details: dict[str, Any] = {}
    try:
        doc = json.loads(body) if body else None
    except (ValueError, UnicodeDecodeError):
        doc = None
    err = doc.get("error") if isinstance(doc, dict) else None
    if isinstance(err, dict):
        code = str(err.get("code", code))
        message = str(err.get("message", ""))
        details = {k: v for k, v in err.items() if k not in ("code", "message")}
    elif isinstance(err, str):
        message = err
    else:
        message = body[:500].decode("utf-8", "replace").strip()
    if not message:
        message = f"HTTP {status}"
    cls = _BY_CODE.get(code)
    if cls is None:
        cls = InvalidRequestError if code.startswith("invalid_") or code in (
            "bad_body", "slice_too_large") else _BY_STATUS.get(status, CairnError)
    return cls(
        message,
        code=code,
        status=status,
        details=details,
        request_id=headers.get("x-request-id"),
        retry_after=parse_retry_after(headers.get("retry-after")),
    )
