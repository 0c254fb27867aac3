"""``mem://`` pointers: parse and build them.

Forms (README "API overview"): ``mem://<id>``, ``mem://<id>#L<a>-<b>``, ``mem://<id>#L<a>-``,
``mem://<id>?offset=<n>&len=<n>``, each optionally with ``max_tokens=<n>`` (and ``model=``)
in the query.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode

__all__ = ["MemUri", "parse_uri", "InvalidUriError"]

_ID = re.compile(r"^[0-9a-fA-F]{12,64}$")
_LINES = re.compile(r"^L(\d+)-(\d*)$")


class InvalidUriError(ValueError):
    """Not a ``mem://`` pointer this client understands."""


@dataclass(frozen=True)
class MemUri:
    """A parsed ``mem://`` pointer."""

    id: str
    start: int | None = None
    end: int | None = None
    offset: int | None = None
    length: int | None = None
    max_tokens: int | None = None
    model: str | None = None

    @property
    def is_whole(self) -> bool:
        """True for a bare ``mem://<id>`` (no range and no budget)."""
        return (
            self.start is None
            and self.offset is None
            and self.length is None
            and self.max_tokens is None
        )

    def __str__(self) -> str:
        query: list[tuple[str, str]] = []
        if self.offset is not None:
            query.append(("offset", str(self.offset)))
        if self.length is not None:
            query.append(("len", str(self.length)))
        if self.max_tokens is not None:
            query.append(("max_tokens", str(self.max_tokens)))
        if self.model is not None:
            query.append(("model", self.model))
        out = f"mem://{self.id}"
        if query:
            out += "?" + urlencode(query)
        if self.start is not None:
            out += f"#L{self.start}-" + ("" if self.end is None else str(self.end))
        return out


def parse_uri(uri: str) -> MemUri:
    """Parse ``uri``; raises :class:`InvalidUriError` when it is not a ``mem://`` pointer."""
    if not isinstance(uri, str) or not uri.startswith("mem://"):
        raise InvalidUriError(f"not a mem:// URI: {uri!r}")
    rest = uri[len("mem://"):]
    fragment = ""
    if "#" in rest:
        rest, fragment = rest.split("#", 1)
    query = ""
    if "?" in rest:
        rest, query = rest.split("?", 1)
    ident = rest.rstrip("/")
    if not _ID.match(ident):
        raise InvalidUriError(f"invalid memory id in {uri!r}: 12-64 hex characters expected")
    start: int | None = None
    end: int | None = None
    if fragment:
        m = _LINES.match(fragment)
        if not m:
            raise InvalidUriError(f"invalid line range #{fragment} in {uri!r}")
        start = int(m.group(1))
        end = int(m.group(2)) if m.group(2) else None
    offset: int | None = None
    length: int | None = None
    max_tokens: int | None = None
    model: str | None = None
    for key, value in parse_qsl(query, keep_blank_values=True):
        try:
            if key == "offset":
                offset = int(value)
            elif key in ("len", "length"):
                length = int(value)
            elif key == "max_tokens":
                max_tokens = int(value)
            elif key == "model":
                model = value
            else:
                raise InvalidUriError(f"unknown parameter {key!r} in {uri!r}")
        except ValueError as exc:
            if isinstance(exc, InvalidUriError):
                raise
            raise InvalidUriError(f"invalid {key}={value!r} in {uri!r}") from None
    return MemUri(ident.lower(), start, end, offset, length, max_tokens, model)
