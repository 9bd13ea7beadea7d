"""Oracle for tensor_stats_test: writes stats.pt (a torch.save dict of tensors
of every dtype, contiguous and strided views, edge cases), raw files for
uint16/32/64 (which torch 1.13, the first oracle, lacked) and every fp16/bf16
bit pattern, and stats.json with torch's figures for each.

Usage: stats_oracle.py OUT_DIR
"""
import json
import math
import sys

import numpy as np
import torch

out = sys.argv[1]
BINS = 37
RANGE = (-1.5, 2.25)
g = torch.Generator().manual_seed(1234)


def randn(*shape):
    return torch.randn(*shape, generator=g)


tensors = {}
floats = [torch.float32, torch.float64, torch.bfloat16, torch.float16]
ints = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8]
for dt in floats:
    name = str(dt).split(".")[1]
    base = (randn(64, 80) * 3 + 0.5).to(dt)
    tensors[name] = base
    tensors[name + "_t"] = base.t()                       # transposed view
    tensors[name + "_slice"] = base[3:40:3, 1::2]         # offset, strided both ways
    tensors[name + "_expand"] = base[5].expand(7, 80)     # stride 0
    odd = base.clone()
    odd[0, :5] = float("nan")
    odd[1, 3] = float("inf")
    odd[2, 7] = -float("inf")
    odd[3, :9] = 0.0
    odd[4, 0] = -0.0
    tensors[name + "_nonfinite"] = odd
    tensors[name + "_allnan"] = torch.full((5, 3), float("nan"), dtype=dt)
    tensors[name + "_equal"] = torch.full((6, 7), 2.5, dtype=dt)
    tensors[name + "_scalar"] = torch.tensor(-3.25, dtype=dt)
    tensors[name + "_empty"] = torch.empty(0, 4, dtype=dt)
for dt in ints:
    name = str(dt).split(".")[1]
    info = torch.iinfo(dt)
    lo, hi = max(info.min, -100000), min(info.max, 100000)
    base = torch.randint(lo, hi + 1, (50, 70), generator=g, dtype=torch.int64).to(dt)
    base[0, :4] = 0
    tensors[name] = base
    tensors[name + "_t"] = base.t()
    tensors[name + "_slice"] = base[2:30:4, ::3]
    tensors[name + "_extremes"] = torch.tensor([info.min, info.max, 0, 1, info.min], dtype=dt)
tensors["int64_huge"] = torch.tensor([2**62 + 1, -(2**63), 2**63 - 1, 12345, -(2**53) - 1], dtype=torch.int64)
tensors["bool"] = torch.rand(40, 30, generator=g) > 0.3
tensors["bool_t"] = tensors["bool"].t()
tensors["bool_empty"] = torch.empty(0, dtype=torch.bool)
tensors["bool_false"] = torch.zeros(9, dtype=torch.bool)
torch.save(tensors, f"{out}/stats.pt")


def histc_source(t):
    """The tensor whose torch.histc our histogram equals (see NOTE [Tensor statistics]).
    bf16 and fp16: histc counts in the input dtype (a bf16 bin stops at 256;
    torch 1.13 refused fp16), so both are compared on t.float() (exact)."""
    if t.dtype in (torch.float32, torch.float64):
        return t
    if t.dtype in (torch.bfloat16, torch.float16):
        return t.float()
    return t.double()


def num(x):
    return x if math.isfinite(x) else str(x)


