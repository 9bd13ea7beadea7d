"""Oracle: OpenFlamingo's OWN data functions (the pinned open-flamingo wheel's
open_flamingo/train/data.py) on our shards, for openflamingo_data_oracle_test.

  openflamingo_data.py REQUEST.json OUT_DIR

REQUEST.json (written by the test):
  {"laion": [tar, ...], "mmc4": [tar, ...], "image_size": S, "seed": N,
   "laion_batch": B, "laion_max_tokens": 32,
   "mmc4_settings": [{"sim_threshold", "min_num_images", "max_num_images", "max_tokens"}, ...],
   "vocab_size": V}

What runs is the reference's code, unchanged:
- samples: OpenFlamingo's tarfile_to_samples_nothrow after webdataset's
  SimpleShardList (its pipeline without the shuffles; see
  tarfile_to_samples_era for the one webdataset-version fix); LAION then through
  webdataset's select / decode("pilrgb") / to_tuple("jpg;png;jpeg", "txt"),
  MMC4 through to_tuple("json"), as get_laion_dataset / get_mmc4_dataset;
- images: preprocess_image with the transform open_clip's
  create_model_and_transforms returns third (its eval transform, what
  OpenFlamingo's factory hands on), for a randomly initialised ViT-B-32 forced
  to image size S (no weights are needed for the transform);
- text: preprocess_laion_text / preprocess_interleaved with a transformers
  tokenizer loaded by AutoTokenizer from OUT_DIR/tokenizer (a byte-level BPE
  that the tokenizers library trains here on the shards' text, laid out as
  GPT-NeoX's / MPT's: eos = bos = unk = <|endoftext|>, no pad), then the
  factory's additions (<|endofchunk|>, <image>, then <PAD> as there is no pad).

transformers 5 no longer has the `additional_special_tokens(_ids)` attributes
that data.py (written for transformers 4) reads; they are set on the
tokenizer object from its `extra_special_tokens`, with the same values
transformers 4 gave. Nothing else is adapted.

Each LAION batch is also written with the other flip outcome
("images_other_flip"), for batches built by our worker with its own coin.

Randomness: before each LAION batch and each MMC4 document both torch and
Python's `random` are seeded with (seed + index); the outcome of the draws
(the flip of RandomHorizontalFlip, torch.rand(1) < 0.5, and the single-image
coin, random.random() <= 0.5) is computed from the same seed and written out,
and whether the call drew the coin at all, so the test can give our preparer
generators with the same outcomes.

OUT_DIR/answer.json: {"tokenizer": {...}, "laion": [...], "mmc4": [[...], ...]};
pixels in OUT_DIR/pixels.f32 (float32, C order), referenced by offset.
Exit 0 done, 77 a package is missing (the test skips outside CI, fails
under CI=true), anything else an error.
"""
import json
import os
import random
import sys

os.environ["HF_HUB_OFFLINE"] = "1"  # nothing here may reach a hub
os.environ["TRANSFORMERS_OFFLINE"] = "1"

try:
    import numpy as np
    import open_clip
    import open_flamingo
    import torch
    import webdataset as wds
    from webdataset.tariterators import tar_file_expander, url_opener
    from tokenizers import ByteLevelBPETokenizer
    from transformers import AutoTokenizer

    # data.py does `from data_utils import *`: its own folder must be importable.
    sys.path.insert(0, os.path.join(os.path.dirname(open_flamingo.__file__), "train"))
    import data as of_data  # open_flamingo/train/data.py
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"openflamingo_data.py: {e} (the project's Python environment: scripts/install-deps.sh)",
          file=sys.stderr)
    sys.exit(77)


def tarfile_to_samples_era(src, handler=of_data.log_and_continue):
    """OpenFlamingo's tarfile_to_samples_nothrow, stage for stage (webdataset's
    url_opener and tar_file_expander, then its own group_by_keys_nothrow),
    with the expander's end-of-shard marker off: webdataset >= 0.2.5x yields an
    empty dict after each shard, which group_by_keys_nothrow (written for the
    webdataset of its era) does not expect (KeyError 'fname' at the end of
    every shard). The webdataset of its era yielded no marker."""
    streams = url_opener(src, handler=handler)
    files = tar_file_expander(streams, handler=handler, eof_value=None)
    return of_data.group_by_keys_nothrow(files, handler=handler)


def shard_samples(urls):
    """OpenFlamingo's reader: SimpleShardList -> tarfile_to_samples_nothrow."""
    return wds.DataPipeline(wds.SimpleShardList(urls), tarfile_to_samples_era)


def train_tokenizer(texts, vocab_size, out_dir):
    tok = ByteLevelBPETokenizer()
    tok.train_from_iterator(texts, vocab_size=vocab_size, min_frequency=2,
                            special_tokens=["<|endoftext|>"], show_progress=False)
    os.makedirs(out_dir, exist_ok=True)
    tok.save(os.path.join(out_dir, "tokenizer.json"))
    # GPT-NeoX-20B's (MPT's tokenizer) declarations.
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<|endoftext|>",
              "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>", "add_prefix_space": False}
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w") as f:
        json.dump(config, f)


