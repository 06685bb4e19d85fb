# RSS of sluice-logd idle, with 2,000 connections each holding a partial 64 KiB
# frame, and after they close (issue 19, item 6).
#
#   python3 perf/shipping/logd-rss.py SLUICE_LOGD
import os, re, resource, socket, subprocess, sys, tempfile, time
resource.setrlimit(resource.RLIMIT_NOFILE, (8192, 8192))
d = tempfile.mkdtemp()
err = open(d + "/err", "wb")
p = subprocess.Popen([sys.argv[1], "--listen", "127.0.0.1:0", d + "/out.log"], stderr=err)
def rss():
    return int(re.search(r"VmRSS:\s+(\d+)", open("/proc/%d/status" % p.pid).read())[1])
for _ in range(200):
    m = re.search(rb"127.0.0.1:(\d+)", open(d + "/err", "rb").read())
    if m: break
    time.sleep(0.05)
port = int(m[1])
time.sleep(0.3)
idle = rss()
socks = []
part = b"65536 <14>" + b"p" * 60000
for i in range(2000):
    s = socket.create_connection(("127.0.0.1", port)); s.sendall(part); socks.append(s)
# wait until the daemon has read them all (RSS stops growing)
last, stable = 0, 0
for _ in range(300):
    r = rss()
    stable = stable + 1 if r == last else 0
    last = r
    if stable >= 5: break
    time.sleep(0.1)
held = rss()
for s in socks: s.close()
last, stable = 0, 0
for _ in range(300):
    r = rss()
    stable = stable + 1 if r == last else 0
    last = r
    if stable >= 5: break
    time.sleep(0.1)
after = rss()
p.terminate(); p.wait(timeout=30)
print("%s: idle %d KiB, 2000 partial 64 KiB frames %d KiB (%.0f KB each), after close %d KiB" % (sys.argv[1], idle, held, (held - idle) * 1024 / 2000 / 1000, after))
