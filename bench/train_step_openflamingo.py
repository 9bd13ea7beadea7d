#!/usr/bin/env python3
"""The faithful OpenFlamingo baseline of one training iteration (bench/train_step, issue 27).

Runs OpenFlamingo's OWN modules (open_flamingo/src/helpers.py, flamingo_lm.py, utils.py)
and open_clip's OWN VisionTransformer (open_clip/transformer.py) from the packages pinned
in the project's Python environment (scripts/requirements-nodeps.txt: open-flamingo 2.0.1,
open-clip-torch 2.20.0); nothing of theirs is copied here. What is not run from them is
rebuilt op for op, with the file and function it follows named beside it:
  - flamingo.py: Flamingo.forward, _encode_vision_x and _condition_media_locations are
    reproduced in FlamingoModel below (written when transformers was not installed);
  - transformers' OPTForCausalLM as OpenFlamingo v2 ran it (v4.27-4.30, modeling_opt.py;
    the pinned transformers 5.x runs OPT through SDPA by default) is rebuilt in its Hugging Face
    layout (model.decoder.{embed_tokens, embed_positions, layers, final_layer_norm}, lm_head)
    with the same ops: learned positions with offset 2, the additive causal + padding mask of
    _make_causal_mask/_expand_mask, bmm attention on (bsz*heads, L, head_dim), ReLU, dropout
    0.1, the shifted CrossEntropyLoss;
  - train_utils.py imports wandb: train_one_epoch's step is reproduced in ReferenceTrainer
    (precision fp32, one process, gradient accumulation 1).
The preset's shapes are those of bench/train_step_baseline.py (PRESETS) and the batches its
batch_pool makes, so both baselines see the same work.

Usage: train_step_openflamingo.py PRESET THREADS [WARMUP] [ITERS] [--profile OUT.txt] [--check]
Run it with the environment's python (scripts/python-env.sh --python).
Set OMP_NUM_THREADS / OPENBLAS_NUM_THREADS = THREADS in the environment (checked).
One process, one Python thread; torch runs THREADS intra-op threads and 1 inter-op thread.
--check: both models from the same weights, dropout off: logits, loss and labels of one LAION
and one MMC4 batch, then the parameter updates of four whole training steps; exit 1 on a difference.
"""
import argparse
import importlib.metadata
import importlib.util
import math
import os
import random
import statistics
import sys
import time
import types

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_step_baseline as own  # noqa: E402  (PRESETS, batch_pool, check_threads; --check's other side)

GRAD_ACCUM = 1  # train.py defaults: --gradient_accumulation_steps 1
LOSS_MULTIPLIER_LAION = 1.0  # --loss_multiplier_laion
LOSS_MULTIPLIER_MMC4 = 1.0  # --loss_multiplier_mmc4
WEIGHT_DECAY = 0.1  # --weight_decay
DEVICE = "cpu"


# ---------------------------------------------------------------- loading the packages
class SourceError(SystemExit):
    pass


# The versions pinned in scripts/requirements*.txt (scripts/python-env.sh installs them).
PINNED = {"open-flamingo": "2.0.1", "open-clip-torch": "2.20.0", "einops": "0.8.2", "einops-exts": "0.0.4"}
HINT = "run scripts/install-deps.sh (or scripts/python-env.sh --install) and use its python (python-env.sh --python)"


def _installed(dist, top):
    """The folder of the installed package TOP of distribution DIST, at its pinned version."""
    try:
        version = importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        raise SourceError(f"reference packages: {dist} is not installed in {sys.prefix}; {HINT}")
    if version != PINNED[dist]:
        raise SourceError(f"reference packages: {dist} is {version} in {sys.prefix}, pinned {PINNED[dist]}; {HINT}")
    spec = importlib.util.find_spec(top)
    if spec is None or not spec.submodule_search_locations:
        raise SourceError(f"reference packages: {dist} is installed but package {top} is not importable; {HINT}")
    return spec.submodule_search_locations[0]


def _package(name, folder):
    """A synthetic package whose submodules load from FOLDER without running its __init__.py."""
    pkg = types.ModuleType(name)
    pkg.__path__ = [folder]
    pkg.__package__ = name
    sys.modules[name] = pkg
    return pkg


def _load(package, folder, module):
    path = os.path.join(folder, module + ".py")
    if not os.path.exists(path):
        raise SourceError(f"reference packages: {path} not found ({package} module {module})")
    name = f"{package}.{module}"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except ImportError as e:
        raise SourceError(f"reference packages: importing {path} failed: {e}; {HINT}")
    setattr(sys.modules[package], module, mod)
    return mod


class Reference:
    """OpenFlamingo's and open_clip's modules, from the pinned installed packages.

    NOTE [Modules without their packages]: open_flamingo/__init__.py imports its factory,
    which imports all of open_clip and transformers' Auto classes; the modules the step runs
    (helpers.py, utils.py, flamingo_lm.py; open_clip's transformer.py) are loaded one by one
    from the package folders instead, so what is timed is exactly their code.
    """

    def __init__(self):
        of_dir = os.path.join(_installed("open-flamingo", "open_flamingo"), "src")
        oc_dir = _installed("open-clip-torch", "open_clip")
        _installed("einops", "einops")
        _installed("einops-exts", "einops_exts")
        import einops
        self.einops = einops
        _package("openflamingo_ref", of_dir)
        self.helpers = _load("openflamingo_ref", of_dir, "helpers")
        self.utils = _load("openflamingo_ref", of_dir, "utils")
        self.flamingo_lm = _load("openflamingo_ref", of_dir, "flamingo_lm")
        _package("open_clip_ref", oc_dir)
        _load("open_clip_ref", oc_dir, "utils")
        self.transformer = _load("open_clip_ref", oc_dir, "transformer")
        self.sources = {d: f"{d} {v}" for d, v in PINNED.items()}


