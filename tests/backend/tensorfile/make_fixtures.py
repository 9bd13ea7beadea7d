"""Writes the oracle files for the tensorfile tests into OUT_DIR.

Usage: make_fixtures.py OUT_DIR

Every file is written by real PyTorch (torch.save; FS_PYTHON, the project's
Python environment) or by Python's own pickle / zipfile / struct + json;
expected.json holds, per file, the value tree in the canonical text form the
C++ tests print (see canon() and tensorfile_test_util.h), tensors included
bit-exactly as hex of their contiguous bytes.
"""
import collections
import io
import json
import os
import pickle
import struct
import sys
import zipfile

import torch
import torch._utils

OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)
torch.manual_seed(0)


class Thing:
    """A class the reader does not know: becomes an Object."""

    def __init__(self, a):
        self.a = a


def raw(t):
    t = t.detach()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return t.contiguous().numpy().tobytes().hex()


def canon(x):
    if x is None:
        return "N"
    if isinstance(x, bool):
        return "T" if x else "F"
    if isinstance(x, int):
        return "i%d" % x
    if isinstance(x, float):
        return "f" + struct.pack(">d", x).hex()
    if isinstance(x, str):
        b = x.encode("utf-8")
        return "s%d:%s" % (len(b), x)
    if isinstance(x, (bytes, bytearray)):
        return "b%d:%s" % (len(x), bytes(x).hex())
    if isinstance(x, torch.Tensor):
        return "tensor(%s|%s|%s|%d|rg=%d|param=%d|%s)" % (
            str(x.dtype), list(x.shape), list(x.stride()), x.storage_offset(), int(x.requires_grad),
            int(isinstance(x, torch.nn.Parameter)), raw(x))
    if isinstance(x, torch.device):
        return "device(%s)" % str(x)
    if isinstance(x, torch.dtype):
        return "dtype(%s)" % str(x)
    if isinstance(x, list):
        return "[" + "".join(canon(v) + "," for v in x) + "]"
    if isinstance(x, tuple):
        return "(" + "".join(canon(v) + "," for v in x) + ")"
    if isinstance(x, dict):
        body = "".join(canon(k) + ":" + canon(v) + "," for k, v in x.items())
        return ("O{" if isinstance(x, collections.OrderedDict) else "{") + body + "}"
    if isinstance(x, frozenset):
        return "Z{" + "".join(canon(v) + "," for v in x) + "}"
    if isinstance(x, set):
        return "S{" + "".join(canon(v) + "," for v in x) + "}"
    return "obj(%s.%s)" % (type(x).__module__, type(x).__qualname__)


def flat_tensors(x, prefix=""):
    """(name, tensor) pairs as flattenTensors names them (dicts and sequences)."""
    out = []
    join = lambda k: k if not prefix else prefix + "." + k
    if isinstance(x, torch.Tensor):
        return [(prefix, x)]
    if isinstance(x, dict):
        for k, v in x.items():
            out += flat_tensors(v, join(str(k)))
    elif isinstance(x, (list, tuple)) and not isinstance(x, torch.Size):
        for i, v in enumerate(x):
            out += flat_tensors(v, join(str(i)))
    return out


expected = {}


def record(name, obj, **extra):
    tensors = flat_tensors(obj)
    ptrs = {}
    groups = []
    for n, t in tensors:
        p = t.storage().data_ptr()
        groups.append([n, ptrs.setdefault(p, len(ptrs))])
    expected[name] = dict(canon=canon(obj), tensors=groups, **extra)


def save(name, obj, **kw):
    torch.save(obj, os.path.join(OUT, name), **kw)
    record(name, obj)


