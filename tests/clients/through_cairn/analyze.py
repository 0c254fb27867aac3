import json,sys,re
MEM=("memory_fetch","memory_grep","memory_search")
def names(tools):
    out=[]
    for t in tools or []:
        out.append(t.get("name") or t.get("function",{}).get("name") or t.get("type"))
    return out
for c in sys.argv[1:]:
    print("=====",c, open(f"{c}/rc").read().strip())
    U=json.load(open(f"{c}/upstream.json"))
    try: T=json.load(open(f"{c}/client.json"))
    except Exception: T=[]
    print("client->cairn:",[(t['method'],t['path'],t.get('status')) for t in T])
    for i,r in enumerate(U):
        if not r['body']: print(i,r['method'],r['path'],"(no body)"); continue
        raw=r['body']; b=json.loads(raw)
        tn=names(b.get("tools"))
        mem=[n for n in tn if n in MEM]
        mk=len(re.findall(r"\[cairn: offloaded",raw)); ptr=set(re.findall(r"mem://[0-9a-f]{12,64}",raw))
        print(i,r['method'],r['path'],"keys=",list(b.keys()),"ntools=",len(tn),"last3=",tn[-3:],"mem_tools=",mem,"markers=",mk,"ptrs=",len(ptr),"len=",len(raw))
        for m in re.finditer(r"\[cairn: offloaded[^\]]*\]",raw): print("    marker:",m.group(0)[:200])
