#!/usr/bin/env python3
"""OpenFlamingo's own Flamingo as the oracle of our engine (issue 41, item 2).

The model is built by open_flamingo's own factory, create_model_and_transforms
(open-flamingo 2.0.1, open_flamingo/src/factory.py), from local files only
(HF_HUB_OFFLINE=1; nothing downloads):
  - an open_clip CLIP from a registered model config (open_clip.add_model_config),
    quick_gelu as OpenAI's CLIP, "pretrained" = a state_dict file (clip.pt) of that
    CLIP with its weights moved off their init;
  - a transformers causal LM made from a small random config (OPTConfig,
    GPTNeoXConfig, LlamaConfig, MptConfig), moved off its init and saved with
    save_pretrained (lm/), so the factory's AutoModelForCausalLM.from_pretrained
    reads it back;
  - a word-level tokenizer saved with save_pretrained, so the factory adds
    <|endofchunk|>, <image> (and <PAD> where the tokenizer has none) and resizes
    the LM's embeddings itself.
The factory then extends the LM with FlamingoLMMixin, wraps both in Flamingo and
freezes as it always does. The LM's attention runs "eager" (what transformers'
4.28-4.33, which OpenFlamingo pinned, always ran). Then the trainable parameters are
moved off their init too, the gates are opened, and dropout is 0 in every config.

The training steps are OpenFlamingo's own train_one_epoch (open_flamingo/train/
train_utils.py, shipped in the wheel; a stand-in `wandb` module lets it import, and it
never calls it without report_to_wandb): its label masking, loss multipliers, backward,
embedding-gradient row mask, clip_grad_norm_ and optimizer/scheduler steps. What
train.py's main does around it (parameter groups, the scheduler, total steps) is
re-stated in optimizer_and_schedule. The logits, labels and losses the test compares
are those of train_one_epoch's first iteration, which runs on the initial weights.

usage:
  openflamingo_oracle.py make ROOT
    ROOT/<case>/case.json (written by openflamingo_oracle_test.cpp) ->
      lm/, clip.pt        the "pretrained" LM (save_pretrained) and CLIP (state_dict) the factory loaded
      checkpoint_0.pt     OpenFlamingo's save_checkpoint of the initial model (filtered, "module." keys)
      flamingo.pt         the model's state_dict: every_n 1 as a bare state dict (a
                          released checkpoint.pt), every_n 2 in the checkpoint dict
                          form {"epoch", "model_state_dict"}
      reference.pt        {"init": state_dict, "batches": [...]}: flamingo-train replay's input
      logits_<kind>.bin   float32 logits of the first iteration's LAION / MMC4 forward
      labels_<kind>.bin   int64 labels train_one_epoch made for them
      loss_<kind>.txt     the loss the model returned
      losses.txt          per iteration "<laion> <mmc4>" of two training iterations
      expected_params.pt  the trainable parameters after them (init_params.pt: before)
      exact_params.pt     the same two iterations in float64
  openflamingo_oracle.py check CASE_DIR OUT
    OUT (ours, torch.load-able {name: tensor}) against expected_params.pt: same names,
    and every tensor within tolerance; prints the worst tensor.
Exit status 77: a package is missing (the test skips outside CI, fails under CI=true).
"""
import copy
import json
import os
import sys
import tempfile

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

try:
    import torch
    if len(sys.argv) > 1 and sys.argv[1] == "make":  # check needs torch only
        import open_clip
        import transformers
        from tokenizers import Tokenizer, models, pre_tokenizers
        from open_flamingo import create_model_and_transforms
except ImportError as e:  # the environment is scripts/python-env.sh's; say what is missing
    print(f"oracle unavailable: {e}", file=sys.stderr)
    sys.exit(77)
torch.set_num_threads(1)  # tiny shapes; no intra-op threads to contend with the engine's

FAMILY_LAYERS = {"opt": "model.decoder.layers", "gpt_neox": "gpt_neox.layers", "llama": "model.layers",
                 "mpt": "transformer.blocks"}


