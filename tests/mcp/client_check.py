"""Drives Cairn's /mcp endpoint with the official MCP Python SDK client.

Usage: client_check.py <mcp-url> <api-key>
Initializes, lists the tools, puts a 500-line memory, fetches a line range,
follows `next`, and searches; prints one JSON line with what it saw, and
exits non-zero (with the reason on stderr) on anything unexpected.
"""

import asyncio
import json
import sys
import traceback

from mcp import ClientSession
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client


def payload(result):
    """The JSON a tool answered (its structured content, else its text)."""
    structured = getattr(result, "structured_content", None)
    if structured is None:
        structured = getattr(result, "structuredContent", None)
    if structured is not None:
        return structured
    return json.loads(result.content[0].text)


def is_error(result):
    flag = getattr(result, "is_error", None)
    if flag is None:
        flag = getattr(result, "isError", None)
    return bool(flag)


async def main(url, key):
    lines = [f"line {n}: build step {n} finished" for n in range(1, 501)]
    lines[349] = "line 350: ERROR zanzibarquux failed to link"
    content = "\n".join(lines) + "\n"
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
    async with http, streamable_http_client(url, http_client=http) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            tools = sorted(t.name for t in (await session.list_tools()).tools)
            expected = ["memory_fetch", "memory_grep", "memory_put", "memory_query", "memory_search", "memory_stats"]
            assert tools == expected, f"tools: {tools}"

            put = await session.call_tool(
                "memory_put",
                {"content": content, "type": "TOOL_OUTPUT", "subtype": "make", "title": "build log"},
            )
            assert not is_error(put), f"put failed: {put}"
            put = payload(put)
            memory_id, uri = put["id"], put["uri"]
            assert uri == f"mem://{memory_id}", put

            fetched = await session.call_tool(
                "memory_fetch", {"memory_id": memory_id[:16], "line_start": 349, "line_end": 351}
            )
            assert not is_error(fetched), f"fetch failed: {fetched}"
            fetched = payload(fetched)
            assert fetched["text"] == "\n".join(lines[348:351]) + "\n", fetched
            assert fetched["total_lines"] == 500, fetched

            following = await session.call_tool("memory_fetch", {"uri": fetched["next"]})
            assert not is_error(following), f"fetch of next failed: {following}"
            following = payload(following)
            assert following["text"].startswith("line 352: "), following

            budgeted = await session.call_tool(
                "memory_fetch", {"memory_id": memory_id, "line_start": 340, "max_tokens": 60}
            )
            assert not is_error(budgeted), f"budgeted fetch failed: {budgeted}"
            budgeted = payload(budgeted)
            assert 0 < budgeted["tokens"] <= 60 and budgeted["method"] == "exact:o200k_base", budgeted
            assert budgeted["text"].startswith("line 340: "), budgeted
            assert "max_tokens=60" in budgeted["next"], budgeted
            after = payload(await session.call_tool("memory_fetch", {"uri": budgeted["next"]}))
            assert after["start"] == budgeted["end"] + 1 and after["tokens"] <= 60, after

            ranged_twice = await session.call_tool(
                "memory_fetch", {"uri": fetched["next"], "line_start": 1}
            )
            assert is_error(ranged_twice), "a uri that names a range plus line_start must be refused"

            grepped = await session.call_tool(
                "memory_grep", {"uri": uri, "pattern": "error ZANZIBAR", "ignore_case": True, "context": 1}
            )
            assert not is_error(grepped), f"grep failed: {grepped}"
            grepped = payload(grepped)
            assert [m["line"] for m in grepped["matches"]] == [350], grepped
            assert grepped["matches"][0]["before"] == [lines[348]], grepped
            assert grepped["matches"][0]["uri"] == f"mem://{memory_id}#L350-350", grepped
            assert grepped["next"] is None and grepped["truncated"] is False, grepped
            bad = await session.call_tool("memory_grep", {"memory_id": memory_id, "pattern": "a(b"})
            assert is_error(bad), "a bad regex must be a tool error"

            hits = []
            for _ in range(100):
                found = await session.call_tool("memory_search", {"query": "zanzibarquux"})
                assert not is_error(found), f"search failed: {found}"
                hits = payload(found)["results"]
                if hits:
                    break
                await asyncio.sleep(0.1)
            assert hits and hits[0]["id"] == memory_id, f"search: {hits}"
            hit_lines = [h["line"] for h in hits[0]["hits"]]
            assert 350 in hit_lines, hits[0]

            doc = payload(await session.call_tool(
                "memory_put",
                {"content": json.dumps({"jobs": [{"id": 1, "ok": True}, {"id": 2, "ok": False, "error": "disk full"}]})},
            ))
            queried = await session.call_tool(
                "memory_query", {"uri": doc["uri"], "jq": ".jobs[] | select(.ok | not) | {id, error}"}
            )
            assert not is_error(queried), f"query failed: {queried}"
            assert payload(queried)["results"] == [{"id": 2, "error": "disk full"}], queried
            not_json = await session.call_tool("memory_query", {"memory_id": memory_id, "jq": "."})
            assert is_error(not_json), "jq on text must be a tool error"

            stats = payload(await session.call_tool("memory_stats", {}))
    print(
        json.dumps(
            {
                "server": init.server_info.name if hasattr(init, "server_info") else init.serverInfo.name,
                "tools": tools,
                "id": memory_id,
                "fetched": fetched["text"],
                "search_lines": hit_lines,
                "grep_lines": [m["line"] for m in grepped["matches"]],
                "memories": stats.get("memories"),
            }
        )
    )


if __name__ == "__main__":
    try:
        asyncio.run(main(sys.argv[1], sys.argv[2]))
    except BaseException:  # assertions arrive wrapped in the SDK's task-group exception groups
        traceback.print_exc(file=sys.stderr)
        sys.exit(1)
