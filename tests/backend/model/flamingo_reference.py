#!/usr/bin/env python3
"""Independent PyTorch reference of the Flamingo forward pass (test oracle).

The vision tower is open_clip's own VisionTransformer (the pinned open-clip-torch),
loaded with the case's weights. The rest is written from the documented math with
plain torch ops, reading the weights by their OpenFlamingo state-dict names:
OpenFlamingo's perceiver and masked cross-attention (einsum form), and the OPT and
MPT (MPT-7B and MosaicGPT names) decoders as Hugging Face transformers 4.28 and
MosaicML compute them (masks, ALiBi).

Kept only for what OpenFlamingo's own code (openflamingo_parity_test.cpp, through
openflamingo_oracle.py) cannot build with the pinned packages:
  - MosaicGPT (anas-awadalla/mpt-1b-redpajama-200b, OpenFlamingo-3B's LM): its
    modelling code is remote code on the Hub, not in transformers; QK LayerNorm;
  - ln_post on the patch tokens (open_clip after 2.20; the pinned 2.20 applies
    ln_post to the pooled output only) and a GELU (not QuickGELU) tower with MPT;
  - OPT, for tests/backend/trainer/replay_reference.py (flamingo-train replay's
    oracle), which builds its step on this forward.
GPT-NeoX and LLaMA were removed: openflamingo_parity_test checks them against
transformers' own modules.

usage: flamingo_reference.py ROOT
  ROOT/<case>/{config.json, weights.pt, inputs.pt} -> ROOT/<case>/logits.bin
  (float32, C order, shape (B, L, V) as in config.json's "logits_shape").
"""
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

torch.set_grad_enabled(False)
FMIN = torch.finfo(torch.float32).min


def ln(x, P, name, eps=1e-5):
    bias = P.get(name + ".bias")
    return F.layer_norm(x, (x.shape[-1],), P[name + ".weight"], bias, eps)


def linear(x, P, name):
    return F.linear(x, P[name + ".weight"], P.get(name + ".bias"))


# ----------------------------------------------------------------------------- vision (open_clip)
def vision_tower(P, c, images):
    """open_clip's own VisionTransformer (the pinned open-clip-torch 2.20.0, transformer.py), built
    from the case's shape and loaded with its weights; the patch tokens OpenFlamingo takes (forward()[1]).

    open_clip 2.20 applies ln_post to the pooled output only; later versions (and our
    ln_post_on_tokens) apply it to every token first, which is ln_post on the tokens here."""
    from open_clip.transformer import QuickGELU, VisionTransformer

    p = "vision_encoder."
    sd = {k[len(p):]: v for k, v in P.items() if k.startswith(p)}
    width = sd["conv1.weight"].shape[0]
    vt = VisionTransformer(image_size=images.shape[-1], patch_size=c["patch_size"], width=width,
                           layers=c["vision_layers"], heads=c["vision_heads"],
                           mlp_ratio=sd["transformer.resblocks.0.mlp.c_fc.weight"].shape[0] / width,
                           output_dim=sd["proj"].shape[1] if "proj" in sd else width,
                           act_layer=QuickGELU if c["quick_gelu"] else torch.nn.GELU, output_tokens=True)
    missing, unexpected = vt.load_state_dict(sd, strict=False)
    # ln_post and proj only shape the pooled output, which OpenFlamingo does not use: a model that
    # does not hold them keeps open_clip's initial values, and they do not reach the tokens.
    assert not unexpected, f"open_clip's VisionTransformer has no {unexpected}"
    assert set(missing) <= {"ln_post.weight", "ln_post.bias", "proj"}, f"weights missing for {missing}"
    assert not (c["ln_post_on_tokens"] and missing), "ln_post_on_tokens without ln_post weights"
    vt.eval()
    _, tokens = vt(images)
    if c["ln_post_on_tokens"]:
        tokens = vt.ln_post(tokens)
    return tokens


# ----------------------------------------------------------------------------- perceiver
def feed_forward(x, P, p):
    h = ln(x, P, p + "0")
    h = F.gelu(F.linear(h, P[p + "1.weight"]))
    return F.linear(h, P[p + "3.weight"])


