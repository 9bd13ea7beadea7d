"""Oracle for our shards: the webdataset library reads what `flamingo-train shards
make-synthetic` writes, sample for sample, and agrees with `flamingo-train shards
inspect` (our own reader) on every sample's key, members and their sizes, and on what
the members hold: the LAION caption and picture size, the MMC4 document's sentences and
pictures.

webdataset (the pinned package) groups tar members into samples by key, as
OpenFlamingo's loaders do; PIL (Debian's python3-pil) decodes the JPEGs, including the
base64 pictures inside MMC4's JSON.

Usage: webdataset_oracle.py FLAMINGO_TRAIN
Exit 0 pass, 1 fail, 77 skipped (webdataset or PIL missing outside CI).
"""
import base64
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    import webdataset as wds
    from PIL import Image
except ImportError as e:  # pragma: no cover - depends on the machine
    msg = (f"webdataset_oracle: {e} (bash scripts/install-deps.sh: webdataset in the project's "
           f"Python environment, python3-pil)")
    if os.environ.get("CI") == "true":
        print(msg + "; required under CI", file=sys.stderr)
        sys.exit(1)
    print(msg + "; skipped", file=sys.stderr)
    sys.exit(77)


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p.stdout


# `shards inspect` prints, per sample: "KEY: ext(size) ext(size) ..." then one line of what
# it found ("  laion: "caption...", WxH" or "  mmc4: N sentences, M images (...)").
SAMPLE = re.compile(r"^(\S+): ((?:\w+\(\d+\) ?)+)$")
MEMBER = re.compile(r"(\w+)\((\d+)\)")
LAION = re.compile(r'^  laion: ".*", (\d+)x(\d+)$')
MMC4 = re.compile(r"^  mmc4: (\d+) sentences, (\d+) images")


def inspect(train, shard):
    """Our reader's view of SHARD: [(key, {ext: size}, detail line)]."""
    out = run([train, "shards", "inspect", shard, "--limit", "0"]).splitlines()
    samples = []
    for i, line in enumerate(out):
        m = SAMPLE.match(line)
        if m:
            members = {ext: int(size) for ext, size in MEMBER.findall(m.group(2))}
            samples.append((m.group(1), members, out[i + 1] if i + 1 < len(out) else ""))
    assert samples, f"shards inspect {shard} printed no sample:\n" + "\n".join(out[:20])
    assert "tar problems: none" in out[-1], f"shards inspect {shard}: {out[-1]}"
    return samples


def check_shard(train, shard, kind):
    ours = inspect(train, shard)
    theirs = list(wds.WebDataset(shard, shardshuffle=False, empty_check=False))
    assert len(theirs) == len(ours), f"{shard}: webdataset read {len(theirs)} samples, we {len(ours)}"
    for (key, members, detail), sample in zip(ours, theirs):
        assert sample["__key__"] == key, f"{shard}: webdataset key {sample['__key__']}, ours {key}"
        got = {k: len(v) for k, v in sample.items() if not k.startswith("__")}
        assert got == members, f"{shard} {key}: webdataset members {got}, ours {members}"
        if kind == "laion":
            m = LAION.match(detail)
            assert m, f"{shard} {key}: unexpected inspect line {detail!r}"
            caption = sample["txt"].decode("utf-8")
            meta = json.loads(sample["json"])
            assert meta["caption"] == caption, f"{shard} {key}: txt {caption!r}, json caption {meta['caption']!r}"
            assert detail.startswith(f'  laion: "{caption[:80]}'), f"{shard} {key}: caption {caption!r} vs {detail!r}"
            size = (int(m.group(1)), int(m.group(2)))
            assert (meta["width"], meta["height"]) == size, f"{shard} {key}: json size {meta}, ours {size}"
            with Image.open(io.BytesIO(sample["jpg"])) as im:
                assert im.format == "JPEG" and im.size == size, f"{shard} {key}: PIL {im.format} {im.size}, ours {size}"
        else:
            m = MMC4.match(detail)
            assert m, f"{shard} {key}: unexpected inspect line {detail!r}"
            doc = json.loads(sample["json"])
            assert len(doc["text_list"]) == int(m.group(1)), f"{shard} {key}: {len(doc['text_list'])} sentences"
            assert len(doc["image_info"]) == int(m.group(2)), f"{shard} {key}: {len(doc['image_info'])} images"
            for info in doc["image_info"]:
                with Image.open(io.BytesIO(base64.b64decode(info["image_base64"]))) as im:
                    im.load()
                    assert im.format == "JPEG", im.format
    return len(ours)


def main(argv):
    train = os.path.abspath(argv[1])
    work = tempfile.mkdtemp(prefix="webdataset_oracle-")
    try:
        out = os.path.join(work, "shards")
        run([train, "shards", "make-synthetic", "--out", out, "--laion-shards", "2", "--laion-samples", "24",
             "--mmc4-shards", "2", "--mmc4-docs", "12", "--seed", "7"])
        counts = {"laion": 0, "mmc4": 0}
        for name in sorted(os.listdir(out)):
            if name.endswith(".tar"):
                kind = name.split("-")[0]
                counts[kind] += check_shard(train, os.path.join(out, name), kind)
        assert counts == {"laion": 48, "mmc4": 24}, counts
        print(f"webdataset read {counts['laion']} LAION and {counts['mmc4']} MMC4 samples as we do")
    except AssertionError as e:
        print(f"webdataset_oracle: FAILED: {e}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("webdataset oracle: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
