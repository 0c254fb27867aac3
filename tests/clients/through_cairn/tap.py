# Recording pass-through: listen on PORT, record the raw request bytes, forward to
# 127.0.0.1:TARGET, stream the answer back and record it too.
#   python3 tap.py PORT TARGET      GET /_tap → the records (JSON); POST /_tap_reset forgets them.
# Each record: method, path, headers, body (request), t0/t1 (start/end, epoch s),
# status, resp_type (content-type), resp (answer body, text; SSE streams whole).
import sys, json, time, http.client, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
PORT = int(sys.argv[1]); TPORT = int(sys.argv[2]); REC = []; L = threading.Lock()


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"   # (HTTP/1.0 answers make Codex's WebSocket attempt fail on the version, not the 426)

    def log_message(self, *a): pass

    def body(self):
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            raw = b""
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline(); break
                raw += self.rfile.read(size); self.rfile.readline()
            return raw
        n = int(self.headers.get("content-length") or 0)
        return self.rfile.read(n) if n else b""

    def handle_any(self):
        if self.path == "/_tap":
            with L:
                d = json.dumps(REC).encode()
            self.send_response(200); self.send_header("content-length", str(len(d))); self.send_header("connection", "close"); self.end_headers()
            self.wfile.write(d); self.close_connection = True; return
        if self.path == "/_tap_reset":
            self.body()
            with L:
                REC.clear()
            self.send_response(200); self.send_header("content-length", "0"); self.send_header("connection", "close"); self.end_headers()
            self.close_connection = True; return
        raw = self.body()
        rec = {"method": self.command, "path": self.path, "headers": dict(self.headers),
               "body": raw.decode("utf-8", "replace"), "t0": time.time()}
        with L:
            REC.append(rec)
        hdrs = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "transfer-encoding", "content-length", "connection")}
        c = http.client.HTTPConnection("127.0.0.1", TPORT, timeout=900)
        try:
            c.request(self.command, self.path, body=raw if raw or self.command in ("POST", "PUT") else None, headers=hdrs)
            r = c.getresponse()
        except OSError as e:
            rec.update(status=502, error=str(e), t1=time.time())
            self.send_response(502); self.send_header("content-length", "0"); self.send_header("connection", "close"); self.end_headers()
            self.close_connection = True; return
        self.send_response(r.status)
        for k, v in r.getheaders():
            if k.lower() not in ("transfer-encoding", "connection"): self.send_header(k, v)
        self.send_header("connection", "close"); self.end_headers()
        got = []
        while True:
            b = r.read1(65536)
            if not b: break
            got.append(b)
            self.wfile.write(b); self.wfile.flush()
        rec.update(status=r.status, resp_type=r.getheader("content-type", ""),
                   resp=b"".join(got).decode("utf-8", "replace"), t1=time.time())
        self.close_connection = True
    do_GET = do_POST = do_HEAD = do_PUT = do_DELETE = handle_any


ThreadingHTTPServer(("127.0.0.1", PORT), H).serve_forever()
