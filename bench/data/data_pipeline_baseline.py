"""Python baseline for bench/data: what a WebDataset + PIL pipeline does per
sample, written by us with the standard library's tarfile, Debian's PIL,
numpy and scipy: read the tar, group members by key, decode with PIL,
torchvision's Resize(224, BICUBIC) + CenterCrop(224) + ToTensor + Normalize
(re-stated in numpy: torchvision is not installed), the flip, the caption /
MMC4 text assembly and the assignment, and collation into batch arrays.
Tokenisation is not included (no tokenizer library is installed for Python
here), which favours the baseline.

usage: data_pipeline_baseline.py DIR laion|mmc4 SAMPLES [BATCH]
prints: samples_per_s=...
"""
import base64
import io
import json
import random
import sys
import tarfile
import time

import numpy as np
from PIL import Image
from scipy.optimize import linear_sum_assignment

MEAN = np.array([0.48145466, 0.4578275, 0.40821073], dtype=np.float32).reshape(3, 1, 1)
STD = np.array([0.26862954, 0.26130258, 0.27577711], dtype=np.float32).reshape(3, 1, 1)
SIZE = 224


def samples(paths):
    for path in paths:
        with tarfile.open(path, "r|") as tar:
            key, sample = None, {}
            for member in tar:
                if not member.isreg():
                    continue
                base = member.name.rsplit("/", 1)[-1]
                k = member.name[: len(member.name) - len(base)] + base.split(".", 1)[0]
                ext = base.split(".", 1)[1].lower()
                if k != key or ext in sample:
                    if sample:
                        yield sample
                    key, sample = k, {}
                sample[ext] = tar.extractfile(member).read()
            if sample:
                yield sample


def preprocess(img):
    w, h = img.size
    if w <= h:
        nw, nh = SIZE, int(SIZE * h / w)
    else:
        nw, nh = int(SIZE * w / h), SIZE
    if (nw, nh) != (w, h):
        img = img.resize((nw, nh), Image.BICUBIC)
    left, top = int(round((nw - SIZE) / 2.0)), int(round((nh - SIZE) / 2.0))
    img = img.crop((left, top, left + SIZE, top + SIZE))
    x = np.asarray(img, dtype=np.float32).transpose(2, 0, 1) / 255.0
    return (x - MEAN) / STD


def laion(sample):
    image = next(sample[e] for e in ("jpg", "png", "jpeg") if e in sample)
    img = Image.open(io.BytesIO(image)).convert("RGB")
    text = "<image>" + sample["txt"].decode("utf-8").strip() + "<|endofchunk|></s>"
    return preprocess(img)[None], text


def mmc4(sample, max_images=6, threshold=0.24):
    doc = json.loads(sample["json"])
    sentences = doc["text_list"]
    valid, images = [], []
    for i, info in enumerate(doc["image_info"]):
        raw = base64.b64decode(info["image_base64"])
        if len(raw) // 1000 <= 10:
            continue
        valid.append(i)
        images.append(Image.open(io.BytesIO(raw)).convert("RGB"))
    if not valid:
        return None
    sim = np.array(doc["similarity_matrix"])[valid]
    rows, cols = linear_sum_assignment(-sim)
    keep = [(r, c) for r, c in zip(rows, cols) if sim[r, c] >= threshold][:max_images]
    if not keep:
        return None
    out = np.zeros((max_images, 3, SIZE, SIZE), dtype=np.float32)
    for k, (r, _) in enumerate(keep):
        out[k] = preprocess(images[r])
    for _, c in keep:
        sentences[c] = "<|endofchunk|><image>" + sentences[c]
    text = " ".join(sentences).replace("<|endofchunk|>", "", 1)
    text = text.replace(" <|endofchunk|>", "<|endofchunk|>").replace("<image> ", "<image>").replace(" <image>", "<image>")
    return out, text + "<|endofchunk|></s>"


def main():
    directory, kind, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
    batch = int(sys.argv[4]) if len(sys.argv) > 4 else 64
    paths = [f"{directory}/{kind}-{i:06d}.tar" for i in range(4)]
    rng = random.Random(0)
    start = time.perf_counter()
    n, rows, texts = 0, [], []
    while n < limit:
        for sample in samples(paths):
            item = laion(sample) if kind == "laion" else mmc4(sample)
            if item is None:
                continue
            rows.append(item[0])
            texts.append(item[1])
            if len(rows) == batch:
                images = np.stack(rows)
                if kind == "laion" and rng.random() < 0.5:
                    images = images[..., ::-1].copy()
                n += batch
                rows, texts = [], []
                if n >= limit:
                    break
    seconds = time.perf_counter() - start
    print(f"kind={kind} python samples={n} seconds={seconds:.3f} samples_per_s={n / seconds:.1f}")


if __name__ == "__main__":
    main()