# ---------------------------------------------------------------- OPT in Hugging Face's layout
# OPTForCausalLM of transformers 4.27-4.30, the versions OpenFlamingo v2 ran (the pinned 5.x differs)
# (src/transformers/models/opt/modeling_opt.py) with the config OpenFlamingo's OPT runs:
# do_layer_norm_before, ReLU, dropout 0.1, attention_dropout 0, layerdrop 0, biases, tied head.
class OptConfig:
    def __init__(self, lm, vocab):
        self.vocab_size = vocab  # after resize_token_embeddings(len(tokenizer)) in factory.py
        self.hidden_size = lm["width"]
        self.ffn_dim = lm["ffn"]
        self.num_hidden_layers = lm["layers"]
        self.num_attention_heads = lm["heads"]
        self.max_position_embeddings = lm["max_positions"]
        self.dropout = own.OPT_DROPOUT
        self.attention_dropout = 0.0
        self.layerdrop = 0.0
        self.init_std = 0.02


def _make_causal_mask(input_ids_shape, dtype):  # modeling_opt._make_causal_mask (no past)
    bsz, tgt_len = input_ids_shape
    mask = torch.full((tgt_len, tgt_len), torch.tensor(torch.finfo(dtype).min))
    mask_cond = torch.arange(mask.size(-1))
    mask.masked_fill_(mask_cond < (mask_cond + 1).view(mask.size(-1), 1), 0)
    mask = mask.to(dtype)
    return mask[None, None, :, :].expand(bsz, 1, tgt_len, tgt_len)


def _expand_mask(mask, dtype, tgt_len):  # modeling_opt._expand_mask
    bsz, src_len = mask.size()
    expanded = mask[:, None, None, :].expand(bsz, 1, tgt_len, src_len).to(dtype)
    inverted = 1.0 - expanded
    return inverted.masked_fill(inverted.to(torch.bool), torch.finfo(dtype).min)


class OPTLearnedPositionalEmbedding(nn.Embedding):
    def __init__(self, num_embeddings, embedding_dim):
        self.offset = 2
        super().__init__(num_embeddings + self.offset, embedding_dim)

    def forward(self, attention_mask, past_key_values_length=0):
        attention_mask = attention_mask.long()
        positions = (torch.cumsum(attention_mask, dim=1).type_as(attention_mask) * attention_mask).long() - 1
        positions = positions[:, past_key_values_length:]
        return super().forward(positions + self.offset)


class OPTAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, dropout):
        super().__init__()
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.head_dim = embed_dim // num_heads
        self.scaling = self.head_dim ** -0.5
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def _shape(self, tensor, seq_len, bsz):
        return tensor.view(bsz, seq_len, self.num_heads, self.head_dim).transpose(1, 2).contiguous()

    def forward(self, hidden_states, attention_mask=None, layer_head_mask=None, output_attentions=False,
                past_key_value=None):
        if past_key_value is not None or layer_head_mask is not None or output_attentions:
            raise NotImplementedError("the training step uses no cache, head mask or attention output")
        bsz, tgt_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states) * self.scaling
        key_states = self._shape(self.k_proj(hidden_states), -1, bsz)
        value_states = self._shape(self.v_proj(hidden_states), -1, bsz)
        past_key_value = (key_states, value_states)  # is_decoder=True keeps them, as HF does
        proj_shape = (bsz * self.num_heads, -1, self.head_dim)
        query_states = self._shape(query_states, tgt_len, bsz).view(*proj_shape)
        key_states = key_states.view(*proj_shape)
        value_states = value_states.view(*proj_shape)
        src_len = key_states.size(1)
        attn_weights = torch.bmm(query_states, key_states.transpose(1, 2))
        if attention_mask is not None:
            attn_weights = attn_weights.view(bsz, self.num_heads, tgt_len, src_len) + attention_mask
            attn_weights = torch.max(attn_weights, torch.tensor(torch.finfo(attn_weights.dtype).min))
            attn_weights = attn_weights.view(bsz * self.num_heads, tgt_len, src_len)
        attn_weights = F.softmax(attn_weights, dim=-1)
        attn_probs = F.dropout(attn_weights, p=self.dropout, training=self.training)
        attn_output = torch.bmm(attn_probs, value_states)
        attn_output = attn_output.view(bsz, self.num_heads, tgt_len, self.head_dim).transpose(1, 2)
        attn_output = attn_output.reshape(bsz, tgt_len, self.embed_dim)
        return self.out_proj(attn_output), None, past_key_value


class OPTDecoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_dim = config.hidden_size
        self.self_attn = OPTAttention(self.embed_dim, config.num_attention_heads, config.attention_dropout)
        self.dropout = config.dropout
        self.self_attn_layer_norm = nn.LayerNorm(self.embed_dim)
        self.fc1 = nn.Linear(self.embed_dim, config.ffn_dim)
        self.fc2 = nn.Linear(config.ffn_dim, self.embed_dim)
        self.final_layer_norm = nn.LayerNorm(self.embed_dim)

    def forward(self, hidden_states, attention_mask=None, layer_head_mask=None, output_attentions=False,
                use_cache=False, past_key_value=None):
        # FlamingoLayer.forward calls this with the HF keyword arguments and returns the tuple.
        residual = hidden_states
        hidden_states = self.self_attn_layer_norm(hidden_states)  # do_layer_norm_before
        hidden_states, _, present_key_value = self.self_attn(hidden_states, attention_mask=attention_mask,
                                                             layer_head_mask=layer_head_mask,
                                                             output_attentions=output_attentions,
                                                             past_key_value=past_key_value)
        hidden_states = F.dropout(hidden_states, p=self.dropout, training=self.training)
        hidden_states = residual + hidden_states
        shape = hidden_states.shape
        hidden_states = hidden_states.reshape(-1, hidden_states.size(-1))
        residual = hidden_states
        hidden_states = self.final_layer_norm(hidden_states)
        hidden_states = F.relu(self.fc1(hidden_states))
        hidden_states = self.fc2(hidden_states)
        hidden_states = F.dropout(hidden_states, p=self.dropout, training=self.training)
        hidden_states = (residual + hidden_states).view(shape)
        outputs = (hidden_states,)
        if use_cache:
            outputs += (present_key_value,)
        return outputs


class OPTDecoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layerdrop = config.layerdrop
        # No padding_idx: factory.py's resize_token_embeddings replaces the embedding with a plain one.
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.embed_positions = OPTLearnedPositionalEmbedding(config.max_position_embeddings, config.hidden_size)
        self.final_layer_norm = nn.LayerNorm(config.hidden_size)
        self.layers = nn.ModuleList(OPTDecoderLayer(config) for _ in range(config.num_hidden_layers))

    def forward(self, input_ids, attention_mask=None, use_cache=False):
        input_shape = input_ids.size()
        input_ids = input_ids.view(-1, input_shape[-1])
        inputs_embeds = self.embed_tokens(input_ids)
        if attention_mask is None:
            attention_mask = torch.ones(inputs_embeds.shape[:2], dtype=torch.bool)
        pos_embeds = self.embed_positions(attention_mask, 0)
        # OPTDecoder._prepare_decoder_attention_mask
        causal = _make_causal_mask(input_shape, inputs_embeds.dtype) if input_shape[-1] > 1 else None
        expanded = _expand_mask(attention_mask, inputs_embeds.dtype, tgt_len=input_shape[-1])
        attention_mask = expanded if causal is None else expanded + causal
        hidden_states = inputs_embeds + pos_embeds
        cache = () if use_cache else None
        for decoder_layer in self.layers:
            dropout_probability = random.uniform(0, 1)  # LayerDrop draw, as HF does (layerdrop 0)
            if self.training and dropout_probability < self.layerdrop:
                continue
            layer_outputs = decoder_layer(hidden_states, attention_mask=attention_mask, layer_head_mask=None,
                                          past_key_value=None, output_attentions=False, use_cache=use_cache)
            hidden_states = layer_outputs[0]
            if use_cache:
                cache += (layer_outputs[1],)
        hidden_states = self.final_layer_norm(hidden_states)
        return hidden_states, cache


class OPTModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.decoder = OPTDecoder(config)


class OPTForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = OPTModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self._init_weights()
        self.lm_head.weight = self.model.decoder.embed_tokens.weight  # tie_weights()

    def _init_weights(self):  # OPTPreTrainedModel._init_weights
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                m.weight.data.normal_(mean=0.0, std=self.config.init_std)
                if isinstance(m, nn.Linear) and m.bias is not None:
                    m.bias.data.zero_()

    def get_input_embeddings(self):
        return self.model.decoder.embed_tokens

    def forward(self, input_ids=None, attention_mask=None, labels=None, past_key_values=None, use_cache=False):
        if past_key_values is not None:
            raise NotImplementedError("the training step passes no past_key_values")
        hidden, cache = self.model.decoder(input_ids=input_ids, attention_mask=attention_mask, use_cache=use_cache)
        logits = self.lm_head(hidden).contiguous()
        loss = None
        if labels is not None:
            shift_logits = logits[..., :-1, :].contiguous()
            shift_labels = labels[..., 1:].contiguous()
            loss = nn.CrossEntropyLoss()(shift_logits.view(-1, self.config.vocab_size), shift_labels.view(-1))
        return (loss, logits, cache) if loss is not None else (logits, cache)


# ---------------------------------------------------------------- Flamingo
class FlamingoModel(nn.Module):
    """open_flamingo/src/flamingo.py's Flamingo, the parts a training step runs (__init__, forward,
    _encode_vision_x and _condition_media_locations, reproduced when transformers was not installed)."""

    def __init__(self, ref, vision_encoder, lang_encoder, eoc_token_id, media_token_id, vis_dim,
                 cross_attn_every_n_layers, perceiver):
        super().__init__()
        self.rearrange = ref.einops.rearrange
        self.eoc_token_id, self.media_token_id, self.vis_dim = eoc_token_id, media_token_id, vis_dim
        self.lang_dim = lang_encoder.config.hidden_size
        self.vision_encoder = vision_encoder  # Flamingo keeps CLIP's .visual: this VisionTransformer
        # Flamingo.__init__ builds PerceiverResampler(dim=vis_dim) with its defaults (depth 6, 8 x 64,
        # 64 latents); the preset's perceiver shape goes through the same constructor's arguments.
        self.perceiver = ref.helpers.PerceiverResampler(dim=vis_dim, depth=perceiver["depth"],
                                                        dim_head=perceiver["head_dim"], heads=perceiver["heads"],
                                                        num_latents=perceiver["num_latents"],
                                                        ff_mult=perceiver["ff_mult"])
        self.lang_encoder = lang_encoder
        self.lang_encoder.init_flamingo(media_token_id=media_token_id, lang_hidden_size=self.lang_dim,
                                        vis_hidden_size=vis_dim, cross_attn_every_n_layers=cross_attn_every_n_layers,
                                        gradient_checkpointing=False)
        self._use_gradient_checkpointing = False
        self.perceiver._use_gradient_checkpointing = False

    def forward(self, vision_x, lang_x, attention_mask=None, labels=None, clear_conditioned_layers=True,
                past_key_values=None, use_cache=False):  # Flamingo.forward, the uncached case
        assert self.lang_encoder.initialized_flamingo
        assert self.lang_encoder._use_cached_vision_x or vision_x is not None
        self._encode_vision_x(vision_x=vision_x)
        self._condition_media_locations(input_ids=lang_x)
        output = self.lang_encoder(input_ids=lang_x, attention_mask=attention_mask, labels=labels,
                                   past_key_values=past_key_values, use_cache=use_cache)
        if clear_conditioned_layers:
            self.lang_encoder.clear_conditioned_layers()
        return output

    def _encode_vision_x(self, vision_x):  # Flamingo._encode_vision_x
        assert vision_x.ndim == 6, "vision_x should be of shape (b, T_img, F, C, H, W)"
        b, T, F_ = vision_x.shape[:3]
        assert F_ == 1, "Only single frame supported"
        vision_x = self.rearrange(vision_x, "b T F c h w -> (b T F) c h w")
        with torch.no_grad():
            vision_x = self.vision_encoder(vision_x)[1]
        vision_x = self.rearrange(vision_x, "(b T F) v d -> b T F v d", b=b, T=T, F=F_)
        vision_x = self.perceiver(vision_x)
        for layer in self.lang_encoder._get_decoder_layers():
            layer.condition_vis_x(vision_x)

    def _condition_media_locations(self, input_ids):  # Flamingo._condition_media_locations
        media_locations = input_ids == self.media_token_id
        for layer in self.lang_encoder._get_decoder_layers():
            layer.condition_media_locations(media_locations)