# --- a state dict of every dtype and layout ---------------------------------
sd = collections.OrderedDict()
sd["f64"] = torch.randn(2, 3, dtype=torch.float64)
sd["f32"] = torch.randn(4, 5)
sd["f16"] = torch.randn(3, dtype=torch.float16)
sd["bf16"] = torch.randn(2, 2).to(torch.bfloat16)
sd["i64"] = torch.tensor([-(2**63), 2**63 - 1, 0, -1])
sd["i32"] = torch.tensor([-(2**31), 2**31 - 1], dtype=torch.int32)
sd["i16"] = torch.tensor([-300, 300], dtype=torch.int16)
sd["i8"] = torch.tensor([-128, 127], dtype=torch.int8)
sd["u8"] = torch.tensor([0, 255], dtype=torch.uint8)
sd["bool"] = torch.tensor([True, False, True])
sd["c64"] = torch.randn(2, dtype=torch.complex64)
sd["c128"] = torch.randn(2, dtype=torch.complex128)
sd["scalar"] = torch.tensor(3.5)
sd["scalar_bf16"] = torch.tensor(-1.25, dtype=torch.bfloat16)
sd["empty"] = torch.zeros(0, 3)
base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
sd["base"] = base
sd["transposed"] = base.t()                # non-contiguous view of base's storage
sd["column"] = base[:, 2]                  # offset 2, stride 6
whole = torch.arange(10, dtype=torch.int64)
sd["first_half"] = whole[:5]               # two tensors, one storage,
sd["second_half"] = whole[5:]              # different offsets
sd["param"] = torch.nn.Parameter(torch.randn(3, 2))
sd["frozen_param"] = torch.nn.Parameter(torch.randn(2), requires_grad=False)
sd["grad_leaf"] = torch.randn(2).requires_grad_()
sd["expanded"] = torch.randn(3, 1).expand(3, 4)  # stride 0
tagged = torch.ones(2)
tagged.note = "hello"                      # pickled through _rebuild_from_type_v2
sd["tagged"] = tagged
save("state_dict.pt", sd)
save("state_dict_p4.pt", sd, pickle_protocol=4)

# --- an OpenFlamingo-style training checkpoint -------------------------------
model = torch.nn.Sequential(torch.nn.Embedding(5, 4), torch.nn.Linear(4, 3), torch.nn.LayerNorm(3))
decay = [p for n, p in model.named_parameters() if n.endswith("weight")]
no_decay = [p for n, p in model.named_parameters() if not n.endswith("weight")]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}], lr=1e-3)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: min(1.0, (step + 1) / 10))
for _ in range(2):
    model(torch.tensor([[1, 2, 3]])).sum().backward()
    opt.step()
    sched.step()
    opt.zero_grad()
ckpt = {
    "epoch": 3,
    "model_state_dict": model.state_dict(),
    "optimizer_state_dict": opt.state_dict(),
    "lr_scheduler_state_dict": sched.state_dict(),
}
save("checkpoint.pt", ckpt)
expected["checkpoint.pt"]["model_keys"] = list(model.state_dict().keys())
metadata = model.state_dict()._metadata
expected["checkpoint.pt"]["metadata_keys"] = list(metadata.keys())

# --- plain values of every kind ------------------------------------------------
shared = [1, "two"]
misc = {
    "none": None, "true": True, "false": False,
    "ints": [0, 1, -1, 255, 256, 65535, 65536, -(2**31), 2**31 - 1, 2**31, 2**63 - 1, -(2**63), 2**64,
             -(2**64) - 1, 10**40, -(10**40)],
    "floats": [0.0, -0.0, 1.5, -2.25, 1e300, 5e-324, float("inf"), float("-inf"), 3.141592653589793],
    "str": "hello", "unicode": "h\u00e9llo w\u00f6rld \u2713 \U0001d11e", "empty_str": "",
    "bytes": b"\x00\x01\xff", "empty_bytes": b"", "bytearray": bytearray(b"ab\x80"),
    "nested": [1, (2, [3, (None, "x")]), {"a": [b"y"]}],
    "tuple1": (1,), "empties": ([], (), {}),
    "int_keys": {0: "a", 1: "b", -5: "c"},
    "mixed_keys": {1: "int", "x": "str", (1, "t"): "tuple", None: "none", 2.5: "float"},
    "set": {1, 2, 3}, "frozenset": frozenset({"a"}),
    "size": torch.Size([2, 3]), "device": torch.device("cpu"), "cuda": torch.device("cuda", 1),
    "dtype": torch.bfloat16,
    "tensors": [torch.tensor([1, 2]), (torch.tensor(1.5),)],
    "shared": [shared, shared],
    "thing": Thing(7),
}
save("misc.pt", misc)
save("misc_p4.pt", misc, pickle_protocol=4)

# --- legacy (pre-1.6) format: must be recognised and refused ------------------
torch.save({"x": torch.ones(2)}, os.path.join(OUT, "legacy.pt"), _use_new_zipfile_serialization=False)

