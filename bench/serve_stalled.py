#!/usr/bin/env python3
# serve_stalled.py: RSS of a smith serve whose editor sends N requests and reads
# none of the answers (issue 16, item 6). Usage:
#   go build -o /tmp/smith ./cmd/smith && bench/serve_stalled.py /tmp/smith 100000
# Prints how many requests smith took before it stopped reading, and its
# peak and current RSS (VmHWM, VmRSS) from /proc.
import json, os, shutil, subprocess, sys, threading, time, tempfile
smith = sys.argv[1]; n = int(sys.argv[2]) if len(sys.argv) > 2 else 100000
ws = tempfile.mkdtemp(); st = tempfile.mkdtemp()
p = subprocess.Popen([smith, "serve", "--upstream", "http://127.0.0.1:1", "--state-dir", st, "--log-level", "error"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)
def frame(o):
    b = json.dumps(o).encode(); return b"Content-Length: %d\r\n\r\n" % len(b) + b
p.stdin.write(frame({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"rootUri":"file://"+ws,"initializationOptions":{"stateDir":st}}}))
# read the initialize answer
hdr = b""
while not hdr.endswith(b"\r\n\r\n"): hdr += p.stdout.read(1)
ln = int(hdr.split(b":")[1].split(b"\r\n")[0]); p.stdout.read(ln)
p.stdin.write(frame({"jsonrpc":"2.0","method":"initialized","params":{}}))
sent = [0]
def push():
    try:
        for i in range(1, n+1):
            p.stdin.write(frame({"jsonrpc":"2.0","id":i,"method":"smith/changes","params":{}})); sent[0] = i
    except Exception: pass
threading.Thread(target=push, daemon=True).start()
last = -1
for _ in range(60):
    time.sleep(0.5)
    if sent[0] == last or sent[0] == n: break
    last = sent[0]
time.sleep(1)
st_ = open("/proc/%d/status" % p.pid).read()
rss = [l for l in st_.splitlines() if l.startswith(("VmRSS", "VmHWM", "Threads"))]
print(smith, "requests taken:", sent[0], "of", n, "|", " ".join(" ".join(l.split()) for l in rss))
p.kill()
p.wait()
shutil.rmtree(ws, ignore_errors=True)
shutil.rmtree(st, ignore_errors=True)