# ---------------------------------------------------------------- the model, by the factory
def hf_config(c):
    """A transformers config with the case's shapes and our family defaults (LmOptions in
    backend/model/lm_family.h): OPT pre-LN, ReLU, biases, tied; GPT-NeoX rotary on the whole
    head (rotary_pct 1.0), sequential residual, untied; LLaMA RMSNorm eps 1e-6, untied;
    MPT-7B layout (no biases, ALiBi max 8, no QK LayerNorm), tied. Dropout 0 everywhere."""
    f, V = c["family"], c["lm_vocab_size"]
    common = dict(vocab_size=V, num_hidden_layers=c["lm_layers"], num_attention_heads=c["lm_heads"],
                  max_position_embeddings=c["max_positions"])
    if f == "opt":
        return transformers.OPTConfig(hidden_size=c["width"], ffn_dim=c["ffn_dim"], word_embed_proj_dim=c["width"],
                                      do_layer_norm_before=True, activation_function="relu", dropout=0.0,
                                      attention_dropout=0.0, layerdrop=0.0, pad_token_id=c["pad_id"],
                                      bos_token_id=0, eos_token_id=c["eos_id"], tie_word_embeddings=True, **common)
    if f == "gpt_neox":
        return transformers.GPTNeoXConfig(hidden_size=c["width"], intermediate_size=c["ffn_dim"], hidden_act="gelu",
                                          rotary_pct=1.0, rotary_emb_base=10000, use_parallel_residual=False,
                                          attention_dropout=0.0, hidden_dropout=0.0, layer_norm_eps=1e-5,
                                          tie_word_embeddings=False, bos_token_id=0, eos_token_id=c["eos_id"],
                                          **common)
    if f == "llama":
        return transformers.LlamaConfig(hidden_size=c["width"], intermediate_size=c["ffn_dim"], hidden_act="silu",
                                        rms_norm_eps=1e-6, rope_theta=10000.0, attention_dropout=0.0,
                                        tie_word_embeddings=False, bos_token_id=0, eos_token_id=c["eos_id"],
                                        **common)
    if f == "mpt":
        # transformers' MPT port builds its MLP 4 x d_model wide whatever expansion_ratio says.
        assert c["ffn_dim"] == 4 * c["width"], "transformers' MptMLP is 4 x d_model"
        return transformers.MptConfig(d_model=c["width"], n_heads=c["lm_heads"], n_layers=c["lm_layers"],
                                      expansion_ratio=4, max_seq_len=c["max_positions"], vocab_size=V,
                                      resid_pdrop=0.0, emb_pdrop=0.0, layer_norm_epsilon=1e-5, no_bias=True,
                                      attn_config={"alibi": True, "alibi_bias_max": 8, "attn_pdrop": 0,
                                                   "qk_ln": False, "clip_qkv": None, "softmax_scale": None},
                                      tie_word_embeddings=True)
    raise SystemExit(f"case.json: family '{f}' is not one of {sorted(FAMILY_LAYERS)}")


