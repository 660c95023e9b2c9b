#!/usr/bin/env python3
"""crash_adversary.py — SIGKILL crowd-server under load, at moments chosen by
events, and check that nothing acknowledged was lost (issue 13, "a crash test
you have not seen"). Written apart from test_crash.c, with other clients and
other kill moments:

  clients   players over TCP and over WebSocket (token role player: spawn,
            retarget and remove their own agents, now and then naming an agent
            of another player -> NOT_OWNER), admins over TCP and WebSocket
            (add obstacles, now and then a clockwise one -> BAD_POLYGON, remove
            obstacles, remove anyone's agents), a leaver that spawns and
            disconnects without keep_agents_on_disconnect (its agents dropped in
            one pass), and an observer subscribed to the whole world recording
            every (tick, state_hash). Players and admins keep their agents on
            disconnect and present their resume key after each restart, so they
            own their agents again. Requests are pipelined (up to 4 in flight).
  kills     SIGKILL, in turn: right after the Nth Ack arrives; while a
            checkpoint is being written (its .tmp file exists); right after a
            journal rotation (a new journal-*.log appears); right after a
            Welcome (an identity just made); right after the leaver closed; at
            a random moment.
  checks    after each kill, on the dead data dir: crowd-replay --verify
            --hashes re-simulates from the oldest kept checkpoint, every
            recorded hash matches, and every snapshot hash a client saw for a
            tick it covers is the replayed one (with --fsync everysec: for the
            ticks up to the recovered one). Then the restart prints `recovered
            tick T ... state_hash H`; H is the replayed hash of T and the hash
            clients saw for T. The observer's first keyframe after the restart
            holds every agent and obstacle whose creation was acknowledged
            (unless a removal of it was acknowledged or left unanswered), none
            whose removal was acknowledged, each agent with the owner that
            spawned it; agents nobody acknowledged only from spawns left
            unanswered. Over the whole test, no tick was ever seen with two
            different hashes (a state a crash took back).
            --fsync always: no acknowledged change may be lost.
            --fsync everysec: acknowledged changes may be lost (a power loss
            loses up to a second of them; a SIGKILL only what the storage
            thread had not yet written), but only a suffix of each client's
            acknowledged requests, each acknowledged less than a second before
            the kill; the test prints how many were lost.

  crash_adversary.py --server S --replay R --proto proto/crowd.proto
        [--kills 12] [--fsync always|everysec] [--navigation] [--seed N]

--navigation runs the server with navigation on (the ctest run for fsync always
uses it). Waits are for events (a reply, a file, a line); deadlines
only stop a hang. Exit 77 when python3-protobuf is missing."""
import argparse
import base64
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from crowd_wire import (generated_messages, take_delimited, varint, ws_client_frame,  # noqa: E402
                        ws_take_frame, ws_upgrade_request)

pb = None
W = 200.0  # world half-size used by clients (bounds are +-1000)


class Closed(Exception):
    pass