def build_model(ref, p):
    """open_flamingo/src/factory.py's create_model_and_transforms for the preset (random weights)."""
    v, pc, xa, lm, tk = p["vision"], p["perceiver"], p["xattn"], p["lm"], p["tokens"]
    T = ref.transformer
    # open_clip's _build_vision_tower: VisionTransformer with QuickGELU for quick_gelu models, LayerNorm
    # (fp32), output_tokens set as factory.py does (vision_encoder.visual.output_tokens = True).
    visual = T.VisionTransformer(image_size=v["image_size"], patch_size=v["patch_size"], width=v["width"],
                                 layers=v["layers"], heads=v["heads"], mlp_ratio=4.0, output_dim=v["width"],
                                 act_layer=T.QuickGELU if v["quick_gelu"] else nn.GELU, output_tokens=True)
    lang_encoder = OPTForCausalLM(OptConfig(lm, tk["vocab"]))
    ref.utils.extend_instance(lang_encoder, ref.flamingo_lm.FlamingoLMMixin)
    lang_encoder.set_decoder_layers_attr_name("model.decoder.layers")  # factory's "opt" entry
    model = FlamingoModel(ref, visual, lang_encoder, tk["eoc"], tk["image"], v["width"], xa["every_n"], pc)
    if (xa["heads"], xa["head_dim"], xa["ff_mult"]) != (8, 64, 4):
        # init_flamingo builds GatedCrossAttentionBlock(dim, dim_visual) with its defaults (8 heads x 64,
        # ff_mult 4). For presets with another cross-attention shape (tiny, small) the blocks are rebuilt
        # with the preset's, through the same class, and FlamingoLayers re-made by init_flamingo_layers.
        lang_encoder.gated_cross_attn_layers = nn.ModuleList(
            ref.helpers.GatedCrossAttentionBlock(dim=lm["width"], dim_visual=v["width"], dim_head=xa["head_dim"],
                                                 heads=xa["heads"], ff_mult=xa["ff_mult"])
            if (i + 1) % xa["every_n"] == 0 else None for i in range(lm["layers"]))
        lang_encoder.init_flamingo_layers(False)
    # factory.py: freeze everything, then unfreeze the perceiver, the cross-attention and the input embeddings.
    model.requires_grad_(False)
    assert sum(q.numel() for q in model.parameters() if q.requires_grad) == 0
    model.perceiver.requires_grad_(True)
    model.lang_encoder.gated_cross_attn_layers.requires_grad_(True)
    model.lang_encoder.get_input_embeddings().requires_grad_(True)
    return model


# ---------------------------------------------------------------- the step
def cosine_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps, num_cycles=0.5):
    """transformers.get_cosine_schedule_with_warmup (optimization.py), as a LambdaLR."""

    def lr_lambda(current_step):
        if current_step < num_warmup_steps:
            return float(current_step) / float(max(1, num_warmup_steps))
        progress = float(current_step - num_warmup_steps) / float(max(1, num_training_steps - num_warmup_steps))
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * float(num_cycles) * 2.0 * progress)))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda, -1)


def loader_batches(batch):
    """own.batch_pool's (images (B,T,1,C,H,W), ids, mask) pair in the layout OpenFlamingo's loaders hand
    train_one_epoch: LAION (images (B,C,H,W), (ids, mask)); MMC4 (images (B,T,C,H,W), [(ids (1,L), mask (1,L))])."""
    (li, lids, lmask), (mi, mids, mmask) = batch
    laion = (li.reshape(li.shape[0], *li.shape[3:]).contiguous(), (lids, lmask))
    mmc4 = (mi.reshape(mi.shape[0], mi.shape[1], *mi.shape[3:]).contiguous(),
            [(mids[b:b + 1], mmask[b:b + 1]) for b in range(mids.shape[0])])
    return laion, mmc4


def mmc4_labels(input_ids, pad_token_id, media_token_id, endofchunk_token_id):
    """train_one_epoch's MMC4 label masking, op for op (tensor indexing in Python loops)."""
    labels = input_ids.clone()
    labels[labels == pad_token_id] = -100
    for i in range(labels.shape[0]):
        label_idx = 0
        while label_idx < labels.shape[1] and labels[i][label_idx] != media_token_id:
            labels[i][label_idx] = -100
            label_idx += 1
        endofchunk_idxs = torch.where(labels[i] == endofchunk_token_id)[0]
        for endofchunk_idx in endofchunk_idxs:
            token_idx = endofchunk_idx + 1
            while token_idx < labels.shape[1] and labels[i][token_idx] != media_token_id:
                labels[i][token_idx] = -100
                token_idx += 1
    labels[labels == media_token_id] = -100
    return labels


def _range(name):
    return torch.autograd.profiler.record_function(name)