# --- plain pickles, protocols 0-5 (no torch) -----------------------------------
plain = {k: v for k, v in misc.items() if k not in ("size", "device", "cuda", "dtype", "tensors")}
for proto in range(6):
    name = "plain_p%d.pkl" % proto
    with open(os.path.join(OUT, name), "wb") as f:
        pickle.dump(plain, f, protocol=proto)
    expected[name] = dict(canon=canon(plain))

# --- PyTorch 2.x forms, written by hand: typed and untyped storages,
# _rebuild_tensor_v2 with metadata, _rebuild_tensor_v3, parameters with state,
# a byteorder record. Functions this torch lacks are registered for pickling.
def _fake(name):
    def fn(*args):
        raise RuntimeError("never called")
    fn.__module__, fn.__name__, fn.__qualname__ = "torch._utils", name, name
    if not hasattr(torch._utils, name):
        setattr(torch._utils, name, fn)
    return getattr(torch._utils, name)


class Storage:
    def __init__(self, stype, key, numel):
        self.pid = ("storage", stype, key, "cpu", numel)


class Call:
    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return (self.fn, self.args)


class Pickler2x(pickle.Pickler):
    def persistent_id(self, obj):
        return obj.pid if isinstance(obj, Storage) else None


a = torch.randn(2, 3)
b = torch.arange(6, dtype=torch.int32)
c = torch.randn(4).to(torch.bfloat16)
untyped = Storage(torch.UntypedStorage, "1", b.numel() * 4)
v2x = collections.OrderedDict()
v2x["a"] = Call(torch._utils._rebuild_tensor_v2, Storage(torch.FloatStorage, "0", 6), 0, (2, 3), (3, 1), False,
                collections.OrderedDict(), None)
v2x["b_view"] = Call(_fake("_rebuild_tensor_v3"), untyped, 2, (2, 2), (1, 2), False, collections.OrderedDict(),
                     torch.int32)
v2x["p"] = Call(_fake("_rebuild_parameter_with_state"),
                Call(torch._utils._rebuild_tensor_v2, Storage(torch.BFloat16Storage, "2", 4), 0, (4,), (1,), False,
                     collections.OrderedDict()), True, collections.OrderedDict(), {"extra": 1})
v2x["meta"] = Call(torch._utils._rebuild_meta_tensor_no_storage, torch.float16, (5, 7), (7, 1), False)
buf = io.BytesIO()
Pickler2x(buf, protocol=2).dump(v2x)
with zipfile.ZipFile(os.path.join(OUT, "torch2x.pt"), "w", zipfile.ZIP_STORED) as z:
    z.writestr("archive/data.pkl", buf.getvalue())
    z.writestr("archive/byteorder", "little")
    z.writestr("archive/data/0", a.numpy().tobytes())
    z.writestr("archive/data/1", b.numpy().tobytes())
    z.writestr("archive/data/2", c.view(torch.int16).numpy().tobytes())
    z.writestr("archive/version", "3\n")
    z.writestr("archive/.data/serialization_id", "1234")
b_view = torch.as_strided(b, (2, 2), (1, 2), 2)
p = torch.nn.Parameter(c.clone())
expected["torch2x.pt"] = dict(canon="O{" + canon("a") + ":" + canon(a) + "," + canon("b_view") + ":" + canon(b_view) +
                                    "," + canon("p") + ":" + canon(p) + "," + canon("meta") +
                                    ":meta(torch.float16|[5, 7]|[7, 1])," + "}")

# --- a Hugging Face style sharded pytorch_model.bin checkpoint ---------------
shards = [collections.OrderedDict(w1=torch.randn(2, 2), b1=torch.randn(2)),
          collections.OrderedDict(w2=torch.randn(3, 2).half())]
index = {"metadata": {"total_size": 0}, "weight_map": {}}
for i, shard in enumerate(shards):
    fname = "pytorch_model-%05d-of-00002.bin" % (i + 1)
    os.makedirs(os.path.join(OUT, "hf_bin"), exist_ok=True)
    torch.save(shard, os.path.join(OUT, "hf_bin", fname))
    for k, v in shard.items():
        index["weight_map"][k] = fname
        index["metadata"]["total_size"] += v.numel() * v.element_size()
        expected.setdefault("hf_bin", {})[k] = canon(v)
with open(os.path.join(OUT, "hf_bin", "pytorch_model.bin.index.json"), "w") as f:
    json.dump(index, f)

with open(os.path.join(OUT, "expected.json"), "w") as f:
    json.dump(expected, f, indent=1, ensure_ascii=False)
print("wrote", len(expected), "fixtures to", OUT)
