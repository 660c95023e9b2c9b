#!/usr/bin/env python3
"""churn.py — one kind of churn at a time against a crowd-server, RSS and live heap every --sample s:
to find which client behaviour makes RSS grow (the soak mixes them all).

  python3 tests/bench/churn.py --kinds ctl --seconds 150 [--build build] [--env MALLOC_ARENA_MAX=1]

kinds: sub (Hello + Subscribe + close), tcpnothing, hello, garbage, http (/healthz),
httpjunk, ws (upgrade + one frame), ctl (crowdctl obstacle add/remove, <= 40 live),
load / loadws (short crowd-load runs). MSTATS=1 also calls malloc_stats() in the
server through gdb at each sample (glibc's per-arena "in use" vs "system" bytes:
held memory vs fragmentation), printed to the server's log.
"""
import sys, os, time, threading, socket, subprocess, re, random, argparse
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
from soak import Server, delimited, hello, subscribe
from server_load import rss_kb
ap = argparse.ArgumentParser()
ap.add_argument("--build", default=os.path.join(ROOT, "build"))
ap.add_argument("--kinds", default="sub")
ap.add_argument("--seconds", type=float, default=180)
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--sample", type=float, default=15)
ap.add_argument("--env", action="append", default=[])
ap.add_argument("--server-arg", action="append", default=[], help="one more crowd-server argument (repeat)")
a = ap.parse_args()
a.server = os.path.join(a.build, "server/crowd-server")
env = dict(os.environ)
for e in a.env:
    k, v = e.split("=", 1); env[k] = v
srv = Server(a.server, ["--tick-rate", "30", "--token", "a=admin", "--token", "p=player", "--token", "v=viewer",
                        "--output-soft-limit", "256k"] + a.server_arg, "/tmp/crowd-churn-%d.log" % os.getpid(), env)
stop = threading.Event(); n = {}
def cnt(k):
    n[k] = n.get(k, 0) + 1
def one(kind, rnd):
    if kind == "sub":
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
        s.sendall(delimited(hello(rnd.choice(["v", "p", "a"]))) + delimited(subscribe(2, (0, 0, 300, 300), 1)))
        s.settimeout(0.5)
        try: s.recv(65536)
        except socket.timeout: pass
        s.close()
    elif kind == "tcpnothing":
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=5); s.close()
    elif kind == "hello":
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
        s.sendall(delimited(hello("p"))); s.settimeout(2)
        try: s.recv(65536)
        except socket.timeout: pass
        s.close()
    elif kind == "garbage":
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
        s.sendall(bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 2000)))); s.settimeout(2)
        try:
            while s.recv(65536): pass
        except OSError: pass
        s.close()
    elif kind == "http":
        s = socket.create_connection(("127.0.0.1", srv.http_port), timeout=5)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); s.settimeout(2)
        try: s.recv(65536)
        except OSError: pass
        s.close()
    elif kind == "httpjunk":
        s = socket.create_connection(("127.0.0.1", srv.http_port), timeout=5)
        s.sendall(b"GET /" + bytes(rnd.getrandbits(8) for _ in range(300)) + b" HTTP/1.1\r\n\r\n"); s.settimeout(2)
        try:
            while s.recv(65536): pass
        except OSError: pass
        s.close()
    elif kind == "ws":
        s = socket.create_connection(("127.0.0.1", srv.http_port), timeout=5)
        s.sendall(b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                  b"Sec-WebSocket-Protocol: crowd.v1\r\n\r\n")
        s.settimeout(2)
        try: s.recv(65536)
        except OSError: pass
        msg = delimited(hello("p"))[1:]  # ws frames carry the message without length prefix? send raw
        mask = b"\x01\x02\x03\x04"
        s.sendall(bytes([0x82, 0x80 | len(msg)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(msg)))
        try: s.recv(65536)
        except OSError: pass
        s.close()
    elif kind == "ctl":
        import math
        base = [os.path.join(a.build, "clients/cli/crowdctl"), "--server", "127.0.0.1:%d" % srv.port, "--token", "a", "--timeout", "10000"]
        if live and (len(live) > 40 or rnd.random() < 0.4):
            oid = live.pop(rnd.randrange(len(live)))
            subprocess.run(base + ["obstacle", "remove", str(oid)], capture_output=True, timeout=30)
        else:
            nv = rnd.randint(4, 64)
            cx, cy, r = rnd.uniform(-900, 900), rnd.uniform(-900, 900), rnd.uniform(1, 15)
            pts = ["%.3f,%.3f" % (cx + r * math.cos(2 * math.pi * i / nv), cy + r * math.sin(2 * math.pi * i / nv)) for i in range(nv)]
            p = subprocess.run(base + ["obstacle", "add"] + pts, capture_output=True, text=True, timeout=30)
            m = re.search(r"obstacle added:?\s*(\d+)", p.stdout)
            if m: live.append(int(m.group(1)))
    elif kind in ("load", "loadws"):
        port = srv.http_port if kind == "loadws" else srv.port
        cmd = [os.path.join(a.build, "clients/load/crowd-load"), "--server", "127.0.0.1:%d" % port, "--connections", "3",
               "--agents", "100", "--retarget", "1", "--retarget-count", "20", "--duration", str(rnd.randint(5, 15)),
               "--ramp-up", "1", "--token", "p", "--quiet", "--seed", str(rnd.randint(1, 1 << 30)), "--area", rnd.choice(["world", "200x200", "none"])]
        if kind == "loadws": cmd.append("--ws")
        subprocess.run(cmd, capture_output=True, timeout=120)
    cnt(kind)
live = []
def worker(i):
    rnd = random.Random(i); kinds = a.kinds.split(",")
    while not stop.is_set():
        try: one(rnd.choice(kinds), rnd)
        except OSError: cnt("exc")
workers = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(a.threads)]
for w in workers:
    w.start()
t0 = time.time()
while time.time() - t0 < a.seconds:
    time.sleep(a.sample)
    try:  # the allocator's own count (crowd_heap_live_bytes): memory kept, not cached
        live_kib = sum(v for k, v in srv.metrics().items() if k.startswith("crowd_heap_live_bytes")) / 1024
    except OSError:
        live_kib = float("nan")
    print("%6.0f rss %8.1f KiB  live heap %8.1f KiB  %s" % (time.time() - t0, rss_kb(srv.proc.pid), live_kib, n),
          flush=True)
    if os.environ.get("MSTATS"):
        subprocess.run(["gdb", "-p", str(srv.proc.pid), "-batch", "-ex", "call (void)malloc_stats()"], capture_output=True)
        print("   stats ->", srv.log_path, flush=True)
stop.set()
for w in workers:  # each ends after its current client run (those carry their own timeouts)
    w.join()
srv.proc.send_signal(15); srv.proc.wait(30)
print("exit", srv.proc.returncode)