class ReferenceTrainer:
    """open_flamingo/train/train.py's optimizer and scheduler and train_one_epoch's step (fp32, one
    process: no DDP wrapper at world size 1, so model.module is the model, no FSDP, grad accumulation 1)."""

    def __init__(self, model, p):
        self.model, self.p, self.tk = model, p, p["tokens"]
        params_to_optimize = [(n, q) for n, q in model.named_parameters()
                              if q.requires_grad and not getattr(q, "exclude_from_optimizer", False)]
        with_wd = [q for n, q in params_to_optimize if "gated_cross_attn" in n]
        without_wd = [q for n, q in params_to_optimize if "gated_cross_attn" not in n]
        self.optimizer = torch.optim.AdamW([{"params": with_wd, "weight_decay": WEIGHT_DECAY},
                                            {"params": without_wd, "weight_decay": 0.0}], lr=p["lr"])
        self.lr_scheduler = cosine_schedule_with_warmup(self.optimizer, p["warmup"], p["total"])
        self.label_s = 0.0  # time in the label masking of the last step

    def train_step(self, batch_laion, batch_mmc4):
        model, tk = self.model, self.tk
        media_token_id, endofchunk_token_id, pad_token_id = tk["image"], tk["eoc"], tk["pad"]
        cast_dtype = None  # get_cast_dtype("fp32")
        # LAION forward pass
        with _range("forward_laion"):
            images = batch_laion[0].to(DEVICE, dtype=cast_dtype, non_blocking=True)
            images = self.model.rearrange(images, "(b t f) c h w -> b t f c h w", t=1, f=1)
            input_ids = batch_laion[1][0].to(DEVICE, dtype=cast_dtype, non_blocking=True)
            attention_mask = batch_laion[1][1].to(DEVICE, dtype=cast_dtype, non_blocking=True)
            t0 = time.perf_counter()
            labels = input_ids.clone()
            labels[labels == pad_token_id] = -100
            labels[labels == media_token_id] = -100
            labels = labels.to(DEVICE)
            self.label_s = time.perf_counter() - t0
            loss_laion = model(vision_x=images, lang_x=input_ids, attention_mask=attention_mask, labels=labels)[0]
        with _range("backward_laion"):
            divided_loss_laion = loss_laion / GRAD_ACCUM
            (divided_loss_laion * LOSS_MULTIPLIER_LAION).backward()
        # MMC4 forward pass
        with _range("forward_mmc4"):
            images = batch_mmc4[0].to(DEVICE, dtype=cast_dtype, non_blocking=True)
            images = self.model.rearrange(images, "b (t f) c h w -> b t f c h w", f=1)
            input_ids = torch.stack([x[0] for x in batch_mmc4[1]]).squeeze(1)
            attention_mask = torch.stack([x[1] for x in batch_mmc4[1]]).squeeze(1)
            t0 = time.perf_counter()
            with _range("labels_mmc4"):
                labels = mmc4_labels(input_ids, pad_token_id, media_token_id, endofchunk_token_id).to(DEVICE)
            self.label_s += time.perf_counter() - t0
            loss_mmc4 = model(vision_x=images, lang_x=input_ids.to(DEVICE), attention_mask=attention_mask.to(DEVICE),
                              labels=labels)[0]
            if torch.isnan(loss_mmc4):  # train_one_epoch skips the batch; a benchmark stops
                raise SystemExit("loss is nan")
        with _range("backward_mmc4"):
            divided_loss_mmc4 = loss_mmc4 / GRAD_ACCUM
            (divided_loss_mmc4 * LOSS_MULTIPLIER_MMC4).backward()
        with _range("optimizer"):
            # only the added tokens' (<image>, <|endofchunk|>) embedding rows are updated
            embed_grad = model.lang_encoder.get_input_embeddings().weight.grad
            zero_mask = torch.zeros_like(embed_grad)
            zero_mask[media_token_id] = torch.ones_like(zero_mask[media_token_id])
            zero_mask[endofchunk_token_id] = torch.ones_like(zero_mask[endofchunk_token_id])
            model.lang_encoder.get_input_embeddings().weight.grad = embed_grad * zero_mask
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            self.optimizer.step()
            self.lr_scheduler.step()
            self.optimizer.zero_grad(set_to_none=True)
        return loss_laion, loss_mmc4


# ---------------------------------------------------------------- --check
def check_name_map(own_model, ref_model, p):
    """own (train_step_baseline.Flamingo) parameter name -> reference state_dict name."""
    m = {}
    v, lm, xa = p["vision"], p["lm"], p["xattn"]
    for n in ("conv1.weight", "class_embedding", "positional_embedding", "ln_pre.weight", "ln_pre.bias"):
        m[f"vision_encoder.{n}"] = f"vision_encoder.{n}"
    for i in range(v["layers"]):
        o, r = f"vision_encoder.blocks.{i}", f"vision_encoder.transformer.resblocks.{i}"
        for a, b in (("ln_1", "ln_1"), ("ln_2", "ln_2"), ("out_proj", "attn.out_proj"), ("c_fc", "mlp.c_fc"),
                     ("c_proj", "mlp.c_proj")):
            m[f"{o}.{a}.weight"], m[f"{o}.{a}.bias"] = f"{r}.{b}.weight", f"{r}.{b}.bias"
        m[f"{o}.in_proj.weight"], m[f"{o}.in_proj.bias"] = f"{r}.attn.in_proj_weight", f"{r}.attn.in_proj_bias"
    m["perceiver.latents"] = "perceiver.latents"
    m["perceiver.norm.weight"], m["perceiver.norm.bias"] = "perceiver.norm.weight", "perceiver.norm.bias"
    for i in range(p["perceiver"]["depth"]):
        for n in ("norm_media.weight", "norm_media.bias", "norm_latents.weight", "norm_latents.bias",
                  "to_q.weight", "to_kv.weight", "to_out.weight"):
            m[f"perceiver.layers.{i}.0.{n}"] = f"perceiver.layers.{i}.0.{n}"
        for n in ("0.weight", "0.bias", "1.weight", "3.weight"):
            m[f"perceiver.layers.{i}.1.net.{n}"] = f"perceiver.layers.{i}.1.{n}"
    dec = "lang_encoder.model.decoder"
    m["embed_tokens.weight"] = f"{dec}.embed_tokens.weight"
    m["embed_positions.weight"] = f"{dec}.embed_positions.weight"
    m["final_layer_norm.weight"], m["final_layer_norm.bias"] = f"{dec}.final_layer_norm.weight", \
        f"{dec}.final_layer_norm.bias"
    for i in range(lm["layers"]):
        o, r = f"layers.{i}", f"{dec}.layers.{i}.decoder_layer"
        for a, b in (("q_proj", "self_attn.q_proj"), ("k_proj", "self_attn.k_proj"), ("v_proj", "self_attn.v_proj"),
                     ("out_proj", "self_attn.out_proj"), ("self_attn_layer_norm", "self_attn_layer_norm"),
                     ("fc1", "fc1"), ("fc2", "fc2"), ("final_layer_norm", "final_layer_norm")):
            m[f"{o}.{a}.weight"], m[f"{o}.{a}.bias"] = f"{r}.{b}.weight", f"{r}.{b}.bias"
        if (i + 1) % xa["every_n"] == 0:
            o, r = f"xattn.{i}", f"{dec}.layers.{i}.gated_cross_attn_layer"
            for n in ("attn.norm.weight", "attn.norm.bias", "attn.to_q.weight", "attn.to_kv.weight",
                      "attn.to_out.weight", "attn_gate", "ff_gate"):
                m[f"{o}.{n}"] = f"{r}.{n}"
            for n in ("0.weight", "0.bias", "1.weight", "3.weight"):
                m[f"{o}.ff.net.{n}"] = f"{r}.ff.{n}"
    return m


