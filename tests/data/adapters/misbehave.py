#!/usr/bin/env python3
"""misbehave.py MODE — an adapter that breaks the protocol on purpose, for
tests/test_external.c.  It speaks the handshake properly (so its backend is
registered), then on every run request:

  crash      exits with status 3 without answering
  hang       sleeps forever
  garbage    writes a line of text instead of a frame
  notjson    writes a well-formed frame holding invalid JSON
  shape      answers with an output of the wrong shape
  dtype      answers with a float32 output for an fp16 case
  nan        answers with NaN everywhere (right shape and dtype)
  error      answers {"type": "error"} with a message
  twice      answers twice (two error replies in one write)
  wrong_id   answers with the "id" of another request
  fifo       answers with a FIFO where out.npy should be (a read of it would block)
  chatty     writes 3 MB to stderr and answers an error, and exits 3 at its 5th request
  badhello   (answers the handshake with protocol 2)
  badtiles [JSON]  (declares the tile shape JSON, by default one with a KV-tile
             width of 0, in the handshake)
Standard library only (the .npy files are written by hand)."""
import json
import os
import struct
import sys
import time

mode = sys.argv[1]
fin, fout = (int(x) for x in os.environ.get("SWADIFF_PROTOCOL_FDS", "3,4").split(","))
rd = os.fdopen(fin, "rb", buffering=0)
wr = os.fdopen(fout, "wb", buffering=0)


def read_frame():
    head = b""
    while not head.endswith(b"\n"):
        c = rd.read(1)
        if not c:
            sys.exit(0)
        head += c
    n = int(head)
    body = b""
    while len(body) < n:
        body += rd.read(n - len(body))
    return json.loads(body)


def write_frame(obj):
    data = json.dumps(obj).encode()
    wr.write(b"%d\n" % len(data) + data)


def write_npy(path, descr, shape, payload):
    d = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else ""))
    pad = 64 - (10 + len(d) + 1) % 64
    header = d + " " * (pad % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + payload)


hello = read_frame()
write_frame({"type": "hello", "protocol": 2 if mode == "badhello" else 1, "adapter": "misbehave",
             "backends": [dict({"name": mode, "description": "misbehaves: " + mode, "lse_base": "none"},
                               **({"tiles": json.loads(sys.argv[2]) if len(sys.argv) > 2 else {"q_rows": [64], "kv_keys": [0]}}
                                  if mode == "badtiles" else {}))]})
while True:
    msg = read_frame()
    if msg["type"] == "bye":
        sys.exit(0)
    p, d = msg["problem"], msg["dir"]
    n = p["total_qo"] * p["num_qo_heads"] * p["head_dim"]
    print("misbehave: run", msg["id"], mode, flush=True)
    if mode == "crash":
        print("misbehave: about to crash", flush=True)
        sys.exit(3)
    if mode == "hang":
        while True:
            time.sleep(1)
    if mode == "garbage":
        wr.write(b"Warning: something printed to the protocol pipe\n")
        continue
    if mode == "notjson":
        wr.write(b"9\n{not json")
        continue
    if mode == "error":
        write_frame({"type": "error", "message": "simulated: CUDA out of memory"})
        continue
    if mode == "chatty":
        runs = globals().get("runs", 0) + 1
        globals()["runs"] = runs
        sys.stderr.write(("misbehave: chatter %d " % runs) + "x" * (3 << 20) + "\n")
        sys.stderr.flush()
        if runs == 5:
            sys.exit(3)
        write_frame({"type": "error", "message": "simulated chatter"})
        continue
    if mode == "fifo":
        os.mkfifo(d + "/out.npy")
        write_frame({"type": "result", "out": "out.npy"})
        continue
    if mode == "twice":
        one = json.dumps({"type": "error", "message": "answer 1 to " + msg["id"]}).encode()
        two = json.dumps({"type": "error", "message": "answer 2 to " + msg["id"]}).encode()
        wr.write(b"%d\n" % len(one) + one + b"%d\n" % len(two) + two)
        continue
    if mode == "wrong_id":
        write_frame({"type": "error", "message": "simulated", "id": "other/" + msg["id"]})
        continue
    if mode == "shape":
        write_npy(d + "/out.npy", "<f2", [p["total_qo"], p["num_qo_heads"]], b"\0\0" * (n // p["head_dim"]))
    elif mode == "dtype":
        write_npy(d + "/out.npy", "<f4", [p["total_qo"], p["num_qo_heads"], p["head_dim"]], b"\0\0\0\0" * n)
    elif mode == "nan":
        write_npy(d + "/out.npy", "<f2", [p["total_qo"], p["num_qo_heads"], p["head_dim"]], b"\x00\x7e" * n)
    write_frame({"type": "result", "out": "out.npy"})
