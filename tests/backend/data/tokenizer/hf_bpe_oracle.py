"""Hugging Face's tokenizers and transformers as the byte-level BPE oracle.

  hf_bpe_oracle.py train CORPUS.json OUT_DIR VOCAB_SIZE
      Trains a byte-level BPE (tokenizers' ByteLevelBPETokenizer, all 256 byte
      tokens, <|endoftext|> special) on the JSON list of strings and writes it
      twice: OUT_DIR/gpt2/{vocab.json,merges.txt} (GPT-2's file layout) and
      OUT_DIR/json/tokenizer.json.
  hf_bpe_oracle.py encode gpt2|json DIR IN.json OUT.json
      Loads DIR with transformers (GPT2Tokenizer for the GPT-2 layout,
      PreTrainedTokenizerFast for tokenizer.json), adds OpenFlamingo's tokens as
      its factory.py does, and writes {"size", "added", "ids", "decoded"} for
      the JSON list of strings in IN.json.

Runs with the project's Python environment (scripts/python-env.sh --python);
reads and writes local files only.
"""
import json
import os
import sys

os.environ["HF_HUB_OFFLINE"] = "1"  # nothing here may reach a hub


def train(corpus_path, out_dir, vocab_size):
    from tokenizers import ByteLevelBPETokenizer  # its trainer starts from all 256 byte tokens

    with open(corpus_path, encoding="utf-8") as f:
        corpus = json.load(f)
    tok = ByteLevelBPETokenizer()
    tok.train_from_iterator(
        corpus,
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=["<|endoftext|>"],
        show_progress=False,
    )
    os.makedirs(os.path.join(out_dir, "gpt2"), exist_ok=True)
    os.makedirs(os.path.join(out_dir, "json"), exist_ok=True)
    tok.save_model(os.path.join(out_dir, "gpt2"))
    tok.save(os.path.join(out_dir, "json", "tokenizer.json"))


def load(layout, directory):
    from transformers import GPT2Tokenizer, PreTrainedTokenizerFast

    if layout == "gpt2":
        tok = GPT2Tokenizer.from_pretrained(directory)
    elif layout == "json":
        tok = PreTrainedTokenizerFast(tokenizer_file=os.path.join(directory, "tokenizer.json"))
    else:
        raise SystemExit(f"hf_bpe_oracle.py: unknown layout {layout!r} (gpt2 or json)")
    # OpenFlamingo's factory.py: the two media tokens, then <PAD> only when there is no pad token.
    tok.add_special_tokens({"additional_special_tokens": ["<|endofchunk|>", "<image>"]})
    if tok.pad_token is None:
        tok.add_special_tokens({"pad_token": "<PAD>"})
    return tok


def encode(layout, directory, in_path, out_path):
    tok = load(layout, directory)
    with open(in_path, encoding="utf-8") as f:
        strings = json.load(f)
    ids = [tok(s, add_special_tokens=True)["input_ids"] for s in strings]
    decoded = [tok.decode(i, skip_special_tokens=False, clean_up_tokenization_spaces=False) for i in ids]
    added = {t: tok.convert_tokens_to_ids(t) for t in ["<|endoftext|>", "<|endofchunk|>", "<image>", "<PAD>"]}
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump({"size": len(tok), "added": added, "ids": ids, "decoded": decoded}, f)


if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) == 4 and args[0] == "train":
        train(args[1], args[2], int(args[3]))
    elif len(args) == 5 and args[0] == "encode":
        encode(*args[1:])
    else:
        raise SystemExit(__doc__)
