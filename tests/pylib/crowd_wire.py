"""Wire helpers the Python tests and benchmarks share: crowd.v1 framing over TCP
(varint length-delimited) and WebSocket (one message per binary frame), and the
Python classes protoc generates from proto/crowd.proto.

A script puts this folder on sys.path:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile


def varint(n):
    """n as a protobuf base-128 varint."""
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def read_varint(buf, pos=0):
    """(value, position after it), or None while buf holds only part of it."""
    n, shift = 0, 0
    while pos < len(buf):
        b = buf[pos]
        n |= (b & 0x7F) << shift
        shift += 7
        pos += 1
        if not b & 0x80:
            return n, pos
    return None


def take_delimited(buf):
    """(body, rest) for the first varint-delimited message in buf, or None while it is incomplete."""
    head = read_varint(buf)
    if head is None or len(buf) < head[1] + head[0]:
        return None
    n, i = head
    return buf[i:i + n], buf[i + n:]


def ws_upgrade_request(key, host="127.0.0.1", subprotocol="crowd.v1"):
    """The client's upgrade request for /ws."""
    proto = "Sec-WebSocket-Protocol: %s\r\n" % subprotocol if subprotocol else ""
    return ("GET /ws HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n%s\r\n" % (host, key, proto)).encode()


def ws_client_frame(opcode, payload):
    """One final frame from a client (clients must mask)."""
    mask = os.urandom(4)
    n = len(payload)
    if n < 126:
        head = bytes([0x80 | opcode, 0x80 | n])
    elif n < 65536:
        head = bytes([0x80 | opcode, 0x80 | 126]) + struct.pack(">H", n)
    else:
        head = bytes([0x80 | opcode, 0x80 | 127]) + struct.pack(">Q", n)
    return head + mask + bytes(b ^ mask[i & 3] for i, b in enumerate(payload))


def ws_take_frame(buf):
    """(opcode, payload, rest) for the first unmasked server frame in buf, or None while it is incomplete."""
    if len(buf) < 2:
        return None
    n, i = buf[1] & 0x7F, 2
    if n == 126:
        if len(buf) < 4:
            return None
        n, i = struct.unpack(">H", buf[2:4])[0], 4
    elif n == 127:
        if len(buf) < 10:
            return None
        n, i = struct.unpack(">Q", buf[2:10])[0], 10
    if len(buf) < i + n:
        return None
    return buf[0] & 0x0F, buf[i:i + n], buf[i + n:]


def generated_messages(proto_path):
    """The module protoc generates from proto_path (crowd_pb2), or None when python3-protobuf
    is missing (the caller skips with exit 77)."""
    try:
        import google.protobuf  # noqa: F401
    except ImportError:
        return None
    out = tempfile.mkdtemp()
    try:
        subprocess.run(["protoc", "-I", os.path.dirname(os.path.abspath(proto_path)), "--python_out", out,
                        os.path.basename(proto_path)], check=True)
        sys.path.insert(0, out)
        module = __import__(os.path.splitext(os.path.basename(proto_path))[0] + "_pb2")
    finally:
        sys.path.remove(out) if out in sys.path else None
        shutil.rmtree(out, ignore_errors=True)
    return module
