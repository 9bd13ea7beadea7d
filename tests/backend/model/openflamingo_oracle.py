#!/usr/bin/env python3
"""OpenFlamingo's own model and training step, as the oracle of openflamingo_parity_test.

Builds each case's model the way open_flamingo.create_model_and_transforms (src/factory.py)
does, from OpenFlamingo's, open_clip's and transformers' own classes, all from configs with
random weights (nothing is downloaded): open_clip's VisionTransformer (QuickGELU, as OpenAI's
CLIP; output_tokens=True as factory.py sets), a transformers causal LM (OPT, GPT-NeoX, LLaMA,
MPT) extended with FlamingoLMMixin (extend_instance, set_decoder_layers_attr_name,
resize_token_embeddings to the tokenizer with <|endofchunk|> and <image> added), then
Flamingo(...) and factory.py's freezing. Then two steps of OpenFlamingo's own
train/train_utils.train_one_epoch (LAION then MMC4, its labels, the embedding-gradient mask,
clip_grad_norm_ 1.0, AdamW under train.py's parameter groups, the transformers schedule).

usage: openflamingo_oracle.py ROOT
  ROOT/cases.json: [{name, family, variant, every_n, scheduler, warmup, total, seed}, ...]
  per case, ROOT/<name>/:
    lm/config.json     the LM's Hugging Face config (config.save_pretrained), before the resize
    full.pt            Flamingo.state_dict() before training (bare; every key OpenFlamingo has)
    batches.pt         {laion0_images, laion0_ids, laion0_mask, mmc4_0_images, ...} (step 0 and 1)
    results.pt         per forward (laion0, mmc4_0, laion1, mmc4_1): <f>.labels, <f>.loss,
                       <f>.logits (laion0 and mmc4_0 only); grad<s>.<name>: the gradients
                       AdamW steps with (masked, clipped); after.<name>: every trainable
                       parameter after the two steps (named_parameters' names)
    checkpoint_0.pt    train_utils.save_checkpoint's file after the two steps (the DDP-like
                       wrapper's 'module.' prefix, filter_state_dict_to_trainable, AdamW's and
                       LambdaLR's state_dicts)

Patches (transformers 5 / no wandb), each at the smallest point:
  - `wandb` is not installed and train_utils imports it at module level: a stub module is put in
    sys.modules first (report_to_wandb is False, so nothing calls it).
"""
import json
import os
import sys
import types

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

VOCAB, WIDTH, LAYERS, HEADS, FFN, MAX_POS = 128, 32, 2, 2, 64, 128
PAD, EOS = 1, 2
EOC, IMAGE = VOCAB, VOCAB + 1  # add_special_tokens(["<|endofchunk|>", "<image>"]) appends in order
IMAGE_SIZE, PATCH, V_WIDTH, V_LAYERS, V_HEADS = 32, 8, 32, 2, 2
LR, WEIGHT_DECAY = 1e-2, 0.1
LOSS_MULT_LAION, LOSS_MULT_MMC4 = 0.5, 1.0


def hf_config(family, variant):
    import transformers as tf
    if family == "opt":
        return tf.OPTConfig(vocab_size=VOCAB, hidden_size=WIDTH, num_hidden_layers=LAYERS, ffn_dim=FFN,
                            num_attention_heads=HEADS, max_position_embeddings=MAX_POS, word_embed_proj_dim=WIDTH,
                            do_layer_norm_before=True, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
                            layerdrop=0.0, pad_token_id=PAD, bos_token_id=EOS, eos_token_id=EOS,
                            tie_word_embeddings=True), "model.decoder.layers"
    if family == "gpt_neox":
        return tf.GPTNeoXConfig(vocab_size=VOCAB, hidden_size=WIDTH, num_hidden_layers=LAYERS,
                                num_attention_heads=HEADS, intermediate_size=FFN, max_position_embeddings=MAX_POS,
                                # pythia: a quarter of each head rotated, parallel residual;
                                # RedPajama-INCITE (OpenFlamingo-4B): all of it, sequential.
                                rotary_pct=1.0 if variant == "redpajama" else 0.25, rotary_emb_base=10000,
                                use_parallel_residual=variant != "redpajama",
                                hidden_dropout=0.0, attention_dropout=0.0, layer_norm_eps=1e-5,
                                pad_token_id=PAD, bos_token_id=EOS, eos_token_id=EOS,
                                tie_word_embeddings=False), "gpt_neox.layers"
    if family == "llama":
        return tf.LlamaConfig(vocab_size=VOCAB, hidden_size=WIDTH, intermediate_size=FFN, num_hidden_layers=LAYERS,
                              num_attention_heads=HEADS, num_key_value_heads=HEADS, max_position_embeddings=MAX_POS,
                              rms_norm_eps=1e-6, attention_dropout=0.0, pad_token_id=PAD, bos_token_id=EOS,
                              eos_token_id=EOS, tie_word_embeddings=False), "model.layers"
    if family == "mpt":
        # transformers' MptMLP is 4 * d_model wide whatever expansion_ratio says: 4 it is.
        return tf.MptConfig(d_model=WIDTH, n_heads=HEADS, n_layers=LAYERS, expansion_ratio=4,
                            max_seq_len=MAX_POS, vocab_size=VOCAB, no_bias=True, resid_pdrop=0.0, emb_pdrop=0.0,
                            attn_config={"attn_pdrop": 0, "alibi_bias_max": 8}, pad_token_id=PAD,
                            bos_token_id=EOS, eos_token_id=EOS, tie_word_embeddings=True), "transformer.blocks"
    raise SystemExit(f"unknown family {family!r}")


