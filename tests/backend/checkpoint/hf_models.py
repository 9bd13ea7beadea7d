"""Tiny random Hugging Face causal LMs of every family we implement, built by
transformers FROM A CONFIG (nothing is downloaded), each saved twice and
evaluated once, for hf_models_test.cpp:

  <out>/<case>/safetensors/          save_pretrained(): config.json + model.safetensors
  <out>/<case>/safetensors_sharded/  save_pretrained(max_shard_size="16KB"): model.safetensors.index.json
                                     + model-0000i-of-0000n.safetensors
  <out>/<case>/bin_sharded/          config.json + pytorch_model.bin.index.json + pytorch_model-0000i-of-0000n.bin
  <out>/<case>/reference.safetensors  input_ids, attention_mask (int64, right padding) and
                             transformers' logits (float32, eval mode, eager attention)
  <out>/<case>/tokens.json   AutoTokenizer.from_pretrained(<case>/safetensors) after
                             OpenFlamingo's additions (factory.py): {"size", "bos", "eos",
                             "pad", "added", "ids", "decoded"} of the strings in STRINGS.json

Each directory also holds the case's tokenizer: a byte-level BPE trained here
(tokenizers) on CORPUS.json with the family's special tokens, wrapped in
PreTrainedTokenizerFast and saved by its save_pretrained (tokenizer.json and a
tokenizer_config.json naming "TokenizersBackend"), as the brief of issue 41
asks: the directory is what a user points model.lm.path at.

NOTE [No .bin from transformers 5]: transformers 5.24's save_pretrained has no
safe_serialization parameter any more (it lands in **kwargs and is ignored):
it writes safetensors only. The sharded .bin set is therefore written here as
transformers 4 wrote it: the tensors save_pretrained wrote (tied duplicates
already dropped), in name order, split at ~16 KB into torch.save files named
pytorch_model-0000i-of-0000n.bin, and an index {"metadata": {"total_size"},
"weight_map"}. transformers 5.24 still reads such a set: the script loads it
back with from_pretrained(<local dir>) and requires the same logits.

Usage: hf_models.py <out> <CORPUS.json> <STRINGS.json>. Exit 77 when a package is missing outside CI (the
test skips visibly), 1 under CI=true (the test fails).
"""
import json
import os
import sys

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

try:
    import torch
    import transformers
    from safetensors.torch import load_file, save_file
    from tokenizers import ByteLevelBPETokenizer
    from transformers import (AutoTokenizer, GPTNeoXConfig, GPTNeoXForCausalLM, LlamaConfig, LlamaForCausalLM, MptConfig,
                              MptForCausalLM, OPTConfig, OPTForCausalLM, PreTrainedTokenizerFast)
except ImportError as e:  # pragma: no cover - depends on the machine
    msg = f"hf_models: {e} (the project's Python environment needs torch, transformers and safetensors)"
    if os.environ.get("CI") == "true":
        print(msg + "; required under CI", file=sys.stderr)
        sys.exit(1)
    print(msg + "; skipped", file=sys.stderr)
    sys.exit(77)

VOCAB = 300  # byte-level BPE: 256 bytes, the specials, some merges
BATCH, LENGTH, REAL_IN_SECOND = 2, 9, 6