def load_tokenizer(directory):
    """As open_flamingo/src/factory.py builds its text tokenizer."""
    tok = AutoTokenizer.from_pretrained(directory, local_files_only=True)
    tok.add_special_tokens({"additional_special_tokens": ["<|endofchunk|>", "<image>"]})
    if tok.pad_token is None:
        tok.add_special_tokens({"pad_token": "<PAD>"})
    if not hasattr(tok, "additional_special_tokens"):  # transformers >= 5 (see the docstring)
        extra = list(tok.extra_special_tokens)
        tok.additional_special_tokens = extra
        tok.additional_special_tokens_ids = tok.convert_tokens_to_ids(extra)
    return tok


class Pixels:
    def __init__(self, path):
        self.f = open(path, "wb")
        self.offset = 0  # in floats

    def add(self, tensor):
        a = tensor.detach().to(torch.float32).contiguous().numpy()
        start = self.offset
        self.f.write(a.tobytes())
        self.offset += a.size
        return {"offset": start, "shape": list(a.shape)}


def seed_all(seed):
    """Seeds both generators and says what their first draws will decide."""
    torch.manual_seed(seed)
    flip = bool(torch.rand(1).item() < 0.5)  # RandomHorizontalFlip(p=0.5): torch.rand(1) < p
    single_drop = random.Random(seed).random() <= 0.5  # data.py's single-image coin
    torch.manual_seed(seed)
    random.seed(seed)
    return flip, single_drop


def main(request_path, out_dir):
    with open(request_path) as f:
        req = json.load(f)
    os.makedirs(out_dir, exist_ok=True)

    laion = list(wds.DataPipeline(
        wds.SimpleShardList(req["laion"]), tarfile_to_samples_era,
        wds.select(of_data.filter_no_caption_or_no_image),
        wds.decode("pilrgb", handler=wds.reraise_exception),
        wds.to_tuple("jpg;png;jpeg", "txt", "__key__", handler=wds.reraise_exception)))
    mmc4 = [(s["json"], s["__key__"]) for s in shard_samples(req["mmc4"])]

    texts = [caption for _, caption, _ in laion]
    for raw, _ in mmc4:
        texts += json.loads(raw)["text_list"]
    tok_dir = os.path.join(out_dir, "tokenizer")
    train_tokenizer(texts, req["vocab_size"], tok_dir)
    tok = load_tokenizer(tok_dir)

    size = req["image_size"]
    _, _, image_processor = open_clip.create_model_and_transforms(
        "ViT-B-32", pretrained=None, force_image_size=size)

    pixels = Pixels(os.path.join(out_dir, "pixels.f32"))
    answer = {"tokenizer": {
        "size": len(tok), "eos_token": tok.eos_token, "padding_side": tok.padding_side,
        "ids": {t: tok.convert_tokens_to_ids(t) for t in ["<|endoftext|>", "<|endofchunk|>", "<image>", "<PAD>"]},
        "transform": repr(image_processor)}}

    # LAION: batches of B consecutive samples (wds.batched, partial=False), then
    # map_tuple(preprocess_image, preprocess_laion_text) as get_laion_dataset.
    batch = req["laion_batch"]
    answer["laion"] = []
    for b in range(len(laion) // batch):
        rows = laion[b * batch:(b + 1) * batch]
        flip, _ = seed_all(req["seed"] + b)
        images = of_data.preprocess_image([r[0] for r in rows], image_processor)
        ids, mask = of_data.preprocess_laion_text([r[1] for r in rows], tok, max_tokens=req["laion_max_tokens"])
        # The same batch with the other flip outcome (a seed whose first torch
        # draw decides the other way), for a batch whose coin is ours.
        other = req["seed"] + 100000 + b
        while seed_all(other)[0] == flip:
            other += 1
        other_images = of_data.preprocess_image([r[0] for r in rows], image_processor)
        answer["laion"].append({"keys": [r[2] for r in rows], "flip": flip, "ids": ids.tolist(),
                                "mask": mask.tolist(), "images": pixels.add(images),
                                "images_other_flip": pixels.add(other_images)})

    answer["mmc4"] = []
    for setting in req["mmc4_settings"]:
        results = []
        for i, (raw, key) in enumerate(mmc4):
            seed = req["seed"] + 1000 + i
            flip, single_drop = seed_all(seed)
            state = random.getstate()
            entry = {"key": key, "flip": flip, "single_drop": single_drop}
            try:
                images, (ids, mask) = of_data.preprocess_interleaved(
                    (raw,), tok, image_processor, setting["sim_threshold"], setting["min_num_images"],
                    setting["max_num_images"], max_tokens=setting["max_tokens"])
                entry.update(ids=ids[0].tolist(), mask=mask[0].tolist(), images=pixels.add(images))
            except Exception as e:  # what wds.map's handler would log and skip
                entry.update(error=type(e).__name__, message=str(e))
            entry["drew_single_coin"] = random.getstate() != state
            results.append(entry)
        answer["mmc4"].append(results)

    pixels.f.close()
    with open(os.path.join(out_dir, "answer.json"), "w") as f:
        json.dump(answer, f)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2])
