#!/usr/bin/python3
"""PyTorch-eager baseline of one Flamingo training iteration (bench/train_step).

Written by us, for comparison with bench_train_step (our LibTorch engine).
Same architecture and shapes as resources/presets/{tiny,small}.yaml and
bench/configs/compare.yaml (plus the config defaults), same step as backend/trainer/trainer_step.cpp:
  for each dataset (LAION, then MMC4): forward, label masking, shifted
  cross-entropy, backward of loss * loss_multiplier / grad_accum;
  then embedding-gradient row mask, global-norm clipping, AdamW with the two
  parameter groups (decay on gated cross-attention only), lr schedule, zero_grad.
Synthetic batches follow the same layout rules as backend/data/synthetic_source.cpp
(the values differ: the work is what matters, not equal numbers).

Usage: train_step_baseline.py PRESET THREADS [WARMUP] [ITERS]
Set OMP_NUM_THREADS / OPENBLAS_NUM_THREADS = THREADS in the environment too:
the script refuses to run when torch's or OpenBLAS's thread count differs.
"""
import contextlib
import ctypes
import math
import os
import random
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

# ---------------------------------------------------------------- presets
# Mirrors resources/presets/*.yaml + the config schema's defaults
# (vision mlp_ratio 4, ln_post_on_tokens false, weight_decay 0.1,
# max_grad_norm 1, betas (0.9, 0.999), eps 1e-8, grad_accum 1,
# loss_multiplier 1, laion max_tokens 32 by default, OPT dropout 0.1).
PRESETS = {
    "tiny": dict(
        vision=dict(image_size=32, patch_size=8, width=32, layers=2, heads=2, quick_gelu=False),
        perceiver=dict(depth=1, heads=2, head_dim=16, num_latents=4, ff_mult=2),
        xattn=dict(every_n=1, heads=2, head_dim=16, ff_mult=2),
        lm=dict(vocab=128, width=32, layers=2, heads=2, ffn=64, max_positions=128),
        tokens=dict(vocab=130, eos=2, pad=1, image=129, eoc=128),
        laion=dict(batch=4, max_tokens=16),
        mmc4=dict(batch=2, max_tokens=48, max_images=2),
        lr=1e-3, warmup=2, total=32,
    ),
    "small": dict(
        vision=dict(image_size=64, patch_size=16, width=128, layers=4, heads=4, quick_gelu=False),
        perceiver=dict(depth=2, heads=4, head_dim=32, num_latents=16, ff_mult=4),
        xattn=dict(every_n=2, heads=4, head_dim=32, ff_mult=4),
        lm=dict(vocab=1024, width=256, layers=4, heads=4, ffn=1024, max_positions=512),
        tokens=dict(vocab=1026, eos=2, pad=1, image=1025, eoc=1024),
        laion=dict(batch=8, max_tokens=32),
        mmc4=dict(batch=4, max_tokens=128, max_images=3),
        lr=3e-4, warmup=10, total=64,
    ),
    # bench/configs/compare.yaml: the engine-against-OpenFlamingo shapes (issue 27).
    "compare": dict(
        vision=dict(image_size=64, patch_size=8, width=128, layers=2, heads=4, quick_gelu=True),
        perceiver=dict(depth=2, heads=4, head_dim=32, num_latents=16, ff_mult=4),
        xattn=dict(every_n=2, heads=8, head_dim=64, ff_mult=4),
        lm=dict(vocab=512, width=128, layers=4, heads=4, ffn=512, max_positions=512),
        tokens=dict(vocab=514, eos=2, pad=1, image=513, eoc=512),
        laion=dict(batch=8, max_tokens=32),
        mmc4=dict(batch=4, max_tokens=128, max_images=3),
        lr=3e-4, warmup=10, total=64,
    ),
}
WEIGHT_DECAY = 0.1
MAX_GRAD_NORM = 1.0
OPT_DROPOUT = 0.1
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)


