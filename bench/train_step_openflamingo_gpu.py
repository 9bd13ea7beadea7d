#!/usr/bin/env python3
"""OpenFlamingo's baseline of one training iteration on a GPU (bench/run_gpu.sh).

Runs the open-flamingo 2.0.1 PACKAGE (open_flamingo.Flamingo, FlamingoLMMixin, its
PerceiverResampler and GatedCrossAttentionBlock), open_clip's VisionTransformer and a
transformers causal LM, all built from configs with random weights: nothing is loaded
from a hub (open_flamingo's factory calls from_pretrained; its steps are done here by
hand: extend_instance, set_decoder_layers_attr_name, Flamingo(...), the freezing).
Shapes:
  small  resources/presets/small.yaml (train_step_baseline.PRESETS["small"]): OPT LM
  3b     OpenFlamingo-3B-vitl-mpt1b: ViT-L/14 at 224 (QuickGELU: OpenAI's CLIP), MPT-1B
         (transformers' MptForCausalLM: 24 x 2048, 16 heads, ALiBi, no biases), the
         perceiver and cross-attention of Flamingo's defaults, one block per layer;
         batches 64 LAION + 32 MMC4 (256 tokens, 6 images): the recipe's per-GPU batch
  tiny   train_step_baseline.PRESETS["tiny"], for the CPU smoke run (--device cpu)
The step is train_step_openflamingo.ReferenceTrainer's (train_one_epoch's: LAION then
MMC4, labels, the embedding-row mask, clipping, AdamW, the schedule), under the
autocast of open_flamingo/train/train_utils.get_autocast for --precision; the batches
are train_step_baseline.make_batch's, the ones bench/run_train_step.sh uses.

FLOPs: torch.utils.flop_counter.FlopCounterMode over one step (matrix products,
convolutions, attention), forward and backward: flops_per_step. bench/run_gpu.sh
divides flops_per_step x steps/s by the GPU's peak for the MFU of both sides (the
same model and batches: the same model FLOPs).

Usage: train_step_openflamingo_gpu.py PRESET [WARMUP=3] [ITERS=10] [--device cuda|cpu]
           [--precision amp_bf16|fp32] [--no-flops] [--pool N]
Prints one line: openflamingo preset=... median_step_ms=... samples_per_s=... flops_per_step=...
"""
import argparse
import os
import random
import statistics
import sys
import time
import types

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_step_baseline as own  # noqa: E402  (PRESETS, make_batch)
import train_step_openflamingo as tso  # noqa: E402  (ReferenceTrainer, loader_batches)

PRESETS = {
    "tiny": dict(own.PRESETS["tiny"], lm=dict(own.PRESETS["tiny"]["lm"], family="opt")),
    "small": dict(own.PRESETS["small"], lm=dict(own.PRESETS["small"]["lm"], family="opt")),
    # resources/presets/openflamingo-3b-vitl-mpt1b.yaml with the schema's defaults.
    "3b": dict(
        vision=dict(image_size=224, patch_size=14, width=1024, layers=24, heads=16, quick_gelu=True),
        perceiver=dict(depth=6, heads=8, head_dim=64, num_latents=64, ff_mult=4),
        xattn=dict(every_n=1, heads=8, head_dim=64, ff_mult=4),
        lm=dict(family="mpt", vocab=50280, width=2048, layers=24, heads=16, ffn=8192, max_positions=2048),
        tokens=dict(vocab=50280, eos=0, pad=50279, image=50278, eoc=50277),
        laion=dict(batch=64, max_tokens=32),
        mmc4=dict(batch=32, max_tokens=256, max_images=6),
        lr=1e-4, warmup=1875, total=1875 * 10,
    ),
}