def build(case, lm_dir):
    """open_flamingo/src/factory.py's create_model_and_transforms, from configs."""
    import open_clip.transformer as oct
    import transformers as tf
    from open_flamingo import Flamingo
    from open_flamingo.src.flamingo_lm import FlamingoLMMixin
    from open_flamingo.src.utils import extend_instance

    torch.manual_seed(case["seed"])
    # open_clip's _build_vision_tower for a QuickGELU (OpenAI) config; factory.py sets output_tokens.
    visual = oct.VisionTransformer(image_size=IMAGE_SIZE, patch_size=PATCH, width=V_WIDTH, layers=V_LAYERS,
                                   heads=V_HEADS, mlp_ratio=4.0, output_dim=V_WIDTH, act_layer=oct.QuickGELU,
                                   output_tokens=True)
    config, layers_attr = hf_config(case["family"], case["variant"])
    config.save_pretrained(lm_dir)  # what model.lm.path resolves the architecture from
    lang_encoder = tf.AutoModelForCausalLM.from_config(config)
    extend_instance(lang_encoder, FlamingoLMMixin)
    lang_encoder.set_decoder_layers_attr_name(layers_attr)
    lang_encoder.resize_token_embeddings(VOCAB + 2)  # len(text_tokenizer): the pad token exists
    model = Flamingo(types.SimpleNamespace(visual=visual), lang_encoder, EOC, IMAGE, vis_dim=V_WIDTH,
                     cross_attn_every_n_layers=case["every_n"])
    model.requires_grad_(False)
    model.perceiver.requires_grad_(True)
    model.lang_encoder.gated_cross_attn_layers.requires_grad_(True)
    model.lang_encoder.get_input_embeddings().requires_grad_(True)
    with torch.no_grad():
        # Every weight away from its init (norms away from 1 / 0), gates non-zero so cross-attention counts.
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
        v = 0.3
        for block in model.lang_encoder.gated_cross_attn_layers:
            if block is not None:
                block.attn_gate.fill_(v)
                block.ff_gate.fill_(-0.5 * v)
                v += 0.4
    return model


def batches(seed):
    """Two steps of (LAION, MMC4) batches: LAION (B=3, one image each), MMC4 (B=2, two images)."""
    g = torch.Generator().manual_seed(seed)
    out = {}
    for s in range(2):
        out[f"laion{s}_images"] = torch.randn(3, 1, 1, 3, IMAGE_SIZE, IMAGE_SIZE, generator=g)
        ids = torch.randint(3, VOCAB, (3, 8), generator=g)
        ids[:, 0] = IMAGE
        ids[0, 6:] = torch.tensor([EOC, EOS])
        ids[1, 4:] = torch.tensor([EOC, EOS, PAD, PAD])
        ids[2, 5:] = torch.tensor([EOC, EOS, PAD])
        out[f"laion{s}_ids"] = ids
        out[f"laion{s}_mask"] = (ids != PAD).long()
        out[f"mmc4_{s}_images"] = torch.randn(2, 2, 1, 3, IMAGE_SIZE, IMAGE_SIZE, generator=g)
        ids = torch.randint(3, VOCAB, (2, 14), generator=g)
        # Row 0: text before the first <image> (masked), two images, text after each <|endofchunk|>
        # up to the next <image> (masked). Row 1: starts with <image>, a third <image> token for two
        # images, right padding.
        ids[0, [3, 7, 12]] = torch.tensor([IMAGE, EOC, IMAGE])
        ids[0, 13] = EOC
        ids[1, [0, 4, 6, 7, 9, 10]] = torch.tensor([IMAGE, EOC, IMAGE, IMAGE, EOC, EOS])
        ids[1, 11:] = PAD
        out[f"mmc4_{s}_ids"] = ids
        out[f"mmc4_{s}_mask"] = (ids != PAD).long()
    return out


class Recorder(nn.Module):
    """Stands where DDP stands in train.py (train_one_epoch reaches the model as model.module);
    keeps each forward's labels, loss and logits."""

    def __init__(self, module):
        super().__init__()
        self.module = module
        self.calls = []

    def forward(self, **kwargs):
        out = self.module(**kwargs)
        self.calls.append((kwargs["labels"].clone(), out[0].detach().clone(), out.logits.detach().clone()))
        return out