def perceiver(P, c, x):
    b, T, Fr, v, D = x.shape
    x = x.reshape(b, T, Fr * v, D)
    lat = P["perceiver.latents"].unsqueeze(0).unsqueeze(0).repeat(b, T, 1, 1)
    h, d = c["perceiver_heads"], c["perceiver_head_dim"]

    def heads(t):  # b t n (h d) -> b h t n d
        return t.reshape(t.shape[0], t.shape[1], t.shape[2], h, d).permute(0, 3, 1, 2, 4)

    for i in range(c["perceiver_depth"]):
        p = f"perceiver.layers.{i}.0."
        xm = ln(x, P, p + "norm_media")
        lt = ln(lat, P, p + "norm_latents")
        q = F.linear(lt, P[p + "to_q.weight"])
        k, vv = F.linear(torch.cat((xm, lt), dim=-2), P[p + "to_kv.weight"]).chunk(2, dim=-1)
        q, k, vv = heads(q) * d ** -0.5, heads(k), heads(vv)
        sim = torch.einsum("...id,...jd->...ij", q, k)
        sim = sim - sim.amax(dim=-1, keepdim=True)
        out = torch.einsum("...ij,...jd->...id", sim.softmax(dim=-1), vv)
        out = out.permute(0, 2, 3, 1, 4).reshape(b, T, -1, h * d)
        lat = F.linear(out, P[p + "to_out.weight"]) + lat
        lat = feed_forward(lat, P, f"perceiver.layers.{i}.1.") + lat
    return ln(lat, P, "perceiver.norm")


# ----------------------------------------------------------------------------- gated cross-attention
def gated_xattn(x, media, media_locations, P, p, c):
    h, d = c["xattn_heads"], c["xattn_head_dim"]
    B, T_img, n = media.shape[:3]
    xn = ln(x, P, p + "attn.norm")
    q = F.linear(xn, P[p + "attn.to_q.weight"])
    k, v = F.linear(media.reshape(B, T_img * n, -1), P[p + "attn.to_kv.weight"]).chunk(2, dim=-1)
    split = lambda t: t.reshape(t.shape[0], t.shape[1], h, d).permute(0, 2, 1, 3)
    q, k, v = split(q) * d ** -0.5, split(k), split(v)
    sim = torch.einsum("...id,...jd->...ij", q, k)
    text_time = media_locations.long().cumsum(dim=-1)
    media_time = torch.arange(T_img) + 1
    allowed = text_time[:, None, :, None] == media_time.repeat_interleave(n)[None, None, None, :]
    sim = sim.masked_fill(~allowed, -torch.finfo(sim.dtype).max)
    sim = sim - sim.amax(dim=-1, keepdim=True)
    attn = sim.softmax(dim=-1)
    attn = attn.masked_fill((text_time == 0)[:, None, :, None], 0.0)
    out = torch.einsum("...ij,...jd->...id", attn, v).permute(0, 2, 1, 3).reshape(B, x.shape[1], h * d)
    x = F.linear(out, P[p + "attn.to_out.weight"]) * P[p + "attn_gate"].tanh() + x
    return feed_forward(x, P, p + "ff.") * P[p + "ff_gate"].tanh() + x


# ----------------------------------------------------------------------------- masks
def hf_4d_mask(mask, L):
    """transformers 4.28 _prepare_decoder_attention_mask: causal + padding, both finfo.min, added."""
    causal = torch.full((L, L), FMIN).triu(1)[None, None]
    padding = (1.0 - mask[:, None, None, :].float()) * FMIN
    return causal + padding  # may reach -inf; the attention clamps at finfo.min


def split_heads(t, h):
    return t.view(t.shape[0], t.shape[1], h, -1).transpose(1, 2)


def merge_heads(t):
    return t.transpose(1, 2).reshape(t.shape[0], t.shape[2], -1)


# ----------------------------------------------------------------------------- decoder layers
def opt_layer(x, P, p, c, mask4):
    h = ln(x, P, p + "self_attn_layer_norm")
    d = x.shape[-1] // c["lm_heads"]
    q = split_heads(linear(h, P, p + "self_attn.q_proj") * d ** -0.5, c["lm_heads"])
    k = split_heads(linear(h, P, p + "self_attn.k_proj"), c["lm_heads"])
    v = split_heads(linear(h, P, p + "self_attn.v_proj"), c["lm_heads"])
    w = torch.max(q @ k.transpose(-1, -2) + mask4, torch.tensor(FMIN))
    a = linear(merge_heads(w.softmax(-1) @ v), P, p + "self_attn.out_proj")
    x = x + a
    h = ln(x, P, p + "final_layer_norm")
    return x + linear(torch.relu(linear(h, P, p + "fc1")), P, p + "fc2")