def cases():
    """name -> (model class, config). Shapes are tiny; the knobs are the ones each family's real models use."""
    return {
        # OPT-125m/1.3b-like: pre-LN, tied head, pad id 1 (padding_idx).
        "opt": (OPTForCausalLM, OPTConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, ffn_dim=64,
                                          num_attention_heads=4, max_position_embeddings=64,
                                          pad_token_id=1, dropout=0.0)),
        # OPT-350m-like post-LN (no final norm), without its word_embed_proj_dim projection.
        "opt_post_ln": (OPTForCausalLM, OPTConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                                                  ffn_dim=48, num_attention_heads=2, max_position_embeddings=64,
                                                  do_layer_norm_before=False, pad_token_id=1, dropout=0.0)),
        # Pythia-like: rotary on a quarter of each head, parallel residual, untied head.
        "pythia": (GPTNeoXForCausalLM, GPTNeoXConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                                                     num_attention_heads=2, intermediate_size=128,
                                                     max_position_embeddings=64, rotary_pct=0.25,
                                                     use_parallel_residual=True, layer_norm_eps=3e-4,
                                                     tie_word_embeddings=False)),
        # RedPajama-INCITE-like: full rotary, sequential residual; another rope base and eps.
        "redpajama": (GPTNeoXForCausalLM, GPTNeoXConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                                                        num_attention_heads=4, intermediate_size=128,
                                                        max_position_embeddings=64, rotary_pct=1.0,
                                                        rotary_emb_base=20000, use_parallel_residual=False,
                                                        layer_norm_eps=1e-6, tie_word_embeddings=False)),
        # LLaMA: untied, RMSNorm eps and rope theta not the defaults.
        "llama": (LlamaForCausalLM, LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=48,
                                                num_hidden_layers=2, num_attention_heads=4,
                                                num_key_value_heads=4, max_position_embeddings=64,
                                                rms_norm_eps=1e-5, rope_theta=50000.0, tie_word_embeddings=False,
                                                pad_token_id=0)),
        # LLaMA with a tied head (save_pretrained writes no lm_head.weight) and another eps and theta.
        "llama_tied": (LlamaForCausalLM, LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=40,
                                                     num_hidden_layers=2, num_attention_heads=2,
                                                     max_position_embeddings=64, rms_norm_eps=1e-3,
                                                     rope_theta=300.0, tie_word_embeddings=True)),
        # MPT-7b-like: ALiBi (6 heads: the non-power-of-two slope order), no biases, tied head; an eps
        # large enough that reading the default instead changes the logits beyond the tolerance.
        # (alibi_bias_max stays 8: transformers' MptModel ignores the field, see hf_lm_config.cpp.)
        "mpt": (MptForCausalLM, MptConfig(vocab_size=VOCAB, d_model=48, n_heads=6, n_layers=2, expansion_ratio=4,
                                          max_seq_len=64, layer_norm_epsilon=1e-3,
                                          attn_config={"alibi": True, "alibi_bias_max": 8})),
    }


# model_type -> (special tokens first in the vocabulary, PreTrainedTokenizerFast's keyword arguments):
# the ids each family's own tokenizer gives them (OPT: <s> <pad> </s> <unk> = 0..3; GPT-NeoX:
# <|endoftext|> 0, <|padding|> 1; MPT: GPT-NeoX's without a pad token; LLaMA: <unk> <s> </s> = 0..2).
SPECIALS = {
    "opt": (["<s>", "<pad>", "</s>", "<unk>"],
            {"bos_token": "</s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"}),
    "gpt_neox": (["<|endoftext|>", "<|padding|>"],
                 {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>",
                  "pad_token": "<|padding|>"}),
    "mpt": (["<|endoftext|>"], {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
                                "unk_token": "<|endoftext|>"}),
    "llama": (["<unk>", "<s>", "</s>"], {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}),
}


def train_tokenizer(corpus, model_type):
    specials, names = SPECIALS[model_type]
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(corpus, vocab_size=VOCAB, min_frequency=2, special_tokens=specials,
                            show_progress=False)
    assert bpe.get_vocab_size() <= VOCAB, bpe.get_vocab_size()
    return PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, **names)


def encode_strings(model_dir, strings, out_path):
    """transformers' ids for `strings` from the saved directory, after OpenFlamingo's additions."""
    tok = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    tok.add_special_tokens({"additional_special_tokens": ["<|endofchunk|>", "<image>"]})
    if tok.pad_token is None:
        tok.add_special_tokens({"pad_token": "<PAD>"})
    ids = [tok(s)["input_ids"] for s in strings]
    decoded = [tok.decode(i, skip_special_tokens=False, clean_up_tokenization_spaces=False) for i in ids]
    added = {t: tok.convert_tokens_to_ids(t) for t in ["<|endofchunk|>", "<image>", "<PAD>"] if t in tok.get_vocab()}
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump({"class": type(tok).__name__, "size": len(tok), "bos": tok.bos_token_id,
                   "eos": tok.eos_token_id, "pad": tok.pad_token_id, "added": added, "ids": ids,
                   "decoded": decoded}, f)


