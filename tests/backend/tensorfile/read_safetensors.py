"""Reads a safetensors file with the safetensors package (safe_open, the reference
implementation, which also checks the header: offsets, sizes, alignment) and
writes {"metadata": {...}, "tensors": {name: [dtype, shape, hex]}} as JSON.

Usage: read_safetensors.py FILE OUT_JSON
"""
import json
import sys

import torch
from safetensors import safe_open

out = {"tensors": {}}
with safe_open(sys.argv[1], framework="pt") as f:
    out["metadata"] = f.metadata() or {}
    for name in f.keys():
        s = f.get_slice(name)
        t = f.get_tensor(name).contiguous().reshape(-1)
        raw = t.view(torch.uint8) if t.numel() else torch.empty(0, dtype=torch.uint8)
        out["tensors"][name] = [s.get_dtype(), list(s.get_shape()), raw.numpy().tobytes().hex()]
with open(sys.argv[2], "w") as f:
    json.dump(out, f)