def language_model(p):
    """A transformers causal LM of the preset's shape, from a config (random weights), with the
    embedding rows factory.py's resize_token_embeddings(len(tokenizer)) leaves."""
    import transformers
    lm, tk = p["lm"], p["tokens"]
    if lm["family"] == "opt":
        cfg = transformers.OPTConfig(vocab_size=tk["vocab"], hidden_size=lm["width"], num_hidden_layers=lm["layers"],
                                     ffn_dim=lm["ffn"], num_attention_heads=lm["heads"],
                                     max_position_embeddings=lm["max_positions"], word_embed_proj_dim=lm["width"],
                                     do_layer_norm_before=True, dropout=own.OPT_DROPOUT, pad_token_id=tk["pad"],
                                     tie_word_embeddings=True)
        return transformers.OPTForCausalLM(cfg), "model.decoder.layers"
    if lm["family"] == "mpt":
        cfg = transformers.MptConfig(d_model=lm["width"], n_heads=lm["heads"], n_layers=lm["layers"],
                                     expansion_ratio=lm["ffn"] // lm["width"], max_seq_len=lm["max_positions"],
                                     vocab_size=tk["vocab"], no_bias=True, resid_pdrop=0.0, emb_pdrop=0.0,
                                     tie_word_embeddings=True)
        return transformers.MptForCausalLM(cfg), "transformer.blocks"
    raise SystemExit(f"unknown LM family {lm['family']!r}")


def build_model(p):
    """open_flamingo/src/factory.py's create_model_and_transforms, from configs (random weights)."""
    import open_clip.transformer as oct
    from open_flamingo import Flamingo
    from open_flamingo.src.flamingo_lm import FlamingoLMMixin
    from open_flamingo.src.helpers import GatedCrossAttentionBlock, PerceiverResampler
    from open_flamingo.src.utils import extend_instance
    v, pc, xa, lm, tk = p["vision"], p["perceiver"], p["xattn"], p["lm"], p["tokens"]
    # open_clip's _build_vision_tower: its VisionTransformer; factory.py sets output_tokens.
    visual = oct.VisionTransformer(image_size=v["image_size"], patch_size=v["patch_size"], width=v["width"],
                                   layers=v["layers"], heads=v["heads"], mlp_ratio=4.0, output_dim=v["width"],
                                   act_layer=oct.QuickGELU if v["quick_gelu"] else nn.GELU, output_tokens=True)
    lang_encoder, layers_attr = language_model(p)
    extend_instance(lang_encoder, FlamingoLMMixin)
    lang_encoder.set_decoder_layers_attr_name(layers_attr)
    model = Flamingo(types.SimpleNamespace(visual=visual), lang_encoder, tk["eoc"], tk["image"],
                     vis_dim=v["width"], cross_attn_every_n_layers=xa["every_n"])
    # Flamingo builds PerceiverResampler(dim) and init_flamingo GatedCrossAttentionBlock(dim, dim_visual)
    # with their defaults (the 3B's); other shapes are rebuilt through the same classes.
    if (pc["depth"], pc["heads"], pc["head_dim"], pc["num_latents"], pc["ff_mult"]) != (6, 8, 64, 64, 4):
        model.perceiver = PerceiverResampler(dim=v["width"], depth=pc["depth"], dim_head=pc["head_dim"],
                                             heads=pc["heads"], num_latents=pc["num_latents"], ff_mult=pc["ff_mult"])
    if (xa["heads"], xa["head_dim"], xa["ff_mult"]) != (8, 64, 4):
        lang_encoder.gated_cross_attn_layers = nn.ModuleList(
            GatedCrossAttentionBlock(dim=lm["width"], dim_visual=v["width"], dim_head=xa["head_dim"],
                                     heads=xa["heads"], ff_mult=xa["ff_mult"])
            if (i + 1) % xa["every_n"] == 0 else None for i in range(lm["layers"]))
        lang_encoder.init_flamingo_layers(False)
    # factory.py: freeze everything, then unfreeze the perceiver, the cross-attention and the input embeddings.
    model.requires_grad_(False)
    model.perceiver.requires_grad_(True)
    model.lang_encoder.gated_cross_attn_layers.requires_grad_(True)
    model.lang_encoder.get_input_embeddings().requires_grad_(True)
    # ReferenceTrainer reshapes with the model's rearrange (its FlamingoModel kept einops' there).
    import einops
    model.rearrange = einops.rearrange
    return model