# Reference tensors the own baseline does not have, by construction: open_clip's pooled path
# (ln_post on the class token, then proj), which Flamingo never uses (it takes forward()[1], the tokens).
REF_ONLY = ("vision_encoder.ln_post.weight", "vision_encoder.ln_post.bias", "vision_encoder.proj")


def _param(module, name):
    for part in name.split(".")[:-1]:
        module = getattr(module, part)
    return getattr(module, name.split(".")[-1])


def _rel(a, b):
    diff = (a - b).abs().max().item()
    return diff, diff / max(b.abs().max().item(), 1e-30)


def run_check(ref, p):
    torch.manual_seed(1)
    own_model = own.Flamingo(p)
    own_model.freeze_as_openflamingo()
    ref_model = build_model(ref, p)
    with torch.no_grad():  # open gates, so the cross-attention counts (both start at 0)
        for i, xa in enumerate(own_model.xattn):
            if not isinstance(xa, nn.Identity):
                xa.attn_gate.fill_(0.5 + 0.1 * i)
                xa.ff_gate.fill_(-0.4 - 0.1 * i)
    name_map = check_name_map(own_model, ref_model, p)
    own_names = dict(own_model.named_parameters())
    ref_names = set(ref_model.state_dict().keys())
    unmapped_own = sorted(set(own_names) - set(name_map))
    missing_ref = sorted(r for r in name_map.values() if r not in ref_names)
    tied = {"lang_encoder.lm_head.weight"}  # = embed_tokens.weight
    alias = {k for k in ref_names if k.startswith("lang_encoder.old_decoder_blocks.")
             or k.startswith("lang_encoder.gated_cross_attn_layers.")}  # the same tensors as layers.i.*
    uncovered_ref = sorted(ref_names - set(name_map.values()) - set(REF_ONLY) - tied - alias)
    if unmapped_own or missing_ref or uncovered_ref:
        raise SystemExit(f"check: name map incomplete: own without a target {unmapped_own}, "
                         f"targets missing in the reference {missing_ref}, reference tensors not covered {uncovered_ref}")
    with torch.no_grad():
        for o, r in name_map.items():
            dst = _param(ref_model, r)
            src = own_names[o]
            if dst.shape != src.shape:
                raise SystemExit(f"check: shape of {o} {tuple(src.shape)} != {r} {tuple(dst.shape)}")
            dst.copy_(src)
    own_model.eval()
    ref_model.eval()
    pool = own.batch_pool(p, 7)
    ok = True
    print(f"check preset: tensors mapped {len(name_map)}; reference-only by construction: {', '.join(REF_ONLY)} "
          f"(open_clip's pooled output, ln_post(cls) @ proj: Flamingo uses forward()[1], the tokens)")
    tol = 1e-5
    for kind, (images, ids, mask) in zip(("laion", "mmc4"), pool[0]):
        tk = p["tokens"]
        own_labels = own.laion_labels(ids, tk) if kind == "laion" else own.mmc4_labels(ids, tk)
        if kind == "laion":
            ref_labels = ids.clone()
            ref_labels[ref_labels == tk["pad"]] = -100
            ref_labels[ref_labels == tk["image"]] = -100
        else:
            ref_labels = mmc4_labels(ids, tk["pad"], tk["image"], tk["eoc"])
        labels_equal = torch.equal(own_labels, ref_labels)
        with torch.no_grad():
            own_logits = own_model(images, ids, mask)
            V = own_logits.shape[-1]
            own_loss = F.cross_entropy(own_logits[:, :-1].reshape(-1, V), own_labels[:, 1:].reshape(-1),
                                       ignore_index=-100)
            ref_loss, ref_logits, _ = ref_model(vision_x=images, lang_x=ids, attention_mask=mask, labels=ref_labels)
        d_logits, r_logits = _rel(own_logits, ref_logits)
        d_loss, r_loss = _rel(own_loss, ref_loss)
        good = labels_equal and r_logits <= tol and r_loss <= tol
        ok &= good
        print(f"check {kind}: batch {tuple(ids.shape)} labels_equal={labels_equal} logits max_abs_diff={d_logits:.3e} "
              f"(rel {r_logits:.3e}) loss own={own_loss.item():.6f} ref={ref_loss.item():.6f} "
              f"abs_diff={d_loss:.3e} (rel {r_loss:.3e}) -> {'ok' if good else 'FAIL'}")
    print(f"check forward: {'ok' if ok else 'FAIL'} (tolerance {tol:g} relative to the reference's largest magnitude)")
    ok &= check_steps(own_model, ref_model, name_map, own_names, p)
    print(f"check: {'PASS' if ok else 'FAIL'}")
    return ok


