"""The tokenizer directories each LM family's transformers class saves, and its ids.

  hf_family_oracle.py build CORPUS.json OUT_DIR
      Trains tiny tokenizers from scratch on the JSON list of strings (nothing is
      downloaded) and saves each with its family's transformers class and
      special tokens, by save_pretrained, into OUT_DIR/<name>:
        opt        byte-level BPE (tokenizers), GPT2Tokenizer with OPT's specials
                   (<s> <pad> </s> <unk> = 0..3, bos = eos = </s>, add_bos_token)
        gpt_neox   byte-level BPE, GPTNeoXTokenizer (<|endoftext|>, <|padding|>; NFC)
        mpt        the same files without a pad token (MPT's tokenizer declares none)
        llama      a SentencePiece BPE with byte fallback (python3-sentencepiece,
                   unk/bos/eos = 0..2 as LLaMA), read by LlamaTokenizer (which
                   converts it), with add_bos_token as LLaMA's config declares
      and OUT_DIR/llama_legacy/tokenizer.json: the same model in the layout
      transformers 4 wrote for LLaMA (normalizer Prepend + Replace, no
      pre-tokenizer), which checkpoints on the hub carry, and
      OUT_DIR/llama_metaspace_split/tokenizer.json: with a Metaspace that splits
      and prepends to every piece, and the Metaspace decoder.
  hf_family_oracle.py encode IN.json (dir|file PATH OUT.json)...
      For each triple: loads PATH (dir: AutoTokenizer on the directory, as OpenFlamingo's
      factory.py; file: PreTrainedTokenizerFast(tokenizer_file=PATH), which
      keeps the file's pipeline as declared, where AutoTokenizer's
      LlamaTokenizer would put its own in), adds OpenFlamingo's tokens as
      factory.py does, and writes to OUT.json {"size", "added", "ids",
      "decoded", "nfc", "pad", "eos"} for the JSON list of strings in IN.json ("nfc": whether each string is
      already NFC).

Exit status 77 when a Python package is missing (the test skips, or fails under
CI=true). Reads and writes local files only.
"""
import json
import os
import sys
import unicodedata

os.environ["HF_HUB_OFFLINE"] = "1"  # nothing here may reach a hub
# transformers reads a SentencePiece model through protobuf; Debian's sentencepiece
# ships generated code the environment's protobuf only accepts in pure Python.
os.environ.setdefault("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python")

try:
    import sentencepiece  # noqa: F401  (python3-sentencepiece, seen by the environment)
    import tokenizers  # noqa: F401
    import transformers  # noqa: F401
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"hf_family_oracle.py: {e}", file=sys.stderr)
    sys.exit(77)

OPT_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]
NEOX_SPECIALS = ["<|endoftext|>", "<|padding|>"]


def byte_level_bpe(corpus, specials, vocab_size=3000):
    from tokenizers import ByteLevelBPETokenizer

    tok = ByteLevelBPETokenizer()
    tok.train_from_iterator(corpus, vocab_size=vocab_size, min_frequency=2, special_tokens=specials,
                            show_progress=False)
    model = json.loads(tok._tokenizer.to_str())["model"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model["merges"]]
    return model["vocab"], merges