class AutocastTrainer(tso.ReferenceTrainer):
    """ReferenceTrainer's step under train_utils.get_autocast(precision): amp_bf16 -> torch.autocast
    (device, bfloat16) around the forwards (train_one_epoch's `with autocast():`)."""

    def __init__(self, model, p, precision, device):
        super().__init__(model, p)
        self.precision, self.device_type = precision, device.type

    def train_step(self, batch_laion, batch_mmc4):
        if self.precision == "fp32":
            return super().train_step(batch_laion, batch_mmc4)
        if self.precision != "amp_bf16":
            raise SystemExit(f"--precision {self.precision}: amp_bf16 or fp32")
        # The backward runs outside autocast in train_one_epoch as well; autocast only changes op dtypes,
        # so wrapping the whole step equals wrapping the forwards.
        with torch.autocast(self.device_type, dtype=torch.bfloat16):
            return super().train_step(batch_laion, batch_mmc4)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("preset", choices=sorted(PRESETS))
    ap.add_argument("warmup", type=int, nargs="?", default=3)
    ap.add_argument("iters", type=int, nargs="?", default=10)
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--precision", default="amp_bf16", choices=("amp_bf16", "fp32"))
    ap.add_argument("--no-flops", action="store_true", help="skip the FLOP count")
    ap.add_argument("--pool", type=int, default=4, help="batches made before the loop")
    a = ap.parse_args(argv)
    device = torch.device(a.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("train_step_openflamingo_gpu: --device cuda but torch.cuda.is_available() is false")
    tso.DEVICE = device  # ReferenceTrainer moves every batch .to(DEVICE)
    p = PRESETS[a.preset]
    torch.manual_seed(42)
    random.seed(42)
    t0 = time.perf_counter()
    with torch.device(device):  # random init where it runs (a 3B model is slow to init on the host)
        model = build_model(p)
    model.train()
    trainer = AutocastTrainer(model, p, a.precision, device)
    rng = random.Random(42)
    pool = [tso.loader_batches([own.make_batch(rng, p, k) for k in ("laion", "mmc4")]) for _ in range(a.pool)]
    build_s = time.perf_counter() - t0
    trainable = sum(q.numel() for q in model.parameters() if q.requires_grad)
    total = sum(q.numel() for q in model.parameters())
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    flops = 0
    if not a.no_flops:
        from torch.utils.flop_counter import FlopCounterMode
        trainer.train_step(*pool[0])  # first-call work (cuBLAS handles, autotuning) outside the count
        with FlopCounterMode(display=False) as counter:
            trainer.train_step(*pool[0])
        flops = counter.get_total_flops()
    times = []
    for it in range(a.warmup + a.iters):
        batch = pool[it % len(pool)]
        sync()
        t = time.perf_counter()
        trainer.train_step(*batch)
        sync()
        if it >= a.warmup:
            times.append(time.perf_counter() - t)
    med = statistics.median(times)
    samples = p["laion"]["batch"] + p["mmc4"]["batch"]
    peak = torch.cuda.max_memory_allocated() / 2**30 if device.type == "cuda" else 0.0
    print(f"openflamingo preset={a.preset} device={a.device} precision={a.precision} warmup={a.warmup} "
          f"iters={a.iters} median_step_ms={med * 1e3:.3f} min_step_ms={min(times) * 1e3:.3f} "
          f"max_step_ms={max(times) * 1e3:.3f} samples_per_s={samples / med:.2f} samples_per_step={samples} "
          f"flops_per_step={flops} "
          f"params={total} trainable={trainable} build_s={build_s:.1f} peak_gib={peak:.1f} "
          f"torch={torch.__version__}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