class Conn:
    """One connection: TCP (varint-delimited) or WebSocket (one message per binary frame)."""

    def __init__(self, tcp_port, http_port, ws):
        self.ws = ws
        self.sock = socket.create_connection(("127.0.0.1", http_port if ws else tcp_port), timeout=60)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.wlock = threading.Lock()
        if ws:
            key = base64.b64encode(os.urandom(16)).decode()
            self.sock.sendall(ws_upgrade_request(key))
            while b"\r\n\r\n" not in self.buf:
                self._fill()
            head, self.buf = self.buf.split(b"\r\n\r\n", 1)
            if b" 101 " not in head.split(b"\r\n")[0]:
                raise Closed("upgrade refused: %r" % head[:80])

    def _fill(self):
        try:
            chunk = self.sock.recv(262144)
        except OSError:
            chunk = b""
        if not chunk:
            raise Closed("closed")
        self.buf += chunk

    def send(self, msg):
        body = msg.SerializeToString()
        if self.ws:
            data = ws_client_frame(0x2, body)
        else:
            data = varint(len(body)) + body
        try:
            with self.wlock:
                self.sock.sendall(data)
        except OSError:
            raise Closed("send failed")

    def recv(self):
        while True:
            if self.ws:
                frame = ws_take_frame(self.buf)
                if frame is not None:
                    op, body, self.buf = frame
                    if op == 8:
                        raise Closed("ws close")
                    if op == 2:
                        m = pb.ServerMessage()
                        m.ParseFromString(body)
                        return m
                    continue
            else:
                frame = take_delimited(self.buf)
                if frame is not None:
                    body, self.buf = frame
                    m = pb.ServerMessage()
                    m.ParseFromString(body)
                    return m
            self._fill()

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def decode_keyframe(s):
    """ids -> owner of a keyframe snapshot (every agent carries bits 1|2|4|8|16)."""
    assert s.keyframe
    out, prev, k = {}, 0, 0
    for e in s.entries:
        prev += e >> 5
        if e & 16:
            out[prev] = s.owner[k]
            k += 1
    return out