def build(corpus_path, out_dir):
    import shutil

    import sentencepiece as spm
    from transformers import GPT2Tokenizer, GPTNeoXTokenizer, LlamaTokenizer

    with open(corpus_path, encoding="utf-8") as f:
        corpus = json.load(f)

    vocab, merges = byte_level_bpe(corpus, OPT_SPECIALS)
    GPT2Tokenizer(vocab=vocab, merges=merges, bos_token="</s>", eos_token="</s>", unk_token="<unk>",
                  pad_token="<pad>", add_bos_token=True).save_pretrained(os.path.join(out_dir, "opt"))

    vocab, merges = byte_level_bpe(corpus, NEOX_SPECIALS)
    GPTNeoXTokenizer(vocab=vocab, merges=merges).save_pretrained(os.path.join(out_dir, "gpt_neox"))
    GPTNeoXTokenizer(vocab=vocab, merges=merges, pad_token=None).save_pretrained(os.path.join(out_dir, "mpt"))

    sp_dir = os.path.join(out_dir, "sp")
    os.makedirs(sp_dir, exist_ok=True)
    with open(os.path.join(sp_dir, "corpus.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(s for s in corpus if s.strip() and "\n" not in s and "\r" not in s))
    spm.SentencePieceTrainer.train(
        input=os.path.join(sp_dir, "corpus.txt"), model_prefix=os.path.join(sp_dir, "tokenizer"),
        vocab_size=1000, model_type="bpe", byte_fallback=True, hard_vocab_limit=False, character_coverage=1.0,
        unk_id=0, bos_id=1, eos_id=2, pad_id=-1, num_threads=1, minloglevel=2)
    src = os.path.join(sp_dir, "src")
    os.makedirs(src, exist_ok=True)
    shutil.copy(os.path.join(sp_dir, "tokenizer.model"), os.path.join(src, "tokenizer.model"))
    llama = os.path.join(out_dir, "llama")
    LlamaTokenizer.from_pretrained(src, add_bos_token=True).save_pretrained(llama)

    with open(os.path.join(llama, "tokenizer.json"), encoding="utf-8") as f:
        legacy = json.load(f)
    legacy["normalizer"] = {"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": "\u2581"},
        {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]}
    legacy["pre_tokenizer"] = None
    legacy["model"]["unk_token"] = "<unk>"
    os.makedirs(os.path.join(out_dir, "llama_legacy"), exist_ok=True)
    with open(os.path.join(out_dir, "llama_legacy", "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(legacy, f, ensure_ascii=False)

    # The other Metaspace form older files use: split on "▁", prepended to every piece, and the
    # Metaspace decoder.
    split = dict(legacy)
    split["normalizer"] = None
    split["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True}
    split["decoder"] = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True}
    os.makedirs(os.path.join(out_dir, "llama_metaspace_split"), exist_ok=True)
    with open(os.path.join(out_dir, "llama_metaspace_split", "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(split, f, ensure_ascii=False)


def load(mode, path):
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    if mode == "dir":
        tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
    elif mode == "file":
        tok = PreTrainedTokenizerFast(tokenizer_file=path)
    else:
        raise SystemExit(f"hf_family_oracle.py: unknown mode {mode!r} (dir or file)")
    # OpenFlamingo's factory.py: the two media tokens, then <PAD> only when there is no pad token.
    tok.add_special_tokens({"additional_special_tokens": ["<|endofchunk|>", "<image>"]})
    if tok.pad_token is None:
        tok.add_special_tokens({"pad_token": "<PAD>"})
    return tok


def encode(in_path, mode, path, out_path):
    tok = load(mode, path)
    with open(in_path, encoding="utf-8") as f:
        strings = json.load(f)
    ids = [tok(s)["input_ids"] for s in strings]
    decoded = [tok.decode(i, skip_special_tokens=False, clean_up_tokenization_spaces=False) for i in ids]
    names = ["<s>", "</s>", "<unk>", "<pad>", "<|endoftext|>", "<|padding|>", "<|endofchunk|>", "<image>", "<PAD>"]
    added = {t: tok.convert_tokens_to_ids(t) for t in names if t in tok.get_vocab()}
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump({"size": len(tok), "added": added, "ids": ids, "decoded": decoded,
                   "pad": tok.pad_token_id, "eos": tok.eos_token_id,
                   "nfc": [unicodedata.is_normalized("NFC", s) for s in strings]}, f)


if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) == 3 and args[0] == "build":
        build(args[1], args[2])
    elif len(args) >= 5 and args[0] == "encode" and (len(args) - 2) % 3 == 0:
        for i in range(2, len(args), 3):
            encode(args[1], *args[i:i + 3])
    else:
        raise SystemExit(__doc__)
