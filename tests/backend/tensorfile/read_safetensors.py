"""Reads a safetensors file with struct + json only (an independent reader) and
writes {"metadata": {...}, "tensors": {name: [dtype, shape, hex]}} as JSON.

Usage: read_safetensors.py FILE OUT_JSON
"""
import json
import struct
import sys

with open(sys.argv[1], "rb") as f:
    blob = f.read()
(n,) = struct.unpack("<Q", blob[:8])
assert n % 8 == 0, "header not padded to 8 bytes"
header = json.loads(blob[8:8 + n].decode("utf-8"))
data = blob[8 + n:]
out = {"metadata": header.pop("__metadata__", {}), "tensors": {}}
for name, t in header.items():
    b, e = t["data_offsets"]
    out["tensors"][name] = [t["dtype"], t["shape"], data[b:e].hex()]
with open(sys.argv[2], "w") as f:
    json.dump(out, f)