def mpt_layer(x, P, p, c, bias):
    mosaic = c["mosaic_gpt_names"]
    n1, n2, mlp = ("ln_1", "ln_2", "mlp.mlp_") if mosaic else ("norm_1", "norm_2", "ffn.")
    up, down = (mlp + "up", mlp + "down") if mosaic else (mlp + "up_proj", mlp + "down_proj")
    a = ln(x, P, p + n1)
    q, k, v = F.linear(a, P[p + "attn.Wqkv.weight"]).chunk(3, dim=2)
    if c["qk_ln"]:
        q, k = ln(q, P, p + "attn.q_ln"), ln(k, P, p + "attn.k_ln")
    H = c["lm_heads"]
    d = x.shape[-1] // H
    qh = q.view(q.shape[0], q.shape[1], H, d).permute(0, 2, 1, 3)
    kh = k.view(k.shape[0], k.shape[1], H, d).permute(0, 2, 3, 1)  # b h d s
    vh = v.view(v.shape[0], v.shape[1], H, d).permute(0, 2, 1, 3)
    w = qh.matmul(kh) * (1 / math.sqrt(d)) + bias["alibi"]
    w = w.masked_fill(~bias["key_padding"], FMIN)
    w = w.masked_fill(bias["causal_blocked"], FMIN)
    out = torch.softmax(w, dim=-1).matmul(vh).permute(0, 2, 1, 3).reshape(x.shape)
    x = x + F.linear(out, P[p + "attn.out_proj.weight"])
    m = ln(x, P, p + n2)
    return x + F.linear(F.gelu(F.linear(m, P[p + up + ".weight"])), P[p + down + ".weight"])


def alibi(H, L, bias_max):
    n = 2 ** math.ceil(math.log2(H))
    m = torch.arange(1, n + 1, dtype=torch.float32).mul(bias_max / n)
    slopes = 1.0 / torch.pow(2, m)
    if n != H:
        slopes = torch.concat([slopes[1::2], slopes[::2]])[:H]
    return torch.arange(1 - L, 1, dtype=torch.int32).view(1, 1, 1, L) * slopes.view(1, H, 1, 1)


# ----------------------------------------------------------------------------- the whole model
def flamingo(P, c, vision_x, ids, mask):
    B, T, Fr = vision_x.shape[:3]
    feats = vision_tower(P, c, vision_x.reshape(B * T * Fr, *vision_x.shape[3:]))
    media = perceiver(P, c, feats.reshape(B, T, Fr, *feats.shape[1:]))
    media_locations = ids == c["image_id"]
    fam, L = c["family"], ids.shape[1]
    lm = "lang_encoder."

    if fam == "opt":
        pre, emb = lm + "model.decoder.layers.", lm + "model.decoder.embed_tokens.weight"
        pos = (torch.cumsum(mask, dim=1) * mask - 1).long() + 2
        x = F.embedding(ids, P[emb]) + F.embedding(pos, P[lm + "model.decoder.embed_positions.weight"])
        mask4 = hf_4d_mask(mask, L)
        layer = lambda x, p: opt_layer(x, P, p, c, mask4)
        final = lambda x: ln(x, P, lm + "model.decoder.final_layer_norm")
        head = P[emb]
    elif fam == "mpt":
        pre, emb = lm + "transformer.blocks.", lm + "transformer.wte.weight"
        x = F.embedding(ids, P[emb])
        bias = {"alibi": alibi(c["lm_heads"], L, c["alibi_bias_max"]),
                "key_padding": mask.bool().view(mask.shape[0], 1, 1, L),
                "causal_blocked": ~torch.ones(L, L, dtype=torch.bool).tril().view(1, 1, L, L)}
        layer = lambda x, p: mpt_layer(x, P, p, c, bias)
        final = lambda x: ln(x, P, lm + ("transformer.ln_f" if c["mosaic_gpt_names"] else "transformer.norm_f"))
        head = P[emb]
    else:
        raise SystemExit(f"unknown family {fam}")

    for i in range(c["lm_layers"]):
        p = f"{pre}{i}."
        if (i + 1) % c["every_n"] == 0:
            x = gated_xattn(x, media, media_locations, P, p + "gated_cross_attn_layer.", c)
        x = layer(x, p + "decoder_layer.")
    return F.linear(final(x), head)


def main():
    root = sys.argv[1]
    for case in sorted(os.listdir(root)):
        d = os.path.join(root, case)
        if not os.path.isfile(os.path.join(d, "config.json")):
            continue
        with open(os.path.join(d, "config.json")) as f:
            c = json.load(f)
        P = dict(torch.load(os.path.join(d, "weights.pt")))
        inputs = torch.load(os.path.join(d, "inputs.pt"))
        logits = flamingo(P, c, inputs["vision_x"], inputs["input_ids"], inputs["attention_mask"])
        assert list(logits.shape) == c["logits_shape"], (case, logits.shape, c["logits_shape"])
        logits.contiguous().float().numpy().tofile(os.path.join(d, "logits.bin"))
        print(f"{case}: logits {tuple(logits.shape)}")


if __name__ == "__main__":
    main()