# ---------------------------------------------------------------- threads
def openblas_threads():
    """OpenBLAS's own thread count (None when no OpenBLAS is loaded in this process)."""
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "/" in line}
    libs = sorted(p for p in paths if os.path.basename(p).startswith("libopenblas") and ".so" in p)
    for path in libs:
        try:
            return int(ctypes.CDLL(path).openblas_get_num_threads())
        except (OSError, AttributeError):
            continue
    return None


def check_threads(threads):
    """Exits 1 unless torch and OpenBLAS both run exactly THREADS threads.

    Debian's torch does not bound OpenBLAS's pool with set_num_threads: only
    OPENBLAS_NUM_THREADS / OMP_NUM_THREADS in the environment do."""
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    torch.ones(2, 2) @ torch.ones(2, 2)  # loads the BLAS if it is not loaded yet
    got_torch, got_blas = torch.get_num_threads(), openblas_threads()
    if got_blas is None:
        sys.stderr.write("thread check: no libopenblas in this process; only torch's count is checked\n")
    if got_torch != threads or (got_blas is not None and got_blas != threads):
        sys.stderr.write(f"thread check failed: asked for {threads} threads, torch.get_num_threads()={got_torch}, "
                         f"openblas_get_num_threads()={got_blas}; set OMP_NUM_THREADS=OPENBLAS_NUM_THREADS="
                         f"MKL_NUM_THREADS={threads} in the environment\n")
        sys.exit(1)


# ---------------------------------------------------------------- model
class FeedForward(nn.Module):  # OpenFlamingo's FeedForward: LN, Linear, GELU, Linear (no bias)
    def __init__(self, dim, mult):
        super().__init__()
        self.net = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim * mult, bias=False), nn.GELU(),
                                 nn.Linear(dim * mult, dim, bias=False))

    def forward(self, x):
        return self.net(x)