def stats(t, exact_ints=None):
    """Figures for tensor t (exact_ints: the values as Python ints, for uint64)."""
    e = {"dtype": str(t.dtype), "numel": t.numel()}
    if t.dtype.is_floating_point:
        nan, inf = t.isnan(), t.isinf()
        e["nans"], e["posinfs"], e["neginfs"] = int(nan.sum()), int((inf & (t > 0)).sum()), int((inf & (t < 0)).sum())
        fin = t[~(nan | inf)]
    else:
        e["nans"] = e["posinfs"] = e["neginfs"] = 0
        fin = t.reshape(-1)
    e["zeros"] = int((t == 0).sum())
    e["finite"] = fin.numel()
    d = fin.double()
    e["mean"] = num(d.mean().item())
    e["std"] = num(d.std().item())
    e["var0"] = num(d.var(unbiased=False).item()) if fin.numel() else "nan"
    e["norm"] = d.norm().item()
    e["rms"] = (d.norm().item() / math.sqrt(fin.numel())) if fin.numel() else 0.0
    if fin.numel():
        if exact_ints is not None:
            e["min"], e["max"] = str(min(exact_ints)), str(max(exact_ints))
        elif t.dtype.is_floating_point:
            lo, hi = torch.aminmax(fin.float() if t.dtype == torch.float16 else fin)
            e["min"], e["max"] = repr(float(lo)), repr(float(hi))
        else:
            lo, hi = torch.aminmax(fin if t.dtype != torch.bool else fin.to(torch.uint8))
            e["min"], e["max"] = str(int(lo)), str(int(hi))
    # torch on fp32 / fp64 (finite data only); bf16 / fp16 on t.float(): torch's
    # own half reductions round to the half type (bf16 norm of 80x64 values off by 5 %).
    if t.dtype.is_floating_point and fin.numel() == t.numel() and t.numel() > 1:
        f = t.float() if t.dtype in (torch.bfloat16, torch.float16) else t
        e["native"] = {"mean": f.mean().item(), "std": f.std().item(), "norm": f.norm().item()}
    # Compared on the finite elements (torch 1.13's histc counted NaN in bin 0).
    src = histc_source(fin)
    if fin.numel():
        lo, hi = float(e["min"]), float(e["max"])
        e["hist_lo"], e["hist_hi"] = lo, hi
        # torch's own default range (min = max = 0 -> aminmax of the input)
        e["hist"] = [int(c) for c in torch.histc(src, BINS, 0, 0)]
    else:
        e["hist"] = [0] * BINS
    e["hist_range"] = [int(c) for c in torch.histc(src, BINS, *RANGE)]
    return e


expected = {"bins": BINS, "range": list(RANGE), "tensors": {}}
for k, t in tensors.items():
    expected["tensors"][k] = stats(t)

# A subtree: several tensors of different dtypes together.
group = ["float32", "float32_slice", "bfloat16_t", "int16", "float64_expand"]
vals = torch.cat([tensors[k].reshape(-1).double() for k in group])
glo, ghi = vals.min().item(), vals.max().item()
expected["group"] = {
    "names": group, "numel": vals.numel(), "mean": vals.mean().item(), "std": vals.std().item(),
    "norm": vals.norm().item(), "rms": vals.norm().item() / math.sqrt(vals.numel()),
    "min": glo, "max": ghi,
    "hist": [int(c) for c in sum(torch.histc(histc_source(tensors[k].reshape(-1)), BINS, glo, ghi) for k in group)],
}

# uint16/32/64: raw little-endian files (torch 1.13 had no such dtypes).
rng = np.random.default_rng(7)
expected["raw"] = {}
for name, npdt, top in [("uint16", np.uint16, 2**16), ("uint32", np.uint32, 2**32), ("uint64", np.uint64, 2**64)]:
    a = rng.integers(0, top, size=(30, 40), dtype=npdt, endpoint=False)
    a[0, 0], a[0, 1], a[0, 2] = 0, top - 1, 0
    a.astype(a.dtype.newbyteorder("<")).tofile(f"{out}/{name}.bin")
    exact = [int(x) for x in a.reshape(-1)]
    t = torch.tensor([float(x) for x in exact], dtype=torch.float64)
    e = stats(t)
    e["dtype"], e["min"], e["max"] = name, str(min(exact)), str(max(exact))
    e["zeros"] = sum(1 for x in exact if x == 0)
    e["shape"] = list(a.shape)
    expected["raw"][name] = e

# Every 16-bit pattern through torch's conversions to float32.
allbits = torch.arange(65536, dtype=torch.int32).to(torch.int16)
allbits.view(torch.float16).float().numpy().astype("<f4").tofile(f"{out}/fp16_all.bin")
allbits.view(torch.bfloat16).float().numpy().astype("<f4").tofile(f"{out}/bf16_all.bin")

with open(f"{out}/stats.json", "w") as f:
    json.dump(expected, f, indent=1)
