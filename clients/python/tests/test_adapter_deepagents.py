"""deepagents with CairnBackend: a 500 KB tool result is evicted to Cairn by one agent process;
a second, fresh process reads it back with read_file pages, grep, glob and ls — byte for byte."""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys
import uuid

import pytest

pytest.importorskip("deepagents")

from conftest import Server  # noqa: E402

WORKER = pathlib.Path(__file__).with_name("deepagents_worker.py")


def run(*args: str) -> dict[str, object]:
    p = subprocess.run([sys.executable, str(WORKER), *args], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-4000:]
    doc: dict[str, object] = json.loads(p.stdout.strip().splitlines()[-1])
    return doc


def test_evicted_result_survives_a_restart(server: Server) -> None:
    sys.path.insert(0, str(WORKER.parent))
    from deepagents_worker import big_output

    root = "e2e-" + uuid.uuid4().hex[:8]
    original = big_output(root)

    first = run("evict", server.url, root)
    notice = str(first["notice"])
    assert len(notice) < 10_000, "the 500 KB output must not stay in the conversation"
    m = re.search(r"/large_tool_results/[A-Za-z0-9_\-]+", notice)
    assert m, notice[:2000]
    path = m.group(0)

    second = run("read", server.url, root, path)  # a new process: only Cairn holds the file
    assert second["download"] == original
    pages = second["pages"]
    assert isinstance(pages, list) and len(pages) > 3
    lines = [text for page in pages for (_, text) in page]
    numbers = [n for page in pages for (n, _) in page]
    assert numbers == list(range(1, len(original.splitlines()) + 1))
    assert "\n".join(lines) + "\n" == original
    failed = [n for n, line in enumerate(original.splitlines(), 1) if " FAILED " in line]
    grep = str(second["grep"])
    assert path in grep and all(f"test_case_{n} FAILED" in grep for n in failed)
    assert path in str(second["glob"]) and path in str(second["ls"])


def test_backend_operations(server: Server) -> None:
    from cairn_client import Cairn
    from cairn_client.adapters.deepagents import CairnBackend

    root = "ops-" + uuid.uuid4().hex[:8]
    with Cairn(server.url) as cairn:
        a = CairnBackend(cairn, root=root)
        b = CairnBackend(cairn, root=root)          # a second worker
        other = CairnBackend(cairn, root=root + "-x")
        assert a.write("/src/app.py", "print('hi')\nx = 1\n").error is None
        assert a.write("/src/lib/util.py", "def f():\n    return 1\n").error is None
        assert a.write("/notes.txt", "same\n").error is None
        assert a.write("/copy.txt", "same\n").error is None  # equal content, two paths
        r = b.read("/src/app.py", 1, 1)
        assert r.file_data and r.file_data["content"] == "x = 1\n"
        assert (r.start_line, r.end_line, r.total_lines, r.next_offset) == (2, 2, 2, None)
        assert b.read("/src/app.py", 5, 1).error and b.read("/nope").error
        e = b.edit("/src/app.py", "x = 1", "x = 2")
        assert e.error is None and e.occurrences == 1
        assert a.download_files(["/src/app.py"])[0].content == b"print('hi')\nx = 2\n"
        assert a.edit("/src/app.py", "absent", "y").error
        ls = a.ls("/src")
        assert ls.entries is not None
        assert [x["path"] for x in ls.entries] == ["/src/app.py", "/src/lib/"]
        glob = a.glob("*.py", "/")
        assert glob.matches is not None and {x["path"] for x in glob.matches} == {"/src/app.py", "/src/lib/util.py"}
        g = a.grep("same", "/")
        assert g.matches is not None and {m["path"] for m in g.matches} == {"/notes.txt", "/copy.txt"}
        g = a.grep("return", "/src", glob="*.py")
        assert g.matches is not None and [(m["path"], m["line"]) for m in g.matches] == [("/src/lib/util.py", 2)]
        assert other.ls("/").entries == [] and other.read("/notes.txt").error
        up = a.upload_files([("/bin/blob", bytes(range(256)))])
        assert up[0].error is None and b.download_files(["/bin/blob"])[0].content == bytes(range(256))
        assert a.delete("/src").error is None
        assert b.read("/src/app.py").error and b.read("/notes.txt").error is None
        assert a.delete("/src").error  # nothing left there
        assert b.download_files(["/src/app.py"])[0].error == "file_not_found"