def save_tokenizer(c, path):
    """A word-level tokenizer of lm_vocab_size tokens: <s> 0, </s> eos_id, <unk> 3, and <pad> 1
    only for OPT (whose tokenizer has one); the factory adds the rest."""
    names = {0: "<s>", c["eos_id"]: "</s>", 3: "<unk>"}
    if c["family"] == "opt":
        names[c["pad_id"]] = "<pad>"
    vocab = {names.get(i, f"w{i}"): i for i in range(c["lm_vocab_size"])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    kwargs = dict(bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    if c["family"] == "opt":
        kwargs["pad_token"] = "<pad>"
    transformers.PreTrainedTokenizerFast(tokenizer_object=tok, **kwargs).save_pretrained(path)


def build(c, work, out):
    """The factory's model from a CLIP checkpoint file (out/clip.pt) and a Hugging Face LM
    folder (out/lm), both random and then moved off their init (perturb), as pretrained
    weights would be; the test loads them with our checkpoint::loadPretrained too."""
    clip_name = f"fs-oracle-vit-{c['name']}"
    clip_cfg = {"embed_dim": c["vision_output_dim"], "quick_gelu": c["quick_gelu"],
                "vision_cfg": {"image_size": c["image_size"], "layers": c["vision_layers"], "width": c["vision_width"],
                               "head_width": c["vision_width"] // c["vision_heads"], "patch_size": c["patch_size"],
                               "mlp_ratio": 4.0},
                "text_cfg": {"context_length": 8, "vocab_size": 64, "width": 16, "heads": 2, "layers": 1}}
    with open(os.path.join(work, clip_name + ".json"), "w") as f:
        json.dump(clip_cfg, f)
    open_clip.add_model_config(os.path.join(work, clip_name + ".json"))
    lm_dir, tok_dir, clip_file = os.path.join(out, "lm"), os.path.join(work, "tokenizer"), os.path.join(out, "clip.pt")
    lm = transformers.AutoModelForCausalLM.from_config(hf_config(c))
    perturb(lm, c["seed"] + 3)
    lm.save_pretrained(lm_dir)
    clip = open_clip.create_model(clip_name)
    perturb(clip, c["seed"] + 4)
    torch.save(clip.state_dict(), clip_file)
    save_tokenizer(c, tok_dir)
    model, _, tokenizer = create_model_and_transforms(clip_name, clip_file, lm_dir, tok_dir,
                                                      cross_attn_every_n_layers=c["every_n"])
    lm = model.lang_encoder
    assert lm.decoder_layers_attr_name == FAMILY_LAYERS[c["family"]], lm.decoder_layers_attr_name
    # The ids the factory and train_one_epoch take from the tokenizer must be the case's.
    ids = {"image_id": tokenizer("<image>", add_special_tokens=False)["input_ids"][-1],
           "endofchunk_id": tokenizer("<|endofchunk|>", add_special_tokens=False)["input_ids"][-1],
           "pad_id": tokenizer.pad_token_id, "vocab_size": len(tokenizer)}
    for k, v in ids.items():
        if v != c[k]:
            raise SystemExit(f"{c['name']}: the factory's tokenizer gives {k} {v}, case.json says {c[k]}")
    assert (model.eoc_token_id, model.media_token_id) == (c["endofchunk_id"], c["image_id"])
    assert lm.get_input_embeddings().weight.shape[0] == c["vocab_size"]
    # Eager attention: the only path of the transformers versions OpenFlamingo pinned.
    lm.set_attn_implementation("eager")
    return model, tokenizer


def perturb(model, seed, trainable_only=False):
    """Parameters off their init (norms off 1 / 0, new embedding rows)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.requires_grad or not trainable_only:
                p.add_(torch.randn(p.shape, generator=g) * 0.05)


def open_gates(model):
    with torch.no_grad():
        v = 0.3
        for block in model.lang_encoder.gated_cross_attn_layers:
            if block is not None:
                block.attn_gate.fill_(v)
                block.ff_gate.fill_(-0.5 * v)
                v += 0.4


# ---------------------------------------------------------------- batches
def words(g, n, c):
    """n ordinary token ids (none of the special ones)."""
    special = {0, 3, c["eos_id"], c["pad_id"], c["image_id"], c["endofchunk_id"]}
    out = []
    while len(out) < n:
        t = int(torch.randint(4, c["lm_vocab_size"], (1,), generator=g))
        if t not in special:
            out.append(t)
    return out


def pad_rows(rows, L, c):
    ids = torch.full((len(rows), L), c["pad_id"], dtype=torch.long)
    mask = torch.zeros((len(rows), L), dtype=torch.long)
    for i, r in enumerate(rows):
        r = r[:L]
        ids[i, :len(r)] = torch.tensor(r)
        mask[i, :len(r)] = 1
    return ids, mask


def batches(c, g):
    """One step's LAION and MMC4 batches in the token layout of OpenFlamingo's data.py: LAION
    "<image>caption<|endofchunk|></s>" (OPT and LLaMA prepend <s>), truncated or right-padded;
    MMC4 documents "<image>text<|endofchunk|>..." with text outside any chunk, ending
    "<|endofchunk|></s>", padded to max_tokens, images zero-padded to max_num_images."""
    img, eoc, eos = c["image_id"], c["endofchunk_id"], c["eos_id"]
    bos = [0] if c["family"] in ("opt", "llama") else []
    H = c["image_size"]
    laion_rows = []
    for i in range(c["laion_batch"]):
        caption = words(g, [3, 6, 12][i % 3], c)
        laion_rows.append(bos + [img] + caption + [eoc, eos])
    L = c["laion_tokens"]
    laion_ids, laion_mask = pad_rows(laion_rows, min(L, max(len(r) for r in laion_rows)), c)
    laion = (torch.randn((c["laion_batch"], 1, 1, 3, H, H), generator=g), laion_ids, laion_mask)

    T = c["mmc4_images"]
    mmc4_rows, n_images = [], []
    for i in range(c["mmc4_batch"]):
        if i % 2 == 0:  # two images, text between chunks that is not a target
            row = bos + [img] + words(g, 4, c) + [eoc] + words(g, 3, c) + [img] + words(g, 5, c) + [eoc, eos]
            n_images.append(2)
        else:  # one image after leading text
            row = bos + words(g, 2, c) + [img] + words(g, 6, c) + [eoc, eos]
            n_images.append(1)
        mmc4_rows.append(row)
    mmc4_ids, mmc4_mask = pad_rows(mmc4_rows, c["mmc4_tokens"], c)
    images = torch.randn((c["mmc4_batch"], T, 1, 3, H, H), generator=g)
    for i, n in enumerate(n_images):
        images[i, n:] = 0  # data.py pads a document's images with zeros
    return {"laion": laion, "mmc4": (images, mmc4_ids, mmc4_mask)}


# ---------------------------------------------------------------- train.py's optimizer, OpenFlamingo's train_one_epoch


def optimizer_and_schedule(model, c):
    """open_flamingo/train/train.py, main: AdamW over the parameters that require grad, weight decay
    on those whose name contains "gated_cross_attn" (get_grouped_params), 0 on the rest; the
    scheduler by --lr_scheduler from transformers (linear, cosine, else constant, with warmup);
    total steps = train_num_samples_mmc4 // (batch_size_mmc4 * world_size) * num_epochs."""
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    decay = [p for n, p in named if "gated_cross_attn" in n]
    rest = [p for n, p in named if "gated_cross_attn" not in n]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": c["weight_decay"]},
                             {"params": rest, "weight_decay": 0.0}], lr=c["lr"])
    total = (c["mmc4_samples"] // (c["mmc4_batch"] * 1)) * c["epochs"]
    if c["scheduler"] == "linear":
        sched = transformers.get_linear_schedule_with_warmup(opt, c["warmup_steps"], total)
    elif c["scheduler"] == "cosine":
        sched = transformers.get_cosine_schedule_with_warmup(opt, c["warmup_steps"], total)
    else:
        sched = transformers.get_constant_schedule_with_warmup(opt, c["warmup_steps"])
    return named, opt, sched


class _Loader(list):
    """What train_one_epoch reads of a loader: iteration and num_batches."""

    @property
    def num_batches(self):
        return len(self)


class _Recorder(torch.nn.Module):
    """Stands where train.py's DDP wrapper stands (train_one_epoch reaches the model as
    model.module): forwards to the Flamingo and keeps what each forward was given and gave."""

    def __init__(self, model):
        super().__init__()
        self.module = model
        self.calls = []

    def forward(self, **kwargs):
        out = self.module(**kwargs)
        self.calls.append({"labels": kwargs["labels"].clone(), "logits": out.logits.detach().clone(),
                           "loss": out.loss.item()})
        return out


def _train_utils():
    """open_flamingo/train/train_utils.py of the installed wheel. It imports wandb at its top and
    calls it only with report_to_wandb: a stand-in module lets it import without it."""
    import types
    sys.modules.setdefault("wandb", types.ModuleType("wandb"))
    from open_flamingo.train import train_utils
    return train_utils


def save_checkpoint(model, opt, sched, d):
    """OpenFlamingo's own save_checkpoint (train_utils.py) of the initial model as train.py's one
    process holds it (behind its DDP wrapper, so every key has "module."): d/checkpoint_0.pt with
    the trainable tensors and those whose name contains "embed" (filter_state_dict_to_trainable)."""
    import argparse
    args = argparse.Namespace(fsdp=False, fsdp_use_orig_params=False, rank=0, run_name=d, report_to_wandb=False,
                              save_checkpoints_to_wandb=False, delete_previous_checkpoint=False)
    _train_utils().save_checkpoint(_Recorder(model), opt, sched, 0, args)


def train_one_epoch(model, tokenizer, steps, c, opt, sched):
    """OpenFlamingo's own train_one_epoch (open_flamingo/train/train_utils.py of the installed
    wheel) over `steps`, as train.py calls it for one process: fp32, no FSDP, gradient
    accumulation 1, the case's loss multipliers, embeddings not frozen. Its loaders' layouts:
    LAION (images (B, C, H, W), (ids, mask)); MMC4 (images (B, T, C, H, W), [(ids (1, L), mask
    (1, L)) per sample]). Returns, per forward (LAION, MMC4, LAION, ...), the labels it made and
    the logits and loss of the model, and asserts every step's gradient norm is above the clip
    threshold, so that clipping acts."""
    import argparse
    train_utils = _train_utils()
    laion = _Loader((s["laion"][0][:, 0, 0], (s["laion"][1], s["laion"][2])) for s in steps)
    mmc4 = _Loader((s["mmc4"][0][:, :, 0], [(s["mmc4"][1][b:b + 1], s["mmc4"][2][b:b + 1])
                                           for b in range(s["mmc4"][1].shape[0])]) for s in steps)
    args = argparse.Namespace(num_epochs=c["epochs"], precision="fp32", fsdp=False, fsdp_use_orig_params=False,
                              gradient_accumulation_steps=1, loss_multiplier_laion=c["loss_multiplier_laion"],
                              loss_multiplier_mmc4=c["loss_multiplier_mmc4"], freeze_lm_embeddings=False, rank=0,
                              world_size=1, report_to_wandb=False, logging_steps=1000,
                              batch_size_laion=c["laion_batch"], batch_size_mmc4=c["mmc4_batch"])
    recorder = _Recorder(model)
    norms = []
    clip = torch.nn.utils.clip_grad_norm_

    def clip_and_record(*a, **kw):
        norms.append(float(clip(*a, **kw)))
        return norms[-1]

    torch.nn.utils.clip_grad_norm_ = clip_and_record
    try:
        train_utils.train_one_epoch(args, recorder, 0, laion, mmc4, tokenizer, opt, sched, "cpu", None)
    finally:
        torch.nn.utils.clip_grad_norm_ = clip
    assert len(norms) == len(steps), norms
    assert all(n > 1.0 for n in norms), f"{c['name']}: gradient norms {norms}: clipping would not act"
    return recorder.calls


# ---------------------------------------------------------------- make / check
def make_case(d):
    with open(os.path.join(d, "case.json")) as f:
        c = json.load(f)
    torch.manual_seed(c["seed"])
    with tempfile.TemporaryDirectory() as work:
        model, tokenizer = build(c, work, d)
    perturb(model, c["seed"] + 1, trainable_only=True)  # the vision tower and the LM were, before the factory
    open_gates(model)
    g = torch.Generator().manual_seed(c["seed"] + 2)
    steps = [batches(c, g) for _ in range(c["iterations"])]
    init = {k: v.detach().clone() for k, v in model.state_dict().items()}
    if c["every_n"] == 1:
        torch.save(init, os.path.join(d, "flamingo.pt"))
    else:
        torch.save({"epoch": 0, "model_state_dict": init}, os.path.join(d, "flamingo.pt"))
    torch.save({"init": init, "batches": steps}, os.path.join(d, "reference.pt"))

    # The same steps in float64: the yardstick of fp32 rounding (see check()).
    exact = copy.deepcopy(model).double()
    steps64 = [{k: (v[0].double(), v[1], v[2]) for k, v in s.items()} for s in steps]
    named64, opt64, sched64 = optimizer_and_schedule(exact, c)
    train_one_epoch(exact, tokenizer, steps64, c, opt64, sched64)
    torch.save({n: p.detach().clone() for n, p in named64}, os.path.join(d, "exact_params.pt"))

    named, opt, sched = optimizer_and_schedule(model, c)
    save_checkpoint(model, opt, sched, d)
    calls = train_one_epoch(model, tokenizer, steps, c, opt, sched)
    # The first iteration's forwards ran on the initial weights: its labels, logits and losses.
    for kind, call in zip(("laion", "mmc4"), calls[:2]):
        call["logits"].contiguous().float().numpy().tofile(os.path.join(d, f"logits_{kind}.bin"))
        call["labels"].numpy().tofile(os.path.join(d, f"labels_{kind}.bin"))
        with open(os.path.join(d, f"loss_{kind}.txt"), "w") as f:
            f.write(repr(call["loss"]) + "\n")
    lines = [f"{calls[2 * k]['loss']!r} {calls[2 * k + 1]['loss']!r}" for k in range(len(steps))]
    with open(os.path.join(d, "losses.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    torch.save({n: p.detach().clone() for n, p in named}, os.path.join(d, "expected_params.pt"))
    torch.save({n: init[n] for n, _ in named}, os.path.join(d, "init_params.pt"))
    print(f"{c['name']}: {type(model.lang_encoder).__mro__[2].__name__}, {len(named)} trainable tensors, "
          f"losses {lines}")


def make(root):
    from importlib.metadata import version
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, "
          f"open-flamingo {version('open-flamingo')}, open-clip-torch {version('open-clip-torch')}")
    for case in sorted(os.listdir(root)):
        d = os.path.join(root, case)
        if os.path.isfile(os.path.join(d, "case.json")):
            make_case(d)


def check(d, out):
    """Each trainable tensor after the steps, ours against OpenFlamingo's (fp32): the change our
    steps made must equal the change OpenFlamingo's made within REL (1e-3) in L2 norm, plus 4 ulp
    of the weights (a weight w holds an update only to ~w * 2^-23).

    NOTE [Why not elementwise]: AdamW divides each element's moment by its own root mean square,
    so an element whose gradient is many orders below the rest of its tensor's (where fp32
    summation noise is a large part of it) gets an update of ~lr whose value is mostly noise.
    OpenFlamingo's own fp32 run differs from the same run in float64 by up to ~1e-2 of the
    largest update on such elements (printed below as "fp32 vs fp64"), so an elementwise bound
    would test rounding, not the step. A wrong step (weight decay on the wrong group, the
    schedule off by a step, no clipping, an unmasked embedding row) moves a whole tensor and
    shows in the norm. The elementwise figures are printed for the record."""
    rel = float(os.environ.get("ORACLE_PARAM_TOLERANCE", "1e-3"))
    expected = torch.load(os.path.join(d, "expected_params.pt"))
    exact = torch.load(os.path.join(d, "exact_params.pt"))
    start = torch.load(os.path.join(d, "init_params.pt"))
    got = torch.load(out)
    if sorted(got) != sorted(expected):
        print("names differ: only in ours", sorted(set(got) - set(expected)),
              "only in OpenFlamingo's", sorted(set(expected) - set(got)))
        return 1
    eps = torch.finfo(torch.float32).eps
    worst = (-1.0, "")
    elem = (0.0, "")  # largest elementwise |ours - OpenFlamingo| / its largest update
    ours64 = theirs64 = 0.0  # largest relative L2 distance to the float64 run
    elem64 = 0.0  # largest elementwise |OpenFlamingo fp32 - float64| / the largest update
    for k, e in expected.items():
        w0 = start[k].double()
        update = e.double() - w0
        diff = (got[k].double() - e.double()).norm().item()
        allowed = rel * update.norm().item() + 4 * eps * w0.norm().item()
        ratio = diff / allowed if allowed > 0 else (0.0 if diff == 0 else float("inf"))
        worst = max(worst, (ratio, k))
        if update.abs().max() > 0:
            elem = max(elem, ((got[k].double() - e.double()).abs().max().item() / update.abs().max().item(), k))
        n64 = (exact[k] - w0).norm().item()
        if n64 > 0:
            ours64 = max(ours64, (got[k].double() - exact[k]).norm().item() / n64)
            theirs64 = max(theirs64, (e.double() - exact[k]).norm().item() / n64)
            elem64 = max(elem64, (e.double() - exact[k]).abs().max().item() / (exact[k] - w0).abs().max().item())
    print(f"params ({len(expected)} trainable tensors): worst {worst[1]}: |ours - OpenFlamingo| is {worst[0]:.3f} "
          f"of the allowed ({rel:g} of |update| + 4 ulp of |w|, L2); elementwise at most {elem[0]:.2e} of the "
          f"largest update ({elem[1]}); relative L2 distance to the float64 run: ours {ours64:.2e}, "
          f"OpenFlamingo's fp32 {theirs64:.2e} (elementwise up to {elem64:.2e} of the largest update)")
    return 0 if worst[0] <= 1.0 else 1


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "make":
        make(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2], sys.argv[3]))
    else:
        sys.exit(__doc__)