def check_steps(own_model, ref_model, name_map, own_names, p, steps=4, tol=1e-3):
    """Whole training steps (labels, loss, backward, embedding row mask, clipping, AdamW groups, schedule)
    of both trainers from the same weights, dropout off: the parameter updates must agree."""
    trainable = [o for o in name_map if own_names[o].requires_grad]
    start = {o: own_names[o].detach().clone() for o in trainable}
    own_trainer, ref_trainer = own.Trainer(own_model, p), ReferenceTrainer(ref_model, p)
    pool = own.batch_pool(p, 11)
    for s in range(steps):
        own_trainer.train_step(pool[s])
        ref_trainer.train_step(*loader_batches(pool[s]))
    # Allowed per tensor: tol of its largest update plus 4 ulp of its largest weight (the weights are
    # stored in fp32, so an update of ~lr to a weight of ~1 is itself rounded to ~1e-7).
    eps = torch.finfo(torch.float32).eps
    worst, worst_name, worst_rel = 0.0, "-", 0.0
    for o in trainable:
        d_own = own_names[o].detach() - start[o]
        d_ref = _param(ref_model, name_map[o]).detach() - start[o]
        scale = d_ref.abs().max().item()
        diff = (d_own - d_ref).abs().max().item()
        allowed = tol * scale + 4 * eps * start[o].abs().max().item()
        ratio = diff / allowed if allowed > 0 else (0.0 if diff == 0 else float("inf"))
        if ratio >= worst:
            worst, worst_name, worst_rel = ratio, o, diff / scale if scale > 0 else 0.0
    good = worst <= 1.0
    print(f"check steps: {steps} training steps from the same weights, {len(trainable)} trainable tensors; worst "
          f"tensor {worst_name}: updates differ by {worst_rel:.3e} of its largest update, {worst:.2f} of the allowed "
          f"({tol:g} of the update + 4 ulp of the weight) -> {'ok' if good else 'FAIL'}")
    return good


# ---------------------------------------------------------------- --profile
def top_modules(model, p):
    """(name, module) of each top-level module whose forward is timed."""
    lm = model.lang_encoder
    mods = [("vision", model.vision_encoder), ("perceiver", model.perceiver),
            ("embed+mask", None)]
    for i, layer in enumerate(lm._get_decoder_layers()):
        if layer.gated_cross_attn_layer is not None:
            mods.append((f"xattn.{i}", layer.gated_cross_attn_layer))
        mods.append((f"decoder.{i}", layer.decoder_layer))
    mods.append(("final_ln", lm.model.decoder.final_layer_norm))
    mods.append(("head+loss", None))
    return mods


def module_times(model, trainer, batches, p):
    """Per-module forward wall time (ms per step) over the steps of BATCHES, with forward hooks."""
    lm = model.lang_encoder
    totals, starts, marks = {}, {}, {}
    hooks = []

    def pre(name):
        def f(_m, _i):
            starts[name] = time.perf_counter()
        return f

    def post(name):
        def f(_m, _i, _o):
            totals[name] = totals.get(name, 0.0) + time.perf_counter() - starts[name]
        return f

    for name, mod in top_modules(model, p):
        if mod is not None:
            hooks.append(mod.register_forward_pre_hook(pre(name)))
            hooks.append(mod.register_forward_hook(post(name)))
    # embed+mask: decoder entry -> first layer; head+loss: lm_head -> end of the causal LM's forward
    first = lm._get_decoder_layers()[0]
    hooks.append(lm.model.decoder.register_forward_pre_hook(lambda m, i: marks.__setitem__("dec", time.perf_counter())))
    hooks.append(first.register_forward_pre_hook(
        lambda m, i: totals.__setitem__("embed+mask", totals.get("embed+mask", 0.0) + time.perf_counter() - marks["dec"])))
    hooks.append(lm.lm_head.register_forward_pre_hook(lambda m, i: marks.__setitem__("head", time.perf_counter())))
    hooks.append(lm.register_forward_hook(
        lambda m, i, o: totals.__setitem__("head+loss", totals.get("head+loss", 0.0) + time.perf_counter() - marks["head"])))
    for batch in batches:
        trainer.train_step(*batch)
    for h in hooks:
        h.remove()
    return {k: v * 1e3 / len(batches) for k, v in totals.items()}


RANGES = ("forward_laion", "backward_laion", "forward_mmc4", "backward_mmc4", "optimizer")


