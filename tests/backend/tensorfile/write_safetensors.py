"""Writes a safetensors file by hand (struct + json, no safetensors library),
the way the reference writer lays it out, plus the expected values as JSON.

Usage: write_safetensors.py OUT_FILE OUT_JSON
"""
import json
import struct
import sys

tensors = {  # name -> (dtype, shape, raw bytes); deliberately not in offset order
    "z.weight": ("F32", [2, 2], struct.pack("<4f", 1.0, -2.0, 3.5, 0.25)),
    "a.bias": ("BF16", [3], bytes.fromhex("803f0040c0c0")),
    "scalar": ("I64", [], struct.pack("<q", -(2**40))),
    "empty": ("F16", [0, 4], b""),
    "mask": ("BOOL", [4], bytes([1, 0, 0, 1])),
    "ids": ("U8", [2], bytes([7, 255])),
}
order = ["a.bias", "mask", "z.weight", "empty", "scalar", "ids"]  # data layout order
header, offset, data = {"__metadata__": {"format": "pt", "note": "by hand"}}, 0, b""
for name in order:
    dtype, shape, raw = tensors[name]
    header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
    offset += len(raw)
    data += raw
# Header order in the file differs from data order.
text = json.dumps({k: header[k] for k in ["__metadata__", "z.weight", "a.bias", "scalar", "empty", "mask", "ids"]})
text += " " * ((8 - len(text) % 8) % 8)
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text.encode() + data)
with open(sys.argv[2], "w") as f:
    json.dump({"metadata": header["__metadata__"],
               "tensors": {k: [v[0], v[1], v[2].hex()] for k, v in tensors.items()}}, f)