class VitBlock(nn.Module):
    def __init__(self, width, heads, quick_gelu):
        super().__init__()
        self.heads = heads
        self.quick_gelu = quick_gelu
        self.ln_1 = nn.LayerNorm(width)
        self.in_proj = nn.Linear(width, 3 * width)
        self.out_proj = nn.Linear(width, width)
        self.ln_2 = nn.LayerNorm(width)
        self.c_fc = nn.Linear(width, 4 * width)
        self.c_proj = nn.Linear(4 * width, width)

    def forward(self, x):
        n, l, w = x.shape
        q, k, v = self.in_proj(self.ln_1(x)).chunk(3, -1)
        q, k, v = (t.view(n, l, self.heads, w // self.heads).transpose(1, 2) for t in (q, k, v))
        a = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(w // self.heads))
        o = torch.matmul(a.softmax(-1), v).transpose(1, 2).reshape(n, l, w)
        x = x + self.out_proj(o)
        h = self.c_fc(self.ln_2(x))
        h = h * torch.sigmoid(1.702 * h) if self.quick_gelu else F.gelu(h)
        return x + self.c_proj(h)


class VisionEncoder(nn.Module):  # OpenCLIP ViT, tokens out (no ln_post on tokens)
    def __init__(self, image_size, patch_size, width, layers, heads, quick_gelu):
        super().__init__()
        g = image_size // patch_size
        s = width ** -0.5
        self.conv1 = nn.Conv2d(3, width, patch_size, stride=patch_size, bias=False)
        self.class_embedding = nn.Parameter(torch.randn(width) * s)
        self.positional_embedding = nn.Parameter(torch.randn(g * g + 1, width) * s)
        self.ln_pre = nn.LayerNorm(width)
        self.blocks = nn.ModuleList(VitBlock(width, heads, quick_gelu) for _ in range(layers))

    def forward(self, images):
        n = images.shape[0]
        x = self.conv1(images)
        x = x.reshape(n, x.shape[1], -1).permute(0, 2, 1)
        x = torch.cat([self.class_embedding.view(1, 1, -1).expand(n, 1, x.shape[2]), x], 1)
        x = self.ln_pre(x + self.positional_embedding)
        for b in self.blocks:
            x = b(x)
        return x[:, 1:]


class PerceiverAttention(nn.Module):
    def __init__(self, dim, heads, head_dim):
        super().__init__()
        self.heads, self.head_dim = heads, head_dim
        inner = heads * head_dim
        self.norm_media = nn.LayerNorm(dim)
        self.norm_latents = nn.LayerNorm(dim)
        self.to_q = nn.Linear(dim, inner, bias=False)
        self.to_kv = nn.Linear(dim, 2 * inner, bias=False)
        self.to_out = nn.Linear(inner, dim, bias=False)

    def _heads(self, x):
        b, t, n, d = x.shape
        return x.view(b, t, n, self.heads, d // self.heads).permute(0, 3, 1, 2, 4)

    def forward(self, x, latents):
        x = self.norm_media(x)
        lat = self.norm_latents(latents)
        q = self._heads(self.to_q(lat)) * self.head_dim ** -0.5
        k, v = self.to_kv(torch.cat([x, lat], -2)).chunk(2, -1)
        k, v = self._heads(k), self._heads(v)
        sim = torch.matmul(q, k.transpose(-2, -1))
        sim = sim - sim.amax(-1, keepdim=True).detach()
        out = torch.matmul(sim.softmax(-1), v)
        b, h, t, n, d = out.shape
        return self.to_out(out.permute(0, 2, 3, 1, 4).reshape(b, t, n, h * d))


class Perceiver(nn.Module):
    def __init__(self, dim, depth, heads, head_dim, num_latents, ff_mult):
        super().__init__()
        self.latents = nn.Parameter(torch.randn(num_latents, dim))
        self.layers = nn.ModuleList(
            nn.ModuleList([PerceiverAttention(dim, heads, head_dim), FeedForward(dim, ff_mult)]) for _ in range(depth))
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):  # (B, T, F, v, D)
        b, t, f, v, d = x.shape
        x = x.reshape(b, t, f * v, d)
        lat = self.latents.view(1, 1, *self.latents.shape).expand(b, t, -1, -1)
        for attn, ff in self.layers:
            lat = attn(x, lat) + lat
            lat = ff(lat) + lat
        return self.norm(lat)


class MaskedCrossAttention(nn.Module):
    def __init__(self, dim, dim_visual, heads, head_dim):
        super().__init__()
        self.heads, self.head_dim = heads, head_dim
        inner = heads * head_dim
        self.norm = nn.LayerNorm(dim)
        self.to_q = nn.Linear(dim, inner, bias=False)
        self.to_kv = nn.Linear(dim_visual, 2 * inner, bias=False)
        self.to_out = nn.Linear(inner, dim, bias=False)

    def forward(self, x, media, text_time):
        b, l, _ = x.shape
        t_img, n = media.shape[1], media.shape[2]
        q = self.to_q(self.norm(x)).view(b, l, self.heads, self.head_dim).transpose(1, 2) * self.head_dim ** -0.5
        k, v = self.to_kv(media.reshape(b, t_img * n, media.shape[3])).chunk(2, -1)
        k = k.view(b, t_img * n, self.heads, self.head_dim).transpose(1, 2)
        v = v.view(b, t_img * n, self.heads, self.head_dim).transpose(1, 2)
        sim = torch.matmul(q, k.transpose(-2, -1))
        media_time = torch.arange(1, t_img + 1).repeat_interleave(n)
        allowed = text_time.view(b, 1, l, 1).eq(media_time.view(1, 1, 1, -1))
        sim = sim.masked_fill(~allowed, torch.finfo(sim.dtype).min)
        sim = sim - sim.amax(-1, keepdim=True).detach()
        attn = sim.softmax(-1).masked_fill(text_time.eq(0).view(b, 1, l, 1), 0.0)
        out = torch.matmul(attn, v).transpose(1, 2).reshape(b, l, self.heads * self.head_dim)
        return self.to_out(out)


class GatedCrossAttentionBlock(nn.Module):
    def __init__(self, dim, dim_visual, heads, head_dim, ff_mult):
        super().__init__()
        self.attn = MaskedCrossAttention(dim, dim_visual, heads, head_dim)
        self.attn_gate = nn.Parameter(torch.zeros(1))
        self.ff = FeedForward(dim, ff_mult)
        self.ff_gate = nn.Parameter(torch.zeros(1))

    def forward(self, x, media, text_time):
        x = self.attn(x, media, text_time) * self.attn_gate.tanh() + x
        return self.ff(x) * self.ff_gate.tanh() + x


class OptDecoderLayer(nn.Module):  # pre-LN OPT block, ReLU fc1/fc2, dropout 0.1
    def __init__(self, width, heads, ffn):
        super().__init__()
        self.heads = heads
        self.k_proj = nn.Linear(width, width)
        self.v_proj = nn.Linear(width, width)
        self.q_proj = nn.Linear(width, width)
        self.out_proj = nn.Linear(width, width)
        self.self_attn_layer_norm = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, ffn)
        self.fc2 = nn.Linear(ffn, width)
        self.final_layer_norm = nn.LayerNorm(width)

    def forward(self, hidden, bias):
        b, l, w = hidden.shape
        hd = w // self.heads
        h = self.self_attn_layer_norm(hidden)
        q = (self.q_proj(h) * hd ** -0.5).view(b, l, self.heads, hd).transpose(1, 2)
        k = self.k_proj(h).view(b, l, self.heads, hd).transpose(1, 2)
        v = self.v_proj(h).view(b, l, self.heads, hd).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) + bias
        o = torch.matmul(scores.softmax(-1), v).transpose(1, 2).reshape(b, l, w)
        h = hidden + F.dropout(self.out_proj(o), OPT_DROPOUT, self.training)
        f = self.fc2(F.relu(self.fc1(self.final_layer_norm(h))))
        return h + F.dropout(f, OPT_DROPOUT, self.training)


class Flamingo(nn.Module):
    def __init__(self, p):
        super().__init__()
        v, pc, xa, lm, tk = p["vision"], p["perceiver"], p["xattn"], p["lm"], p["tokens"]
        self.image_id, self.eoc_id = tk["image"], tk["eoc"]
        self.vision_encoder = VisionEncoder(**v)
        self.perceiver = Perceiver(v["width"], **pc)
        self.embed_tokens = nn.Embedding(tk["vocab"], lm["width"])  # resized to the tokenizer length
        self.embed_positions = nn.Embedding(lm["max_positions"] + 2, lm["width"])  # OPT offset 2
        self.layers = nn.ModuleList(OptDecoderLayer(lm["width"], lm["heads"], lm["ffn"]) for _ in range(lm["layers"]))
        self.xattn = nn.ModuleList(
            GatedCrossAttentionBlock(lm["width"], v["width"], xa["heads"], xa["head_dim"], xa["ff_mult"])
            if (i + 1) % xa["every_n"] == 0 else nn.Identity() for i in range(lm["layers"]))
        self.final_layer_norm = nn.LayerNorm(lm["width"])
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, std=0.02)
        with torch.no_grad():
            self.embed_tokens.weight.normal_(std=0.02)
            self.embed_tokens.weight[tk["pad"]].zero_()

    def freeze_as_openflamingo(self):
        for q in self.parameters():
            q.requires_grad_(False)
        for q in self.perceiver.parameters():
            q.requires_grad_(True)
        for q in self.xattn.parameters():
            q.requires_grad_(True)
        self.embed_tokens.weight.requires_grad_(True)  # tied head trains with it

    def forward(self, vision_x, input_ids, attention_mask):
        b, t, f = vision_x.shape[:3]
        with torch.no_grad():
            feats = self.vision_encoder(vision_x.reshape(b * t * f, *vision_x.shape[3:]))
        media = self.perceiver(feats.view(b, t, f, feats.shape[1], feats.shape[2]))
        text_time = input_ids.eq(self.image_id).long().cumsum(-1)
        l = input_ids.shape[1]
        positions = attention_mask.cumsum(1) * attention_mask - 1
        h = self.embed_tokens(input_ids) + self.embed_positions(positions + 2)
        keep = torch.ones(l, l, dtype=torch.bool).tril().view(1, 1, l, l) & attention_mask.ne(0).view(b, 1, 1, l)
        bias = torch.where(keep, torch.zeros(()), torch.full((), torch.finfo(torch.float32).min))
        for xa, layer in zip(self.xattn, self.layers):
            if not isinstance(xa, nn.Identity):
                h = xa(h, media, text_time)
            h = layer(h, bias)
        return F.linear(self.final_layer_norm(h), self.embed_tokens.weight)


