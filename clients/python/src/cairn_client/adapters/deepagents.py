"""deepagents adapter (``pip install 'cairn-client[deepagents]'``): :class:`CairnBackend`, a
``BackendProtocol`` that keeps the agent's files — evicted tool results
(``/large_tool_results/…``) included — in Cairn, so ``read_file`` pages, ``grep``, ``glob`` and
``ls`` work against Cairn and the files survive a restart and are shared by every worker
using the same Cairn namespace and ``root``.

.. code-block:: python

    from deepagents import create_deep_agent
    from cairn_client import Cairn
    from cairn_client.adapters.deepagents import CairnBackend

    agent = create_deep_agent(model, tools=[run_tests], backend=CairnBackend(Cairn(), root="team-a"))

How files map to memories: a file's content is one memory (type ``TOOL_OUTPUT`` for evicted
tool results, else ``FILE``; content-addressed, so equal contents are stored once). Each write
also stores a small *entry* memory (type ``FILE_ENTRY``, ``directory`` = the path, ``subtype`` =
the content's id, tag ``deepagents:<root>``); the newest entry of a path is the file. Reads are
Cairn line slices (only the requested lines travel), grep is Cairn's grep on each file.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from deepagents.backends.protocol import (
    BackendProtocol,
    DeleteResult,
    EditResult,
    FileData,
    FileDownloadResponse,
    FileInfo,
    FileUploadResponse,
    GlobResult,
    GrepMatch,
    GrepResult,
    LsResult,
    ReadResult,
    WriteResult,
)
from deepagents.backends.utils import (
    InvalidGlobPatternError,
    _filter_files_by_path,
    _get_backend_read_file_type,
    _glob_search_files,
    _normalize_path,
    compile_grep_include_glob,
    _relative_to_root,
    normalize_read_bounds,
    perform_string_replacement,
)

from .._sync_client import Cairn
from ..errors import CairnError, NotFoundError

__all__ = ["CairnBackend"]

ENTRY_TYPE = "FILE_ENTRY"


@dataclass
class _File:
    path: str
    content_id: str
    modified_at: str
    entries: list[str] = field(default_factory=list)


class CairnBackend(BackendProtocol):
    """deepagents files in Cairn. ``root`` separates independent file trees in one namespace
    (default ``"default"``); ``thread`` links every stored memory to a Cairn thread."""

    def __init__(self, client: Cairn | None = None, *, root: str = "default",
                 thread: str | None = None) -> None:
        self.client = client or Cairn()
        self.root = root
        self.tag = f"deepagents:{root}"
        self.thread = thread

    # ------------------------------------------------------------ index

    def _files(self) -> dict[str, _File]:
        files: dict[str, _File] = {}
        for m in self.client.iter_memories(type=ENTRY_TYPE, tag=self.tag, page_size=200):
            path, cid = m["directory"], m["subtype"]
            if not path or not cid:
                continue
            f = files.get(path)
            if f is None:  # newest first: the first entry of a path is the file
                files[path] = _File(path, cid, m["created_at"], [m["id"]])
            else:
                f.entries.append(m["id"])
        return {p: f for p, f in files.items() if f.content_id != "-"}

    def _file(self, path: str) -> _File | None:
        page = self.client.list_memories(type=ENTRY_TYPE, tag=self.tag, directory=path, limit=1)
        if not page["memories"]:
            return None
        m = page["memories"][0]
        if not m["subtype"] or m["subtype"] == "-":
            return None
        return _File(path, m["subtype"], m["created_at"], [m["id"]])

    def _store(self, path: str, content: bytes | str) -> str:
        kind = "TOOL_OUTPUT" if path.startswith("/large_tool_results/") else "FILE"
        put = self.client.put(content, type=kind, title=path, directory=path, tags=[self.tag],
                              thread=self.thread)
        self._entry(path, put["id"], put["bytes"])
        return put["id"]

    def _entry(self, path: str, content_id: str, size: int) -> None:
        doc = json.dumps({"path": path, "id": content_id, "bytes": size,
                          "written_at": time.time_ns(), "nonce": uuid.uuid4().hex})
        self.client.put(doc, type=ENTRY_TYPE, subtype=content_id, directory=path, title=path,
                        tags=[self.tag], thread=self.thread, mime="application/json")

    def _bytes(self, f: _File) -> bytes:
        return self.client.read_content(f.content_id)

    # ------------------------------------------------------------ BackendProtocol

    def ls(self, path: str) -> LsResult:
        base = path if path.endswith("/") else path + "/"
        infos: list[FileInfo] = []
        subdirs: set[str] = set()
        for p, f in self._files().items():
            if not p.startswith(base):
                continue
            rel = p[len(base):]
            if "/" in rel:
                subdirs.add(base + rel.split("/")[0] + "/")
                continue
            infos.append({"path": p, "is_dir": False, "modified_at": f.modified_at})
        infos.extend(FileInfo(path=d, is_dir=True, size=0, modified_at="") for d in sorted(subdirs))
        infos.sort(key=lambda x: x.get("path", ""))
        return LsResult(entries=infos)

    def read(self, file_path: str, offset: int = 0, limit: int = 2000) -> ReadResult:
        try:
            f = self._file(file_path)
            if f is None:
                return ReadResult(error=f"File '{file_path}' not found")
            if _get_backend_read_file_type(file_path) != "text":
                return ReadResult(file_data=_file_data(self._bytes(f)))
            offset, limit = normalize_read_bounds(offset, limit)
            meta = self.client.get(f.content_id)
            total = meta["lines"]
            if meta["bytes"] == 0:
                return ReadResult(file_data=FileData(content="", encoding="utf-8"))
            if limit == 0:
                return ReadResult(file_data=FileData(content="", encoding="utf-8"),
                                  no_lines_requested=True)
            if offset >= total:
                return ReadResult(error=f"Line offset {offset} exceeds file length ({total} lines)")
            end = min(offset + limit, total)
            parts: list[str] = []
            last = offset
            for s in self.client.iter_slices(f.content_id, offset + 1, end):
                if s.get("text_base64") is not None or (s["truncated"] and s["end"] >= end):
                    # bytes that are not UTF-8, or a line over the slice cap: slice locally
                    return _slice_locally(self._bytes(f), offset, limit)
                parts.append(s["text"])
                last = s["end"]
            text = "".join(parts)
            if text.strip() == "" and total <= limit and offset == 0:
                return ReadResult(file_data=FileData(content=text, encoding="utf-8"))
            text = text.replace("\r\n", "\n").replace("\r", "\n")
            return ReadResult(
                file_data=FileData(content=text, encoding="utf-8", modified_at=f.modified_at),
                total_lines=total,
                start_line=offset + 1,
                end_line=last,
                next_offset=last if last < total else None,
            )
        except CairnError as e:
            return ReadResult(error=f"Error reading '{file_path}' from Cairn: {e}")

    def write(self, file_path: str, content: str) -> WriteResult:
        try:
            self._store(file_path, content)
        except CairnError as e:
            return WriteResult(error=f"Error writing '{file_path}' to Cairn: {e}")
        return WriteResult(path=file_path)

    def edit(self, file_path: str, old_string: str, new_string: str,
             replace_all: bool = False) -> EditResult:  # noqa: FBT001, FBT002
        try:
            f = self._file(file_path)
            if f is None:
                return EditResult(error=f"Error: File '{file_path}' not found")
            try:
                content = self._bytes(f).decode("utf-8")
            except UnicodeDecodeError:
                return EditResult(error="Error: Cannot edit binary files with text replacements.")
            result = perform_string_replacement(content, old_string, new_string, replace_all)
            if isinstance(result, str):
                return EditResult(error=result)
            new_content, occurrences = result
            self._store(file_path, new_content)
            return EditResult(path=file_path, occurrences=int(occurrences))
        except CairnError as e:
            return EditResult(error=f"Error editing '{file_path}' in Cairn: {e}")

    def delete(self, file_path: str) -> DeleteResult:
        base = file_path.rstrip("/")
        prefix = base + "/"
        try:
            doomed = [f for p, f in self._files().items() if p == base or p.startswith(prefix)]
            if not doomed:
                return DeleteResult(error=f"Error: File '{file_path}' not found")
            for f in doomed:
                for entry in f.entries:
                    try:
                        self.client.delete(entry)
                    except NotFoundError:
                        pass
        except CairnError as e:
            return DeleteResult(error=f"Error deleting '{file_path}' in Cairn: {e}")
        return DeleteResult(path=file_path)

    def grep(self, pattern: str, path: str | None = None, glob: str | None = None, *,
             max_count: int | None = None) -> GrepResult:
        try:
            root = _normalize_path(path)
        except ValueError:
            return GrepResult(matches=[])
        try:
            files = _filter_files_by_path(dict(self._files()), root)
            if glob:
                matcher = compile_grep_include_glob(glob)
                files = {p: f for p, f in files.items() if matcher(_relative_to_root(p, root))}
            by_content: dict[str, list[str]] = {}
            for p, f in sorted(files.items()):
                by_content.setdefault(f.content_id, []).append(p)
            matches: list[GrepMatch] = []
            for cid, paths in by_content.items():
                for m in self.client.iter_grep(cid, pattern, fixed=True):
                    for p in paths:
                        matches.append(GrepMatch(path=p, line=m["line"], text=m["text"]))
                        if max_count is not None and len(matches) > max_count:
                            return GrepResult(matches=matches[:max_count], truncated=True)
            return GrepResult(matches=matches)
        except InvalidGlobPatternError as e:
            return GrepResult(error=str(e))
        except CairnError as e:
            return GrepResult(error=f"Error: grep in Cairn failed: {e}")

    def glob(self, pattern: str, path: str | None = None) -> GlobResult:
        try:
            files = self._files()
        except CairnError as e:
            return GlobResult(error=f"Error: glob in Cairn failed: {e}")
        data: dict[str, Any] = {
            p: {"content": "", "encoding": "utf-8", "modified_at": f.modified_at}
            for p, f in files.items()
        }
        try:
            result = _glob_search_files(data, pattern, path)
        except InvalidGlobPatternError as e:
            return GlobResult(error=str(e))
        if result == "No files found":
            return GlobResult(matches=[])
        return GlobResult(matches=[
            {"path": p, "is_dir": False, "modified_at": files[p].modified_at}
            for p in result.split("\n")
        ])

    def upload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        out: list[FileUploadResponse] = []
        for path, content in files:
            try:
                self._store(path, content)
                out.append(FileUploadResponse(path=path))
            except CairnError as e:
                out.append(FileUploadResponse(path=path, error=str(e)))
        return out

    def download_files(self, paths: list[str]) -> list[FileDownloadResponse]:
        out: list[FileDownloadResponse] = []
        for path in paths:
            try:
                f = self._file(path)
                if f is None:
                    out.append(FileDownloadResponse(path=path, error="file_not_found"))
                else:
                    out.append(FileDownloadResponse(path=path, content=self._bytes(f)))
            except CairnError as e:
                out.append(FileDownloadResponse(path=path, error=str(e)))
        return out


def _file_data(data: bytes) -> FileData:
    try:
        return FileData(content=data.decode("utf-8"), encoding="utf-8")
    except UnicodeDecodeError:
        return FileData(content=base64.standard_b64encode(data).decode("ascii"), encoding="base64")


def _slice_locally(data: bytes, offset: int, limit: int) -> ReadResult:
    from deepagents.backends.utils import slice_read_response

    return slice_read_response(_file_data(data), offset, limit)