class Loader:
    def __init__(self, items):
        self.items, self.num_batches = items, len(items)

    def __iter__(self):
        return iter(self.items)


class Tokenizer:
    """What train_one_epoch asks of the tokenizer: the two special tokens' ids, pad_token_id and
    eos_token (a string, as Hugging Face tokenizers have it)."""
    pad_token_id = PAD
    eos_token = "</s>"

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [{"<image>": IMAGE, "<|endofchunk|>": EOC}[text]]}


def run_case(root, case):
    from transformers import (get_constant_schedule_with_warmup, get_cosine_schedule_with_warmup,
                              get_linear_schedule_with_warmup)
    from open_flamingo.train import train_utils

    d = os.path.join(root, case["name"])
    os.makedirs(d, exist_ok=True)
    model = build(case, os.path.join(d, "lm"))
    torch.save(model.state_dict(), os.path.join(d, "full.pt"))
    b = batches(case["seed"] + 1)
    torch.save(b, os.path.join(d, "batches.pt"))

    ddp = Recorder(model)
    # train.py: the trainable named parameters, then get_grouped_params (weight decay on names with
    # "gated_cross_attn"), AdamW(lr), the schedule. Written out: they live inside train.py's main().
    params_to_optimize = [(n, p) for n, p in ddp.named_parameters() if p.requires_grad]
    with_wd = [p for n, p in params_to_optimize if "gated_cross_attn" in n]
    without_wd = [p for n, p in params_to_optimize if "gated_cross_attn" not in n]
    optimizer = torch.optim.AdamW([{"params": with_wd, "weight_decay": WEIGHT_DECAY},
                                   {"params": without_wd, "weight_decay": 0.0}], lr=LR)
    if case["scheduler"] == "linear":
        sched = get_linear_schedule_with_warmup(optimizer, case["warmup"], case["total"])
    elif case["scheduler"] == "cosine":
        sched = get_cosine_schedule_with_warmup(optimizer, case["warmup"], case["total"])
    else:
        sched = get_constant_schedule_with_warmup(optimizer, case["warmup"])

    # Each step's gradients as AdamW sees them (masked, clipped): wraps the step LambdaLR already wrapped.
    grads, lambda_lr_step = [], optimizer.step

    def recording_step(*a, **k):
        grads.append({n: p.grad.clone() for n, p in params_to_optimize if p.grad is not None})
        return lambda_lr_step(*a, **k)

    optimizer.step = recording_step
    # train_one_epoch's batch layouts: LAION images (b t f) c h w, (ids, mask); MMC4 images
    # b (t f) c h w and one (ids (1, L), mask (1, L)) per sample.
    laion = [(b[f"laion{s}_images"].flatten(0, 2), (b[f"laion{s}_ids"], b[f"laion{s}_mask"])) for s in range(2)]
    mmc4 = [(b[f"mmc4_{s}_images"].flatten(1, 2),
             [(i[None], m[None]) for i, m in zip(b[f"mmc4_{s}_ids"], b[f"mmc4_{s}_mask"])]) for s in range(2)]
    args = types.SimpleNamespace(num_epochs=1, precision="fp32", fsdp=False, fsdp_use_orig_params=False,
                                 rank=0, gradient_accumulation_steps=1, loss_multiplier_laion=LOSS_MULT_LAION,
                                 loss_multiplier_mmc4=LOSS_MULT_MMC4, freeze_lm_embeddings=False,
                                 report_to_wandb=False, logging_steps=1000, run_name=d,
                                 delete_previous_checkpoint=False, save_checkpoints_to_wandb=False)
    train_utils.train_one_epoch(args, ddp, 0, Loader(laion), Loader(mmc4), Tokenizer(), optimizer, sched,
                                "cpu", None)
    train_utils.save_checkpoint(ddp, optimizer, sched, 0, args)

    results = {}
    assert len(ddp.calls) == 4, f"{len(ddp.calls)} forwards"
    for k, (labels, loss, logits) in zip(["laion0", "mmc4_0", "laion1", "mmc4_1"], ddp.calls):
        results[k + ".labels"] = labels
        results[k + ".loss"] = loss
        if k.endswith("0"):
            results[k + ".logits"] = logits
    for step, g in enumerate(grads):
        for n, t in g.items():
            results[f"grad{step}.{n[len('module.'):]}"] = t
    for n, p in model.named_parameters():
        if p.requires_grad:
            results["after." + n] = p.detach().clone()
    torch.save(results, os.path.join(d, "results.pt"))


def main():
    root = sys.argv[1]
    sys.modules.setdefault("wandb", types.ModuleType("wandb"))  # see the module docstring
    torch.set_num_threads(1)  # one thread: a deterministic reduction order run to run
    with open(os.path.join(root, "cases.json")) as f:
        cases = json.load(f)
    for case in cases:
        run_case(root, case)
        print(f"{case['name']}: done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