# ---------------------------------------------------------------- synthetic batches
def text_id(rng, tk):
    while True:
        i = rng.randrange(tk["vocab"])
        if i not in (tk["pad"], tk["eos"], tk["image"], tk["eoc"]):
            return i


def laion_sample(rng, L, tk):
    cap = rng.randint(L - 2, L + 8) if rng.random() < 0.2 else rng.randint(1, L - 3)
    seq = [tk["image"]] + [text_id(rng, tk) for _ in range(max(1, cap))] + [tk["eoc"], tk["eos"]]
    return seq[:L]


def mmc4_sample(rng, L, max_images, tk):
    while True:
        n = rng.randint(1, max_images)
        lead = 0 if rng.random() < 0.5 else rng.randint(1, 4)
        budget = max(n, L - lead - 2 * n - 1)
        total = budget * 3 // 2 + 1 if rng.random() < 0.25 else rng.randint(n, budget)
        rest = total - n
        seq = [text_id(rng, tk) for _ in range(lead)]
        for i in range(n):
            extra = rest if i + 1 == n else min(rest, rng.randint(0, 2 * rest // (n - i)))
            rest -= extra
            if i > 0:
                seq.append(tk["eoc"])
            seq.append(tk["image"])
            seq += [text_id(rng, tk) for _ in range(1 + extra)]
        seq = (seq + [tk["eoc"], tk["eos"]])[:L]
        kept = seq.count(tk["image"])
        if kept == 1 and (rng.random() < 0.5 or seq[-1] == tk["image"]):
            continue
        return seq, n


def make_batch(rng, p, kind):
    tk, side = p["tokens"], p["vision"]["image_size"]
    d = p[kind]
    B = d["batch"]
    if kind == "laion":
        seqs, T = [laion_sample(rng, d["max_tokens"], tk) for _ in range(B)], 1
        n_img = [1] * B
        L = max(len(s) for s in seqs)
    else:
        T, L = d["max_images"], d["max_tokens"]
        out = [mmc4_sample(rng, L, T, tk) for _ in range(B)]
        seqs, n_img = [s for s, _ in out], [n for _, n in out]
    ids = torch.full((B, L), tk["pad"], dtype=torch.long)
    mask = torch.zeros((B, L), dtype=torch.long)
    for b, s in enumerate(seqs):
        ids[b, :len(s)] = torch.tensor(s)
        mask[b, :len(s)] = 1
    images = torch.zeros(B, T, 1, 3, side, side)
    mean = torch.tensor(CLIP_MEAN).view(3, 1, 1)
    std = torch.tensor(CLIP_STD).view(3, 1, 1)
    for b in range(B):
        images[b, :n_img[b], 0] = (torch.rand(n_img[b], 3, side, side) - mean) / std
    return images, ids, mask


def laion_labels(ids, tk):
    labels = ids.clone()
    labels[ids == tk["pad"]] = -100
    labels[ids == tk["image"]] = -100
    return labels


def mmc4_labels(ids, tk):  # OpenFlamingo's rules: mask before the first <image> and after each <|endofchunk|>
    rows = ids.tolist()
    for r in rows:
        n = len(r)
        for i in range(n):
            if r[i] == tk["pad"]:
                r[i] = -100
        i = 0
        while i < n and r[i] != tk["image"]:
            r[i] = -100
            i += 1
        for e in [j for j in range(i, n) if r[j] == tk["eoc"]]:
            j = e + 1
            while j < n and r[j] != tk["image"]:
                r[j] = -100
                j += 1
        for j in range(n):
            if r[j] == tk["image"]:
                r[j] = -100
    return torch.tensor(rows, dtype=torch.long)


def lr_multiplier(step, warmup, total):  # cosine with linear warmup (backend/step/schedule.cpp)
    if step < warmup:
        return step / max(1, warmup)
    progress = (step - warmup) / max(1, total - warmup)
    return max(0.0, 0.5 * (1.0 + math.cos(math.pi * progress)))


class Trainer:
    """The optimizer, row mask and one training step (shared with bench/ddp/ddp_baseline.py).

    `forward` is the module called on a batch (the model, or its DistributedDataParallel wrapper);
    `backward_context(last)` wraps each dataset's forward and backward (DDP's no_sync, or nothing)."""

    def __init__(self, model, p, forward=None):
        self.model, self.p, self.forward = model, p, forward or model
        self.tk = p["tokens"]
        named = [(n, q) for n, q in model.named_parameters() if q.requires_grad]
        decay = [q for n, q in named if n.startswith("xattn")]
        no_decay = [q for n, q in named if not n.startswith("xattn")]
        self.params = decay + no_decay
        self.opt = torch.optim.AdamW([{"params": decay, "weight_decay": WEIGHT_DECAY},
                                      {"params": no_decay, "weight_decay": 0.0}],
                                     lr=p["lr"], betas=(0.9, 0.999), eps=1e-8)
        self.row_mask = torch.zeros(self.tk["vocab"], 1)
        self.row_mask[self.tk["image"]] = 1
        self.row_mask[self.tk["eoc"]] = 1
        self.step = 0

    def train_step(self, batches, backward_context=lambda last: contextlib.nullcontext()):
        tk = self.tk
        for i, (kind, (images, ids, mask)) in enumerate(zip(("laion", "mmc4"), batches)):
            labels = laion_labels(ids, tk) if kind == "laion" else mmc4_labels(ids, tk)
            with backward_context(i + 1 == len(batches)):
                logits = self.forward(images, ids, mask)
                V = logits.shape[-1]
                loss = F.cross_entropy(logits[:, :-1].reshape(-1, V).float(), labels[:, 1:].reshape(-1),
                                       ignore_index=-100)
                if not math.isfinite(loss.item()):
                    raise SystemExit("non-finite loss")
                (loss * (1.0 / 1.0)).backward()
        self.model.embed_tokens.weight.grad.mul_(self.row_mask)
        grads = [q.grad for q in self.params if q.grad is not None]
        total = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g, 2) for g in grads]), 2)
        norm = total.item()  # clip_grad_norm_ as backend/step/grad_clip.cpp does it
        if not math.isfinite(norm):
            raise SystemExit("non-finite gradient norm")
        coef = torch.clamp(MAX_GRAD_NORM / (total + 1e-6), max=1.0)
        coef.item()
        for g in grads:
            g.mul_(coef)
        m = lr_multiplier(self.step, self.p["warmup"], self.p["total"])
        for g in self.opt.param_groups:
            g["lr"] = self.p["lr"] * m
        self.opt.step()
        self.step += 1
        self.opt.zero_grad(set_to_none=True)