SHARD_BYTES = 16 * 1024


def save_sharded_bin(cls, safetensors_dir, out_dir):
    """NOTE [No .bin from transformers 5]: the torch.save shards and index transformers 4 wrote."""
    tensors = load_file(os.path.join(safetensors_dir, "model.safetensors"))
    shards, current, size = [], {}, 0
    for name in sorted(tensors):
        t = tensors[name]
        nbytes = t.numel() * t.element_size()
        if current and size + nbytes > SHARD_BYTES:
            shards.append(current)
            current, size = {}, 0
        current[name] = t
        size += nbytes
    shards.append(current)
    os.makedirs(out_dir, exist_ok=True)
    weight_map, total = {}, 0
    for i, shard in enumerate(shards):
        file = f"pytorch_model-{i + 1:05d}-of-{len(shards):05d}.bin"
        torch.save(shard, os.path.join(out_dir, file))
        for name, t in shard.items():
            weight_map[name] = file
            total += t.numel() * t.element_size()
    with open(os.path.join(out_dir, "pytorch_model.bin.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2, sort_keys=True)
    with open(os.path.join(safetensors_dir, "config.json")) as src, open(os.path.join(out_dir, "config.json"), "w") as dst:
        dst.write(src.read())
    return len(shards)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    out = sys.argv[1]
    with open(sys.argv[2], encoding="utf-8") as f:
        corpus = json.load(f)
    with open(sys.argv[3], encoding="utf-8") as f:
        strings = json.load(f)
    tokenizers_by_type = {}
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    # Below VOCAB - 2: the test makes VOCAB - 2 and VOCAB - 1 <|endofchunk|> and <image>, and the text holds no media.
    ids = torch.randint(3, VOCAB - 2, (BATCH, LENGTH), generator=torch.Generator().manual_seed(1))
    mask = torch.ones(BATCH, LENGTH, dtype=torch.long)
    mask[1, REAL_IN_SECOND:] = 0
    for i, (name, (cls, config)) in enumerate(cases().items()):
        pad = config.pad_token_id if config.pad_token_id is not None else 0
        case_ids = ids.clone()
        case_ids[1, REAL_IN_SECOND:] = pad  # right padding holds the pad id, as our batches do
        config._attn_implementation = "eager"
        torch.manual_seed(10 + i)
        model = cls(config).eval()
        with torch.no_grad():  # away from the init: norms off 1 / 0, every tensor random
            for p in model.parameters():
                p.add_(torch.randn_like(p) * 0.05)
        case = os.path.join(out, name)
        model.save_pretrained(os.path.join(case, "safetensors"))
        model.save_pretrained(os.path.join(case, "safetensors_sharded"), max_shard_size="16KB")
        n_bin = save_sharded_bin(cls, os.path.join(case, "safetensors"), os.path.join(case, "bin_sharded"))
        if config.model_type not in tokenizers_by_type:
            tokenizers_by_type[config.model_type] = train_tokenizer(corpus, config.model_type)
        for layout in ("safetensors", "safetensors_sharded", "bin_sharded"):
            tokenizers_by_type[config.model_type].save_pretrained(os.path.join(case, layout))
        encode_strings(os.path.join(case, "safetensors"), strings, os.path.join(case, "tokens.json"))
        with torch.no_grad():
            logits = model(input_ids=case_ids, attention_mask=mask).logits.float().contiguous()
            # transformers itself reads the .bin set back to the same logits.
            again = cls.from_pretrained(os.path.join(case, "bin_sharded"), local_files_only=True,
                                        attn_implementation="eager").eval()
            again_logits = again(input_ids=case_ids, attention_mask=mask).logits.float()
            if not torch.equal(again_logits, logits):
                sys.exit(f"{name}: transformers read bin_sharded/ back to other logits")
        save_file({"input_ids": case_ids.contiguous(), "attention_mask": mask.contiguous(), "logits": logits},
                  os.path.join(case, "reference.safetensors"))
        print(f"{name}: {cls.__name__}, logits {tuple(logits.shape)}, {n_bin} .bin shards, "
              f"transformers {transformers.__version__}")


if __name__ == "__main__":
    main()