class Model:
    """What clients were told, over the whole test (ids are never reused by the server)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.agent_owner = {}       # acked spawn id -> owner client id
        self.agent_ack_time = {}
        self.ack_gen = {}           # agent id / ("o", obstacle id) -> the server generation that acknowledged it
        self.kill_times = {}        # generation -> when it was killed
        self.agents_removed = {}    # acked removals: id -> ack time
        self.obstacles = {}         # acked obstacle id -> ack time
        self.obstacles_removed = {}
        self.maybe_removed = set()  # agents and ("o", id) obstacles named by a removal left unanswered by a kill
        self.unanswered_spawn = {}  # client id -> agents in spawns left unanswered by a kill
        self.uncertain = set()      # everysec: agents whose acknowledged removal a kill took back
        self.seen = {}              # tick -> state hash seen in any snapshot
        self.seen_conflicts = []
        self.acks = 0
        self.kill_event = None      # set by the trigger waiting for an ack / welcome

    def see(self, tick, h):
        with self.lock:
            old = self.seen.get(tick)
            if old is None:
                self.seen[tick] = h
            elif old != h:
                self.seen_conflicts.append((tick, old, h))


class Client(threading.Thread):
    """A player, an admin or the leaver; reconnects after each restart."""

    def __init__(self, test, name, kind, ws, rnd):
        super().__init__(daemon=True)
        self.t, self.name, self.kind, self.ws, self.rnd = test, name, kind, ws, rnd
        self.client_id = None
        self.resume_key = ""
        self.owned = []          # ids this client believes alive (own, for players)
        self.obstacles = []      # admins: obstacle ids they added
        self.pending = {}        # request id -> (kind, payload, send time)
        self.answered = []       # (request id, kind, ok, answer time, created ids) since the last kill
        self.next_rid = 2
        self.generation = -1
        self.conn = None

    # -- requests
    def request(self, kind, msg, payload):
        rid = self.next_rid
        self.next_rid += 1
        msg.request_id = rid
        with self.t.model.lock:
            self.pending[rid] = (kind, payload, time.monotonic())
        self.conn.send(msg)

    def make_request(self):
        r, m = self.rnd, pb.ClientMessage()
        others = self.t.all_agents()
        if self.kind == "admin":
            x = r.random()
            if (x < 0.45 and len(self.obstacles) < 150) or not self.obstacles:
                cx, cy, s = r.uniform(-W, W), r.uniform(-W, W), r.uniform(1, 4)
                xs, ys = [cx - s, cx + s, cx + s, cx - s], [cy - s, cy - s, cy + s, cy + s]
                if r.random() < 0.1:
                    xs.reverse(), ys.reverse()  # clockwise: BAD_POLYGON
                m.add_obstacle.x.extend(xs)
                m.add_obstacle.y.extend(ys)
                self.request("add_obstacle", m, None)
            elif x < 0.7:
                oid = self.obstacles.pop(r.randrange(len(self.obstacles)))
                m.remove_obstacle.id = oid
                self.request("remove_obstacle", m, oid)
            elif others:
                ids = r.sample(others, min(len(others), r.randint(1, 3)))
                m.remove_agents.ids.extend(ids)
                self.request("remove_agents", m, ids)
            else:
                m.ping.client_time_us = 1
                self.request("ping", m, None)
            return
        x = r.random()
        if x < 0.35 or len(self.owned) < 3:
            n = r.randint(1, 12)
            for _ in range(n):
                a = m.spawn_agents.agents.add()
                a.position.x, a.position.y = r.uniform(-W, W), r.uniform(-W, W)
                a.target.x, a.target.y = r.uniform(-W, W), r.uniform(-W, W)
            self.request("spawn", m, n)
        elif x < 0.75:
            ids = r.sample(self.owned, min(len(self.owned), r.randint(1, 10)))
            if r.random() < 0.1 and others:
                ids.append(r.choice(others))  # maybe another's: NOT_OWNER, nothing changes
            m.set_targets.ids.extend(ids)
            m.set_targets.x.append(r.uniform(-W, W))
            m.set_targets.y.append(r.uniform(-W, W))
            self.request("targets", m, ids)
        else:
            ids = r.sample(self.owned, min(len(self.owned), r.randint(1, 4)))
            for i in ids:
                self.owned.remove(i)
            m.remove_agents.ids.extend(ids)
            self.request("remove_agents", m, ids)

    def on_answer(self, m, which):
        a = getattr(m, which)
        now = time.monotonic()
        with self.t.model.lock:
            entry = self.pending.pop(a.request_id, None)
            if entry is None:
                return
            kind, payload, _ = entry
            ok = which == "ack"
            self.answered.append((a.request_id, kind, ok, now, list(a.ids) if ok else []))
            md = self.t.model
            if ok:
                md.acks += 1
                if kind == "spawn":
                    for i in a.ids:
                        md.agent_owner[i] = self.client_id
                        md.agent_ack_time[i] = now
                        md.ack_gen[i] = self.generation
                    self.owned.extend(a.ids)
                elif kind == "remove_agents":
                    for i in payload:
                        md.agents_removed.setdefault(i, now)
                elif kind == "add_obstacle":
                    md.obstacles[a.ids[0]] = now
                    md.ack_gen[("o", a.ids[0])] = self.generation
                    self.obstacles.append(a.ids[0])
                elif kind == "remove_obstacle":
                    md.obstacles_removed.setdefault(payload, now)
            elif kind == "spawn" and m.error.code not in (pb.ERROR_LIMIT_AGENTS_CONNECTION,
                                                          pb.ERROR_LIMIT_AGENTS_WORLD):
                self.t.fail("%s: spawn refused: %s %s" % (self.name, pb.ErrorCode.Name(m.error.code),
                                                          m.error.message))
            elif kind == "add_obstacle" and m.error.code != pb.ERROR_BAD_POLYGON and \
                    "obstacles, its limit" not in m.error.message:
                self.t.fail("%s: obstacle refused: %s %s" % (self.name, pb.ErrorCode.Name(m.error.code),
                                                             m.error.message))
        if ok:
            self.t.on_ack()

    # -- a session
    def forget_pending(self):
        """Requests a kill left unanswered: applied or not, nobody knows; nothing is asked of them."""
        md = self.t.model
        with md.lock:
            for kind, payload, _ in self.pending.values():
                if kind == "remove_agents":
                    md.maybe_removed.update(payload)
                elif kind == "remove_obstacle":
                    md.maybe_removed.add(("o", payload))
                elif kind == "spawn" and self.client_id is not None:
                    md.unanswered_spawn[self.client_id] = md.unanswered_spawn.get(self.client_id, 0) + payload
            self.pending = {}

    def session(self, gen):
        self.forget_pending()
        self.conn = Conn(self.t.port, self.t.http_port, self.ws)
        m = pb.ClientMessage(request_id=1)
        m.hello.protocol_major, m.hello.protocol_minor = 1, 1
        m.hello.token = "adm" if self.kind == "admin" else "pl"
        m.hello.client_name = self.name
        m.hello.keep_agents_on_disconnect = self.kind != "leaver"
        if self.kind != "leaver":
            m.hello.resume_key = self.resume_key
        self.conn.send(m)
        while True:
            r = self.conn.recv()
            if r.WhichOneof("msg") == "welcome":
                break
            if r.WhichOneof("msg") == "error":
                raise Closed("hello refused: %s" % r.error.message)
        w = r.welcome
        if self.client_id is not None and self.kind != "leaver" and not w.resumed and self.t.a.fsync != "always":
            self.t.lost_identities += 1  # everysec: its identity record may be what a kill took back
            self.owned = []
        elif self.client_id is not None and self.kind != "leaver" and not w.resumed:
            self.t.fail("%s: resume key of client %d not honoured after the restart" % (self.name, self.client_id))
        if self.client_id is not None and self.kind != "leaver" and w.resumed and w.client_id != self.client_id:
            self.t.fail("%s: resumed as client %d, was %d" % (self.name, w.client_id, self.client_id))
        self.client_id, self.resume_key = w.client_id, w.resume_key
        self.t.on_welcome()
        budget = self.rnd.randint(20, 60) if self.kind == "leaver" else None
        sent = 0
        while gen == self.t.generation and not self.t.stop:
            while len(self.pending) < 4 and (budget is None or sent < budget):
                self.make_request()
                sent += 1
            if budget is not None and sent >= budget and not self.pending:
                self.conn.close()  # agents dropped in one pass (not kept)
                with self.t.model.lock:
                    self.t.left_clients.add(self.client_id)
                self.t.on_leave()
                return
            r = self.conn.recv()
            which = r.WhichOneof("msg")
            if which in ("ack", "error"):
                self.on_answer(r, which)

    def run(self):
        while not self.t.stop:
            gen = self.t.wait_up(self.generation)
            if gen is None:
                return
            self.generation = gen
            try:
                self.session(gen)
                while self.kind == "leaver" and gen == self.t.generation and not self.t.stop:
                    self.client_id = None  # left: come back as a new client, at once
                    self.session(gen)
            except (Closed, OSError):
                pass
            # the server is gone: wait for the next start
            self.t.wait_down(gen)


class Observer(threading.Thread):
    """Whole-world subscriber: records every (tick, hash), keeps the first keyframe after each start."""

    def __init__(self, test, ws):
        super().__init__(daemon=True)
        self.t, self.ws = test, ws
        self.first = {}  # generation -> (tick, {id: owner}, {obstacle ids})
        self.cv = threading.Condition()

    def run(self):
        gen = -1
        while not self.t.stop:
            gen = self.t.wait_up(gen)
            if gen is None:
                return
            try:
                c = Conn(self.t.port, self.t.http_port, self.ws)
                m = pb.ClientMessage(request_id=1)
                m.hello.protocol_major, m.hello.protocol_minor, m.hello.token = 1, 1, "adm"
                c.send(m)
                m = pb.ClientMessage(request_id=2)
                m.subscribe.divisor = 1
                c.send(m)
                while True:
                    r = c.recv()
                    if r.WhichOneof("msg") != "snapshot":
                        continue
                    s = r.snapshot
                    self.t.model.see(s.tick, s.state_hash)
                    if s.keyframe and gen not in self.first:
                        with self.cv:
                            self.first[gen] = (s.tick, decode_keyframe(s), {o.id for o in s.obstacles})
                            self.cv.notify_all()
            except (Closed, OSError):
                pass
            self.t.wait_down(gen)


class Test:
    def __init__(self, a):
        self.a = a
        self.model = Model()
        self.failures = []
        self.stop = False
        self.generation = 0
        self.up = False
        self.cv = threading.Condition()
        self.port = self.http_port = None
        self.proc = None
        self.trigger = None
        self.fire = threading.Event()
        self.lost_everysec = 0
        self.taken_back = 0
        self.lost_identities = 0

    def fail(self, text):
        print("FAIL: " + text, flush=True)
        self.failures.append(text)

    # -- server up / down, seen by client threads
    def wait_up(self, after):
        with self.cv:
            while not self.stop and not (self.up and self.generation > after):
                self.cv.wait(1)
            return None if self.stop else self.generation

    def wait_down(self, gen):
        with self.cv:
            while not self.stop and self.up and self.generation == gen:
                self.cv.wait(1)

    # -- kill triggers
    def on_ack(self):
        if self.trigger and self.trigger[0] == "ack":
            with self.model.lock:
                n = self.model.acks
            if n >= self.trigger[1]:
                self.fire.set()

    def on_welcome(self):
        if self.trigger and self.trigger[0] == "welcome":
            self.fire.set()

    def on_leave(self):
        if self.trigger and self.trigger[0] == "leave":
            self.fire.set()

    def all_agents(self):
        with self.model.lock:
            return [i for i in list(self.model.agent_owner)[-400:] if i not in self.model.agents_removed]


    # -- the server
    def start(self):
        a = self.a
        args = [a.server, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--data-dir", self.data,
                "--fsync", a.fsync, "--checkpoint-every", str(a.checkpoint_every), "--keep-checkpoints", "2",
                "--demo", "--demo-agents", "200", "--tick-rate", "30", "--workers", "2",
                "--token", "adm=admin", "--token", "pl=player", "--max-agents-per-connection", "400",
                "--navigation=%s" % ("true" if a.navigation else "false"), "--log-level", "warn"]
        self.log = open(os.path.join(self.work, "server-%d.log" % self.generation), "w")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.log, text=True)
        recovered = None
        tcp = http = None
        while tcp is None or http is None:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("crowd-server exited; see %s" % self.log.name)
            m = re.match(r"recovered tick (\d+) agents (\d+) state_hash 0x([0-9a-f]+)", line)
            if m:
                recovered = (int(m.group(1)), int(m.group(3), 16))
            m = re.match(r"listening (tcp|http) [^ ]*:(\d+)$", line.strip())
            if m and m.group(1) == "tcp":
                tcp = int(m.group(2))
            elif m:
                http = int(m.group(2))
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()
        with self.cv:
            self.port, self.http_port = tcp, http
            self.generation += 1
            self.up = True
            self.cv.notify_all()
        return recovered

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        t = time.monotonic()
        self.proc.wait()
        with self.cv:
            self.up = False
            self.cv.notify_all()
        self.log.close()
        return t

    def wait_file(self, pattern, known):
        """Until a file matching pattern, not in known, appears in the data dir (polled: no inotify in Python)."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for f in os.listdir(self.data):
                if rx.match(f) and f not in known:
                    return f
        return None

    # -- checks
    def replay(self):
        out = subprocess.run([self.a.replay, self.data, "--verify", "--hashes"], capture_output=True, text=True)
        hashes = {int(t): int(h, 16) for t, h in re.findall(r"tick (\d+) state_hash 0x([0-9a-f]+)", out.stdout)}
        if out.returncode != 0:
            self.fail("crowd-replay --verify: exit %d: %s" % (out.returncode, out.stderr.strip()[-400:]))
        return hashes

    def check_after_kill(self, run, kill_time, replayed):
        """Hashes: what clients saw against the replayed recording."""
        with self.model.lock:
            seen = dict(self.model.seen)
        last = max(replayed) if replayed else -1
        bad = [(t, seen[t], replayed[t]) for t in sorted(seen) if t in replayed]
        bad = [x for x in bad if x[1] != x[2] and (self.a.fsync == "always" or x[0] <= last)]
        for t, s, r in bad[:3]:
            self.fail("run %d: tick %d seen with hash %016x, replayed %016x" % (run, t, s, r))
        if self.a.fsync == "always":
            newest_seen = max((t for t in seen), default=0)
            if newest_seen > last + 1:
                self.fail("run %d: a snapshot of tick %d was seen, the recording ends at tick %d"
                          % (run, newest_seen, last))

    def check_world(self, run, kill_time, recovered, replayed, first):
        """The observer's first keyframe after the restart against what was acknowledged before the kill."""
        tick, agents, obstacles = first
        md = self.model
        lost, back = [], []
        killed_gen = self.generation - 1
        with md.lock:
            maybe = set(md.maybe_removed)
            for c in self.clients:  # requests of the new run: removals may already be applied
                for kind, payload, _ in c.pending.values():
                    if kind == "remove_agents":
                        maybe.update(payload)
                    elif kind == "remove_obstacle":
                        maybe.add(("o", payload))
            leavers = set(self.left_clients) | {c.client_id for c in self.clients if c.kind == "leaver"}
            for i, owner in md.agent_owner.items():
                if md.ack_gen.get(i, 0) > killed_gen or i in md.uncertain or owner in leavers:
                    continue
                removed = md.agents_removed.get(i)
                if removed is not None and removed < kill_time:
                    if i in agents:
                        back.append(("agent", i, removed))
                    continue
                if i in maybe or removed is not None:  # removed after the restart, maybe before this tick
                    continue
                if i not in agents:
                    lost.append(("agent", i, md.agent_ack_time[i]))
                elif agents[i] != owner:
                    self.fail("run %d: agent %d owned by %d, spawned by %d" % (run, i, agents[i], owner))
            for o, t in md.obstacles.items():
                if md.ack_gen.get(("o", o), 0) > killed_gen:
                    continue
                removed = md.obstacles_removed.get(o)
                if removed is not None and removed < kill_time:
                    if o in obstacles:
                        back.append(("obstacle", o, removed))
                    continue
                if ("o", o) not in maybe and removed is None and o not in obstacles:
                    lost.append(("obstacle", o, t))
            phantom = {}
            for i, owner in agents.items():
                if owner != 0 and i not in md.agent_owner:
                    phantom[owner] = phantom.get(owner, 0) + 1
            pending_spawn = dict(md.unanswered_spawn)
            for c in self.clients:
                for kind, payload, _ in c.pending.values():
                    if kind == "spawn":
                        pending_spawn[c.client_id] = pending_spawn.get(c.client_id, 0) + payload
            for owner, n in phantom.items():
                if owner not in leavers and n > pending_spawn.get(owner, 0):
                    self.fail("run %d: %d agent(s) of client %d nobody acknowledged (%d unanswered)"
                              % (run, n, owner, pending_spawn.get(owner, 0)))
        if self.a.fsync == "always":
            for what, i, t in lost[:5]:
                self.fail("run %d: acknowledged %s %d lost (keyframe of tick %d; acknowledged %.3f s before the "
                          "kill, to client %s)" % (run, what, i, tick, kill_time - t,
                                                   md.agent_owner.get(i) if what == "agent" else "-"))
            for what, i, _ in back[:5]:
                self.fail("run %d: %s %d is back after its removal was acknowledged" % (run, what, i))
        else:
            for what, i, t in lost + back:
                # acknowledged by the killed server less than a second before the kill (or read after it),
                # or by an earlier one and read only after its kill (first checked now)
                g = md.ack_gen.get(i if what == "agent" else ("o", i), killed_gen)
                if g < killed_gen and t >= md.kill_times.get(g, 0) - 1.0:
                    continue
                if kill_time - t > 1.0:
                    self.fail("run %d (everysec): %s %d, acknowledged %.2f s before the kill, is lost"
                              % (run, what, i, kill_time - t))
            self.lost_everysec += len(lost) + len(back)
            self.check_suffix(run, lost, kill_time, agents)
            with md.lock:
                for what, i, _ in lost:  # never happened: its id may be given again
                    if what == "agent":
                        md.agent_owner.pop(i, None)
                        md.agent_ack_time.pop(i, None)
                        md.agents_removed.pop(i, None)
                    else:
                        md.obstacles.pop(i, None)
                        md.obstacles_removed.pop(i, None)
                for what, i, _ in back:
                    if what == "agent":
                        md.uncertain.add(i)
                    else:
                        md.obstacles_removed.pop(i, None)
                gone = {i for w, i, _ in lost if w == "agent"}
                gone_o = {i for w, i, _ in lost if w == "obstacle"}
                for c in self.clients:
                    c.owned = [i for i in c.owned if i not in gone]
                    c.obstacles = [o for o in c.obstacles if o not in gone_o]
        if recovered:
            t, h = recovered
            with md.lock:
                s = md.seen.get(t)
            if s is not None and s != h and self.a.fsync == "always":
                self.fail("run %d: recovered tick %d hash %016x, clients saw %016x" % (run, t, h, s))
            if t in replayed and replayed[t] != h:
                self.fail("run %d: recovered tick %d hash %016x, replay says %016x" % (run, t, h, replayed[t]))

    def check_suffix(self, run, lost, kill_time, agents):
        """everysec: what a kill loses is the end of the journal, so of each client's acknowledged creations
        the lost ones come last."""
        lost_ids = {i for _, i, _ in lost}
        killed_gen = self.generation - 1
        with self.model.lock:
            ack_gen = self.model.ack_gen
            # creations the recovered server may be answering right now (sent in the new run)
            spawning = {c.client_id for c in self.clients if any(k == "spawn" for k, _, _ in c.pending.values())}
            adding = any(k == "add_obstacle" for c in self.clients for k, _, _ in c.pending.values())
            for c in self.clients:
                seen_lost = False
                for rid, kind, ok, t, ids in c.answered:
                    if not ok or kind not in ("spawn", "add_obstacle") or not ids or t >= kill_time:
                        continue
                    keys = ids if kind == "spawn" else [("o", i) for i in ids]
                    if any(ack_gen.get(k, 0) > killed_gen for k in keys) or \
                            (kind == "spawn" and any(agents.get(i) in spawning for i in ids)) or \
                            (kind == "add_obstacle" and adding):
                        # the recovered server hands lost ids out again (they were never journaled):
                        # acknowledged again, or held by a client whose new creation is unanswered,
                        # they say nothing about this request
                        continue
                    gone = any(i in lost_ids for i in ids)
                    if seen_lost and not gone:
                        self.fail("run %d (everysec): %s: request %d kept after an earlier one was lost"
                                  % (run, c.name, rid))
                    seen_lost = seen_lost or gone

    def run(self):
        a = self.a
        rnd = random.Random(a.seed)
        self.work = tempfile.mkdtemp(prefix="crowd-adversary-")
        self.data = os.path.join(self.work, "data")
        self.left_clients = set()
        kinds = [("p-tcp-%d" % i, "player", False) for i in range(3)] + \
                [("p-ws-%d" % i, "player", True) for i in range(3)] + \
                [("a-tcp", "admin", False), ("a-ws", "admin", True), ("leaver", "leaver", False)]
        self.clients = [Client(self, n, k, ws, random.Random(rnd.random())) for n, k, ws in kinds]
        observer = Observer(self, rnd.random() < 0.5)
        self.start()
        for c in self.clients:
            c.start()
        observer.start()
        moments = ["ack", "checkpoint", "rotation", "welcome", "leave", "random"]
        for run in range(a.kills):
            moment = moments[run % len(moments)]
            self.fire.clear()
            known = set(os.listdir(self.data))
            if moment == "ack":
                with self.model.lock:
                    self.trigger = ("ack", self.model.acks + rnd.randint(1, 300))
                self.fire.wait(120)
            elif moment in ("welcome", "leave"):
                self.trigger = (moment,)
                self.fire.wait(120)
            elif moment == "checkpoint":
                self.wait_file(r"checkpoint-\d+\.ckpt\.tmp$", set())
            elif moment == "rotation":
                self.wait_file(r"journal-\d+\.log$", known)
            else:
                self.fire.wait(rnd.uniform(0.2, 3.0))  # a random moment: the one wait that is on purpose
            kill_time = self.kill()
            self.model.kill_times[self.generation] = kill_time
            self.trigger = None
            with self.model.lock:
                acks = self.model.acks
            with self.model.lock:  # a leaver caught mid-session: its agents stay (it is gone for good)
                for c in self.clients:
                    if c.kind == "leaver" and c.client_id is not None:
                        self.left_clients.add(c.client_id)
            replayed = self.replay()
            self.check_after_kill(run, kill_time, replayed)
            recovered = self.start()
            if recovered is None:
                self.fail("run %d: no `recovered tick` line" % run)
            elif a.fsync != "always":
                with self.model.lock:  # everysec: ticks after the recovered one may be taken back
                    for t in [t for t in self.model.seen if t > recovered[0]]:
                        del self.model.seen[t]
                        self.taken_back += 1
            with observer.cv:
                observer.cv.wait_for(lambda: self.generation in observer.first or self.stop, 60)
                first = observer.first.get(self.generation)
            if first is None:
                self.fail("run %d: the observer saw no keyframe after the restart" % run)
            else:
                self.check_world(run, kill_time, recovered, replayed, first)
            with self.model.lock:
                for c in self.clients:
                    c.answered = []
            print("run %d: killed %s; %d acks so far; recovered tick %s; %d ticks replayed; %d failures"
                  % (run, moment, acks, recovered[0] if recovered else "?", len(replayed), len(self.failures)),
                  flush=True)
            if len(self.failures) > 20:
                break
        self.stop = True
        with self.cv:
            self.cv.notify_all()
        self.proc.terminate()
        self.proc.wait()
        replayed = self.replay()
        with self.model.lock:
            conflicts = list(self.model.seen_conflicts)
        if a.fsync == "always":
            for t, h1, h2 in conflicts[:5]:
                self.fail("tick %d was seen with hash %016x and later %016x (a state a crash took back)" % (t, h1, h2))
        print("crash_adversary: %d kills, fsync %s, navigation %s: %d acks, %d agents and %d obstacles "
              "acknowledged, %d ticks seen, %d acknowledged changes lost (everysec), %d ticks seen twice with "
              "different hashes, %d seen ticks taken back and %d identities lost (everysec), %d failures"
              % (a.kills, a.fsync, "on" if a.navigation else "off", self.model.acks, len(self.model.agent_owner),
                 len(self.model.obstacles), len(self.model.seen), self.lost_everysec, len(conflicts),
                 self.taken_back, self.lost_identities, len(self.failures)))
        if not self.failures:
            shutil.rmtree(self.work, ignore_errors=True)
        else:
            print("kept " + self.work)
        return 1 if self.failures else 0


def main():
    global pb
    p = argparse.ArgumentParser()
    p.add_argument("--server", required=True)
    p.add_argument("--replay", required=True)
    p.add_argument("--proto", required=True)
    p.add_argument("--kills", type=int, default=12)
    p.add_argument("--fsync", default="always", choices=["always", "everysec"])
    p.add_argument("--checkpoint-every", type=int, default=45)
    p.add_argument("--navigation", action="store_true", help="navigation on (its recovery must then be exact)")
    p.add_argument("--seed", type=int, default=None)
    a = p.parse_args()
    if a.seed is None:
        a.seed = random.randrange(1 << 30)
    print("crash_adversary: seed %d" % a.seed, flush=True)
    pb = generated_messages(a.proto)
    if pb is None:
        print("SKIP: python3-protobuf is not installed")
        return 77
    return Test(a).run()


if __name__ == "__main__":
    sys.exit(main())