def write_profile(path, model, trainer, pool, p, steps, preset, threads):
    from torch.profiler import ProfilerActivity, profile
    batches = [pool[i % len(pool)] for i in range(steps)]
    mt = module_times(model, trainer, batches, p)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=False) as prof:
        for b in batches:
            trainer.train_step(*b)
    events = prof.events()
    # Group each op under the step range (record_function) that encloses it.
    by_range = {r: {} for r in RANGES}
    ops_per_range = {r: 0 for r in RANGES}
    top_per_range = {r: 0 for r in RANGES}
    total_ops, top_ops, range_time, labels_time = 0, 0, {r: 0.0 for r in RANGES}, 0.0
    # Allocations: Kineto's [memory] records with a positive size (CPU allocator calls); the
    # FunctionEvent tree folds them into the enclosing ops.
    allocs = sum(1 for k in prof.profiler.kineto_results.events() if k.name() == "[memory]" and k.nbytes() > 0)
    for e in events:
        if e.name == "[memory]":
            continue
        if e.name in RANGES or e.name == "labels_mmc4":
            if e.name in RANGES:
                range_time[e.name] += e.cpu_time_total
            else:
                labels_time += e.cpu_time_total
            continue
        enclosing, parent = None, e.cpu_parent
        while parent is not None:
            if parent.name in RANGES:
                enclosing = parent.name
                break
            parent = parent.cpu_parent
        if enclosing is None:
            continue
        total_ops += 1
        ops_per_range[enclosing] += 1
        if not (e.cpu_parent is not None and e.cpu_parent.name.startswith("aten::")):
            top_ops += 1  # called from Python or by the autograd engine, not from inside another op
            top_per_range[enclosing] += 1
        agg = by_range[enclosing].setdefault(e.name, [0.0, 0])
        agg[0] += e.self_cpu_time_total
        agg[1] += 1
    with open(path, "w") as out:
        w = out.write
        w(f"# train_step_openflamingo profile: preset={preset} threads={threads} steps={steps} "
          f"torch={torch.__version__}\n")
        w("# per-op self CPU time (torch.profiler, CPU, profile_memory) by step range; ms per step; "
          "count per step; includes the profiler's own overhead\n\n")
        w(f"ops per step, top-level (from Python or the autograd engine): {top_ops / steps:.0f}; "
          f"all calls (ops called inside ops counted too): {total_ops / steps:.0f}\n")
        w(f"allocations per step (CPU allocator calls, Kineto [memory] records of positive size): "
          f"{allocs / steps:.0f}\n")
        w("top-level ops per step by range: " +
          ", ".join(f"{r} {top_per_range[r] / steps:.0f}" for r in RANGES) + "\n")
        w("all calls per step by range: " + ", ".join(f"{r} {ops_per_range[r] / steps:.0f}" for r in RANGES) + "\n")
        w("range time under the profiler (cpu_time_total) per step, ms: " +
          ", ".join(f"{r} {range_time[r] / 1e3 / steps:.2f}" for r in RANGES) +
          f"; of forward_mmc4, the MMC4 label masking: {labels_time / 1e3 / steps:.2f}\n\n")
        w("## per-module forward time without the profiler (forward hooks, wall ms per step, LAION + MMC4)\n")
        for name, _ in top_modules(model, p):
            w(f"  {name:12s} {mt.get(name, 0.0):8.3f}\n")
        w(f"  {'sum':12s} {sum(mt.values()):8.3f}\n\n")
        phases = (("forward (LAION + MMC4)", ("forward_laion", "forward_mmc4")),
                  ("backward (LAION + MMC4)", ("backward_laion", "backward_mmc4")), ("optimizer", ("optimizer",)))
        for title, parts in phases:
            merged = {}
            for r in parts:
                for name, (t, c) in by_range[r].items():
                    agg = merged.setdefault(name, [0.0, 0])
                    agg[0] += t
                    agg[1] += c
            tot = sum(v[0] for v in merged.values())
            w(f"## {title}: self CPU {tot / 1e3 / steps:.3f} ms per step; top 10 ops\n")
            w(f"  {'op':44s} {'self ms/step':>12s} {'%':>6s} {'calls/step':>10s}\n")
            for name, (t, c) in sorted(merged.items(), key=lambda kv: -kv[1][0])[:10]:
                w(f"  {name[:44]:44s} {t / 1e3 / steps:12.3f} {100 * t / max(tot, 1e-9):6.1f} {c / steps:10.1f}\n")
            w("\n")
        for r in RANGES:
            rows = sorted(by_range[r].items(), key=lambda kv: -kv[1][0])
            tot = sum(v[0] for v in by_range[r].values())
            w(f"## {r}: self CPU {tot / 1e3 / steps:.3f} ms per step, {ops_per_range[r] / steps:.0f} ops per step\n")
            w(f"  {'op':44s} {'self ms/step':>12s} {'%':>6s} {'calls/step':>10s}\n")
            for name, (t, c) in rows[:25]:
                w(f"  {name[:44]:44s} {t / 1e3 / steps:12.3f} {100 * t / max(tot, 1e-9):6.1f} {c / steps:10.1f}\n")
            w("\n")
    return mt


# ---------------------------------------------------------------- main
def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("preset", choices=sorted(own.PRESETS))
    ap.add_argument("threads", type=int)
    ap.add_argument("warmup", type=int, nargs="?", default=5)
    ap.add_argument("iters", type=int, nargs="?", default=30)
    ap.add_argument("--profile", metavar="OUT.txt", help="write per-op and per-module tables of a few steps")
    ap.add_argument("--profile-steps", type=int, default=5)
    ap.add_argument("--check", action="store_true", help="compare logits and loss with train_step_baseline.py")
    a = ap.parse_args(argv)
    if a.threads < 1 or a.warmup < 0 or a.iters < 1:
        ap.error("THREADS and ITERS must be >= 1, WARMUP >= 0")
    return a


def main(argv):
    a = parse_args(argv)
    own.check_threads(a.threads)
    ref = Reference()
    p = own.PRESETS[a.preset]
    if a.check:
        return 0 if run_check(ref, p) else 1
    torch.manual_seed(42)
    random.seed(42)
    model = build_model(ref, p)
    model.train()
    trainer = ReferenceTrainer(model, p)
    pool = [loader_batches(b) for b in own.batch_pool(p, 42)]
    samples_per_step = p["laion"]["batch"] + p["mmc4"]["batch"]
    times, label_times = [], []
    for it in range(a.warmup + a.iters):
        batch = pool[it % len(pool)]
        t0 = time.perf_counter()
        trainer.train_step(*batch)
        dt = time.perf_counter() - t0
        if it >= a.warmup:
            times.append(dt)
            label_times.append(trainer.label_s)
    med = statistics.median(times)
    print(f"openflamingo preset={a.preset} threads={a.threads} warmup={a.warmup} iters={a.iters} "
          f"median_step_ms={med * 1e3:.3f} min_step_ms={min(times) * 1e3:.3f} max_step_ms={max(times) * 1e3:.3f} "
          f"samples_per_s={samples_per_step / med:.2f} labels_ms={statistics.median(label_times) * 1e3:.3f}")
    if a.profile:
        write_profile(a.profile, model, trainer, pool, p, a.profile_steps, a.preset, a.threads)
        print(f"profile written to {a.profile}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
