"""An independent client, as a new user would write one: Python classes generated
by protoc from proto/crowd.proto (the standard protobuf runtime), against the real
crowd-server. Each test is one item of issue 14: what the protocol states is what
the server does. Skips (exit 77) when python3-protobuf is missing.

    test_protobuf_client.py --server PATH --proto proto/crowd.proto [unittest args]"""
import argparse
import os
import re
import socket
import subprocess
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from crowd_wire import generated_messages, take_delimited, varint  # noqa: E402

ARGS = None
pb = None  # the generated module


class Conn:
    """A TCP connection speaking varint-delimited ClientMessage / ServerMessage."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.buf = b""
        self.closed = False

    def send_raw(self, body):
        self.sock.sendall(varint(len(body)) + body)

    def send(self, msg):
        self.send_raw(msg.SerializeToString())

    def recv(self):
        """The next ServerMessage, or None once the server closed."""
        while True:
            frame = take_delimited(self.buf)
            if frame is not None:
                body, self.buf = frame
                m = pb.ServerMessage()
                m.ParseFromString(body)
                return m
            chunk = self.sock.recv(65536)
            if not chunk:
                self.closed = True
                return None
            self.buf += chunk

    def answer(self, request_id):
        """Skip snapshots and unasked messages up to the answer to request_id."""
        while True:
            m = self.recv()
            if m is None:
                return None
            which = m.WhichOneof("msg")
            if which in ("ack", "error") and getattr(m, which).request_id == request_id:
                return m
            if which == "welcome" and request_id == 1:
                return m

    def hello(self, token="", name="py", request_id=1):
        msg = pb.ClientMessage(request_id=request_id)
        msg.hello.protocol_major = 1
        msg.hello.protocol_minor = 1
        msg.hello.token = token
        msg.hello.client_name = name
        self.send(msg)
        return self.answer(request_id)

    def close(self):
        self.sock.close()


def start_server(*extra):
    proc = subprocess.Popen([ARGS.server, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--log-level",
                             "error", *extra], stdout=subprocess.PIPE, text=True)
    while True:
        line = proc.stdout.readline()
        assert line, "crowd-server did not start"
        m = re.match(r"listening tcp .*:(\d+)$", line.strip())
        if m:
            return proc, int(m.group(1))


def stop_server(proc):
    proc.terminate()
    proc.wait(timeout=20)
    proc.stdout.close()


def error_name(m):
    return pb.ErrorCode.Name(m.error.code) if m is not None and m.WhichOneof("msg") == "error" else \
        (m.WhichOneof("msg") if m is not None else "closed")


class OpenServer(unittest.TestCase):
    """An open server (every client admin)."""

    @classmethod
    def setUpClass(cls):
        cls.proc, cls.port = start_server("--requests-per-second", "100", "--request-burst", "100")

    @classmethod
    def tearDownClass(cls):
        stop_server(cls.proc)

    def conn(self):
        c = Conn(self.port)
        self.addCleanup(c.close)
        return c

    def test_long_client_name_is_welcomed(self):
        c = self.conn()
        self.assertEqual(c.hello(name="n" * 100).WhichOneof("msg"), "welcome")

    def test_repeated_scalar_is_one_ping(self):
        c = self.conn()
        c.hello()
        inner = b"".join(b"\x08" + varint(i) for i in range(5001))  # Ping.client_time_us x 5,001
        c.send_raw(b"\x08\x07" + b"\x52" + varint(len(inner)) + inner)
        m = c.recv()
        self.assertEqual(m.WhichOneof("msg"), "pong", error_name(m))
        self.assertEqual(m.pong.client_time_us, 5000)

    def test_huge_obstacle_is_bad_polygon(self):
        c = self.conn()
        c.hello()
        msg = pb.ClientMessage(request_id=5)
        msg.add_obstacle.x.extend(float(i % 100) for i in range(100000))
        msg.add_obstacle.y.extend(float(i % 100) for i in range(100000))
        c.send(msg)
        self.assertEqual(error_name(c.answer(5)), "ERROR_BAD_POLYGON")

    def test_polygons(self):
        c = self.conn()
        c.hello()
        for rid, (xs, ys, want) in enumerate([
                ([0, 10, 10, 0], [0, 10, 0, 10], "ERROR_BAD_POLYGON"),  # bow tie
                ([0, 5, 10, 10, 0], [0, 0, 0, 10, 10], "ERROR_BAD_POLYGON"),  # collinear
                ([0, 10, 5], [0, 0, 0], "ERROR_BAD_POLYGON"),  # back and forth
                ([0, 10, 10, 0], [0, 0, 0.001, 0.001], "ERROR_BAD_POLYGON"),  # 1e-3 sliver
                ([100, 100, 110, 110], [100, 110, 110, 100], "ack")], start=10):  # clockwise
            msg = pb.ClientMessage(request_id=rid)
            msg.add_obstacle.x.extend(xs)
            msg.add_obstacle.y.extend(ys)
            c.send(msg)
            m = c.answer(rid)
            self.assertEqual("ack" if m.WhichOneof("msg") == "ack" else error_name(m), want, (xs, ys))

    def test_garbage_flood_is_rate_limited_then_closed(self):
        c = self.conn()
        c.hello()
        c.sock.sendall((varint(3) + b"\xff\xff\xff") * 5000)
        answers = 0
        while c.recv() is not None:
            answers += 1
        self.assertTrue(c.closed)
        self.assertLessEqual(answers, 101, "no more answers than the burst allows")

    def test_tiny_time_horizon_refused(self):
        c = self.conn()
        c.hello()
        msg = pb.ClientMessage(request_id=3)
        msg.spawn_agents.agents.add(time_horizon=1e-45)
        c.send(msg)
        self.assertEqual(error_name(c.answer(3)), "ERROR_INVALID_ARGUMENT")

    def test_neighbor_budget(self):
        c = self.conn()
        c.hello()
        codes = []
        for rid in range(20, 24):  # 4 x 5,000 piled agents with 64 neighbours each
            msg = pb.ClientMessage(request_id=rid)
            for i in range(5000):
                a = msg.spawn_agents.agents.add(max_neighbors=64, neighbor_dist=100)
                a.position.x, a.position.y = (i % 70) * 0.5, (i // 70) * 0.5
            c.send(msg)
            m = c.answer(rid)
            codes.append("ack" if m.WhichOneof("msg") == "ack" else error_name(m))
        self.assertEqual(codes, ["ERROR_LIMIT_COST"] * 4, "5,000 x 64 = 320,000 passes the 200,000 budget")


class TokenServer(unittest.TestCase):
    """A server with tokens: viewer "v"."""

    @classmethod
    def setUpClass(cls):
        cls.proc, cls.port = start_server("--token", "v=viewer")

    @classmethod
    def tearDownClass(cls):
        stop_server(cls.proc)

    def test_long_token_is_bad_token_then_closed(self):
        c = Conn(self.port)
        self.assertEqual(error_name(c.hello(token="v" * 100)), "ERROR_BAD_TOKEN")
        self.assertIsNone(c.recv())
        c.close()

    def test_token_with_nul_is_refused(self):
        c = Conn(self.port)
        self.assertEqual(error_name(c.hello(token="v\0junk")), "ERROR_BAD_TOKEN")
        c.close()

    def test_right_token_welcomed(self):
        c = Conn(self.port)
        self.assertEqual(c.hello(token="v").welcome.role, pb.ROLE_VIEWER)
        c.close()


def main():
    global ARGS, pb
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--proto", required=True)
    ARGS, rest = parser.parse_known_args()
    pb = generated_messages(ARGS.proto)
    if pb is None:
        print("SKIP: python3-protobuf is not installed")
        sys.exit(77)
    result = unittest.main(argv=[sys.argv[0]] + rest, verbosity=2, exit=False).result
    sys.exit(0 if result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
