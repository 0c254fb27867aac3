# Recording pass-through: listen on PORT, record raw request bytes, forward to TARGET, stream back.
import sys, json, http.client, threading, base64
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
PORT=int(sys.argv[1]); TPORT=int(sys.argv[2]); REC=[]; L=threading.Lock()
class H(BaseHTTPRequestHandler):
    def log_message(self,*a): pass
    def body(self):
        if self.headers.get("transfer-encoding","").lower()=="chunked":
            raw=b""
            while True:
                size=int(self.rfile.readline().strip().split(b";")[0],16)
                if size==0:
                    self.rfile.readline(); break
                raw+=self.rfile.read(size); self.rfile.readline()
            return raw
        n=int(self.headers.get("content-length") or 0)
        return self.rfile.read(n) if n else b""
    def handle_any(self):
        if self.path=="/_tap":
            d=json.dumps(REC).encode(); self.send_response(200); self.send_header("content-length",str(len(d))); self.end_headers(); self.wfile.write(d); return
        raw=self.body()
        with L: REC.append({"method":self.command,"path":self.path,"headers":dict(self.headers),"body":raw.decode("utf-8","replace")})
        hdrs={k:v for k,v in self.headers.items() if k.lower() not in ("host","transfer-encoding","content-length","connection")}
        c=http.client.HTTPConnection("127.0.0.1",TPORT,timeout=900)
        c.request(self.command,self.path,body=raw if raw or self.command in("POST","PUT") else None,headers=hdrs)
        r=c.getresponse()
        self.send_response(r.status)
        for k,v in r.getheaders():
            if k.lower() not in ("transfer-encoding","content-length","connection"): self.send_header(k,v)
        self.send_header("connection","close"); self.end_headers()
        while True:
            b=r.read1(65536)
            if not b: break
            self.wfile.write(b); self.wfile.flush()
        with L: REC[-1]["status"]=r.status
    do_GET=do_POST=do_HEAD=do_PUT=do_DELETE=handle_any
ThreadingHTTPServer(("127.0.0.1",PORT),H).serve_forever()