def batch_pool(p, seed):
    rng = random.Random(seed)
    return [[make_batch(rng, p, k) for k in ("laion", "mmc4")] for _ in range(16)]


def main():
    preset = sys.argv[1] if len(sys.argv) > 1 else "tiny"
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    warmup = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    iters = int(sys.argv[4]) if len(sys.argv) > 4 else 30
    if preset not in PRESETS:
        raise SystemExit(f"unknown preset {preset!r}; known: {', '.join(PRESETS)}")
    check_threads(threads)
    p = PRESETS[preset]
    torch.manual_seed(42)
    model = Flamingo(p)
    model.freeze_as_openflamingo()
    model.train()
    trainer = Trainer(model, p)
    pool = batch_pool(p, 42)
    samples_per_step = p["laion"]["batch"] + p["mmc4"]["batch"]
    times = []
    for it in range(warmup + iters):
        batches = pool[it % len(pool)]
        t0 = time.perf_counter()
        trainer.train_step(batches)
        dt = time.perf_counter() - t0
        if it >= warmup:
            times.append(dt)
    med = statistics.median(times)
    print(f"python preset={preset} threads={threads} warmup={warmup} iters={iters} "
          f"median_step_ms={med * 1e3:.3f} min_step_ms={min(times) * 1e3:.3f} max_step_ms={max(times) * 1e3:.3f} "
          f"samples_per_s={samples_per_step / med:.2f}")


if __name__ == "__main__":
    main()
