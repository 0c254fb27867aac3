"""Split a stand-in /_requests dump into captured/<prefix>-N.json (body) and
captured/<prefix>-N.headers.json (method, path, headers; key values redacted).
Usage: python3 save_captures.py requests.json prefix"""
import json, os, sys

REDACT = {"authorization", "x-api-key", "api-key", "openai-api-key", "cookie"}
src, prefix = sys.argv[1], sys.argv[2]
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "captured")
os.makedirs(out, exist_ok=True)
for n, req in enumerate(json.load(open(src)), 1):
    headers = {k: ("<redacted>" if k in REDACT else v) for k, v in req["headers"].items()}
    meta = {"method": req["method"], "path": req["path"], "headers": headers}
    with open(os.path.join(out, f"{prefix}-{n}.headers.json"), "w") as f:
        json.dump(meta, f, indent=1)
    with open(os.path.join(out, f"{prefix}-{n}.json"), "w") as f:
        if req["body"]:
            json.dump(json.loads(req["body"]), f, indent=1)
        else:
            f.write("null")
    print(prefix, n, req["method"], req["path"])
