"""Uses a client generated from openapi/openapi.json by openapi-python-client
(package `cairn_client`, on PYTHONPATH) against a live server: put a memory,
read a line slice, search it. Prints what it got as JSON; raises on failure.

usage: client_check.py <cairn-url> <api-key>
"""

import json
import sys
import time

from cairn_client import AuthenticatedClient
from cairn_client.api.memories import put
from cairn_client.api.search import get_search
from cairn_client.api.slices import lines
from cairn_client.models import PutBody, SearchView, SliceView
from cairn_client.models.put_view import PutView

url, key = sys.argv[1], sys.argv[2]
client = AuthenticatedClient(base_url=url, token=key)
content = "".join(f"line {i}: the zebra crossing report number {i}\n" for i in range(1, 301))

stored = put.sync(client=client, body=PutBody(content=content, type_="TOOL_OUTPUT", subtype="report"))
assert isinstance(stored, PutView), f"put answered {stored!r}"

slice_ = lines.sync(stored.id, client=client, start=10, end=12)
assert isinstance(slice_, SliceView), f"lines answered {slice_!r}"
assert slice_.text == "".join(content.splitlines(keepends=True)[9:12]), slice_.text

found = None
deadline = time.time() + 30
while time.time() < deadline:
    found = get_search.sync(client=client, q="zebra")
    assert isinstance(found, SearchView), f"search answered {found!r}"
    if found.results:
        break
    time.sleep(0.2)
assert found.results and found.results[0].id == stored.id, f"search found {found!r}"

print(json.dumps({"id": stored.id, "lines": [slice_.start, slice_.end],
                  "hits": [h.line for h in found.results[0].hits]}))
