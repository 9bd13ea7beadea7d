"""Writes the committed seed corpora, fuzz/corpus/<target>/, from what the tests
already make and from our own encoders. Run with the project's Python
environment (torch; Debian's sentencepiece through it), from the repository
root, after building the fuzz tree:

    "$(bash scripts/python-env.sh --python)" fuzz/make_corpus.py build-fuzz

Seeds are small (a few KB each). Targets whose input starts with a control byte
(torch_file, tar_samples, event_decoder) get one seed per interesting value.
"""
import base64
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")


def put(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def tensor_files(tmp):
    subprocess.run([sys.executable, os.path.join(ROOT, "tests/backend/tensorfile/make_fixtures.py"), tmp],
                   check=True, stdout=subprocess.DEVNULL)
    for name in ["misc_p4.pt", "torch2x.pt", "state_dict_p4.pt"]:
        put("zip", name, read(os.path.join(tmp, name)))
    for flag, name in [(1, "misc.pt"), (0, "torch2x.pt"), (1, "checkpoint.pt"), (0, "legacy.pt")]:
        put("torch_file", f"{flag}-{name}", bytes([flag]) + read(os.path.join(tmp, name)))
    for p in range(6):
        put("pickle", f"plain_p{p}.pkl", read(os.path.join(tmp, f"plain_p{p}.pkl")))
    with zipfile.ZipFile(os.path.join(tmp, "misc.pt")) as z:
        pkl = [n for n in z.namelist() if n.endswith("data.pkl")][0]
        put("pickle", "misc_data.pkl", z.read(pkl))
    # A zip with a deflated and a stored entry (torch writes stored only).
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(zipfile.ZipInfo("archive/data.pkl"), b"\x80\x02}q\x00.", zipfile.ZIP_STORED)
        z.writestr("archive/version", b"3\n", zipfile.ZIP_DEFLATED)
    put("zip", "stored_and_deflated.zip", buf.getvalue())
    out, expected = os.path.join(tmp, "t.safetensors"), os.path.join(tmp, "t.json")
    subprocess.run([sys.executable, os.path.join(ROOT, "tests/backend/tensorfile/write_safetensors.py"), out,
                    expected], check=True)
    put("safetensors", "by_hand.safetensors", read(out))


def tar_shards():
    def shard(members, fmt=tarfile.USTAR_FORMAT, gz=False):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz" if gz else "w", format=fmt) as t:
            for name, data in members:
                info = tarfile.TarInfo(name)
                info.size = len(data)
                info.mtime = 1717000000
                t.addfile(info, io.BytesIO(data))
        return buf.getvalue()

    laion = [("000.jpg", b"\xff\xd8JPEG-0"), ("000.txt", b"a cat"), ("000.json", b"{}"),
             ("001.jpg", b"\xff\xd8JPEG-1"), ("001.txt", b"a dog")]
    put("tar_samples", "ustar_whole_reads.tar", b"\x00" + shard(laion))
    put("tar_samples", "ustar_small_reads.tar", b"\xc7" + shard(laion))
    long_name = [("d/" + "x" * 120 + ".txt", b"long"), ("d/a.b.JPG", b"img"), ("../evil.txt", b"no")]
    put("tar_samples", "gnu_long_names.tar", b"\x00" + shard(long_name, tarfile.GNU_FORMAT))
    put("tar_samples", "pax.tar", b"\x00" + shard([("\u00fc.txt", b"pax"), ("__key__.txt", b"m")],
                                                  tarfile.PAX_FORMAT))
    put("tar_samples", "gzip.tar.gz", b"\x00" + shard(laion[:2], gz=True))


def mmc4():
    img = base64.b64encode(b"\xff\xd8" + b"\x11" * 40).decode()
    doc = {"text_list": ["A cat sits.", "It is black.", "The end."],
           "image_info": [{"image_name": "a.jpg", "raw_url": "http://x/a.jpg", "matched_text_index": 0,
                           "matched_sim": 0.31, "image_base64": img},
                          {"image_name": "b.jpg", "matched_text_index": 2, "matched_sim": 0.2}],
           "similarity_matrix": [[0.31, 0.1, 0.05], [0.0, 0.1, 0.2]]}
    put("mmc4_document", "two_images.json", json.dumps(doc))
    put("mmc4_document", "no_images.json", json.dumps({"text_list": ["only text"], "image_info": [],
                                                       "similarity_matrix": []}))
    put("base64", "standard.txt", base64.b64encode(b"\x00\x01hello\xff"))
    put("base64", "lenient.txt", "aGVs bG8=\n!!d29y\nbGQ")
    put("base64", "padding.txt", "YQ==YWI=")


def llama_tokenizer_json():
    """The layout transformers 5 saves for LLaMA: BPE with byte fallback, Metaspace
    (prepend "first", no split), the Replace / ByteFallback / Fuse / Strip decoder and
    a TemplateProcessing post-processor that prepends <s>."""
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    for piece in ["\u2581", "a", "c", "t", "\u2581c", "at", "\u2581cat", "\u2581a"]:
        vocab[piece] = len(vocab)
    merges = [["\u2581", "c"], ["a", "t"], ["\u2581c", "at"], ["\u2581", "a"]]
    special = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                "normalized": False, "special": True} for t, i in (("<unk>", 0), ("<s>", 1), ("</s>", 2))]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": special, "normalizer": None,
        "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": False},
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                    {"Sequence": {"id": "A", "type_id": 0}},
                                    {"SpecialToken": {"id": "<s>", "type_id": 1}},
                                    {"Sequence": {"id": "B", "type_id": 1}}],
                           "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                  "vocab": vocab, "merges": merges},
    }


def tokenizers(tmp):
    def b2u():
        bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
        cs, n = bs[:], 0
        for b in range(256):
            if b not in bs:
                bs.append(b)
                cs.append(256 + n)
                n += 1
        return [chr(c) for c in cs]

    vocab = {t: i for i, t in enumerate(b2u())}
    for tok in ["he", "ll", "hell", "\u0120c", "<|endoftext|>"]:
        vocab[tok] = len(vocab)
    merges = ["h e", "l l", "he ll", "\u0120 c"]
    tj = {"version": "1.0", "added_tokens": [{"id": vocab["<|endoftext|>"], "content": "<|endoftext|>",
                                              "special": True}],
          "normalizer": {"type": "NFC"},
          "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
          "model": {"type": "BPE", "vocab": vocab, "merges": merges}}
    put("tokenizer_json", "byte_level.json", json.dumps(tj, ensure_ascii=False))
    tj["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [{"type": "ByteLevel"}]}
    tj["model"]["merges"] = [m.split(" ") for m in merges]
    put("tokenizer_json", "sequence_pair_merges.json", json.dumps(tj, ensure_ascii=False))
    put("tokenizer_json", "llama_metaspace.json", json.dumps(llama_tokenizer_json(), ensure_ascii=False))
    put("vocab_merges", "gpt2_style.txt",
        json.dumps(vocab, ensure_ascii=False) + "\n#merges\n#version: 0.2\n" + "\n".join(merges) + "\n")
    import sentencepiece as spm
    text = os.path.join(tmp, "spm.txt")
    with open(text, "w") as f:
        for i in range(200):
            f.write(f"a photo of a cat number {i} on the beach, \u00fcber caf\u00e9 {i * 7}\n")
    for kind in ["bpe", "unigram"]:
        prefix = os.path.join(tmp, "sp_" + kind)
        spm.SentencePieceTrainer.train(input=text, model_prefix=prefix, vocab_size=300 if kind == "bpe" else 60, model_type=kind,
                                       byte_fallback=(kind == "bpe"), normalization_rule_name="identity",
                                       hard_vocab_limit=False, minloglevel=2)
        put("sentencepiece", kind + ".model", read(prefix + ".model"))


def wire(build):
    tmp = tempfile.mkdtemp()
    try:
        subprocess.run([os.path.join(build, "fuzz", "fs_fuzz_seed_writer"), tmp,
                        os.path.join(ROOT, "resources", "presets", "tiny.yaml")], check=True)
        for target in os.listdir(tmp):
            for name in os.listdir(os.path.join(tmp, target)):
                put(target, name, read(os.path.join(tmp, target, name)))
    finally:
        shutil.rmtree(tmp)


def wire_files():
    for name in ["tiny.yaml", "small.yaml"]:
        put("config_yaml", name, read(os.path.join(ROOT, "resources", "presets", name)))
    put("config_yaml", "default_config.yaml", read(os.path.join(ROOT, "tests/assets/golden/default_config.yaml")))
    put("config_override", "several.txt",
        "seed=7\nmodel.lm.family=llama\nmodel.perceiver.depth=2\nmodel.vision.mlp_ratio=2.5\nname=x y\n")
    put("config_override", "quoted.txt", "model.lm.path=\"/a b/c\"\ncompat=openflamingo\n")
    put("cmdline_import", "readme.sh", """torchrun --nnodes=1 --nproc_per_node=4 train.py \\
  --lm_path anas-awadalla/mpt-1b-redpajama-200b --tokenizer_path anas-awadalla/mpt-1b-redpajama-200b \\
  --cross_attn_every_n_layers 1 --dataset_resampled --batch_size_mmc4 32 --batch_size_laion 64 \\
  --train_num_samples_mmc4 125000 --loss_multiplier_laion 0.2 --workers=4 --run_name OF-3B \\
  --laion_shards "/path/to/shards/shard-{0000..0999}.tar" --report_to_wandb
""")
    put("cmdline_import", "srun_fsdp.sh",
        "NCCL_DEBUG=INFO srun --cpu_bind=v -N2 --ntasks-per-node=8 python -u open_flamingo/train/train.py "
        "--fsdp --fsdp_use_orig_params --precision amp_bfloat16 --gradient_checkpointing "
        "--learning_rate 2e-4 --lr_scheduler cosine --resume_from_checkpoint '/ckpt/checkpoint 3.pt'\n")
    for v in ["1.0", "1.3"]:
        events = read(os.path.join(ROOT, "tests/assets/telemetry", f"events-{v}.jsonl"))
        put("event_decoder", f"events-{v}_whole.jsonl", b"\x3c" + events)
        put("event_decoder", f"events-{v}_pieces.jsonl", b"\x06" + events)


def images():
    """Small JPEG / PNG / WebP / BMP files as shards hold them (PIL, as the tests use it)."""
    from PIL import Image

    def save(name, im, fmt, **kw):
        b = io.BytesIO()
        im.save(b, fmt, **kw)
        put("image", name, b.getvalue())
        return b.getvalue()

    rgb = Image.new("RGB", (8, 6))
    rgb.putdata([(x * 30, y * 40, (x + y) * 10) for y in range(6) for x in range(8)])
    jpeg = save("rgb_8x6.jpg", rgb, "JPEG", quality=50)
    save("gray_4x4.jpg", rgb.convert("L").resize((4, 4)), "JPEG", quality=50)
    save("progressive_8x6.jpg", rgb, "JPEG", quality=50, progressive=True)
    save("cmyk_4x4.jpg", rgb.convert("CMYK").resize((4, 4)), "JPEG", quality=50)
    save("rgb_3x2.png", rgb.resize((3, 2)), "PNG")
    save("palette_4x4.png", rgb.resize((4, 4)).convert("P"), "PNG")
    save("rgba_2x2.png", rgb.resize((2, 2)).convert("RGBA"), "PNG")
    save("gray16_2x2.png", Image.new("I;16", (2, 2), 300), "PNG")
    save("rgb_3x3.bmp", rgb.resize((3, 3)), "BMP")
    save("rgb_4x4.webp", rgb.resize((4, 4)), "WEBP", quality=50)
    put("image", "truncated.jpg", jpeg[: len(jpeg) // 2])


AGENT_EVENTS = """\
{"v":"1.0","seq":0,"t":1717000000000,"type":"agent_started","command":["/bin/sh","rank.sh"],"host":"node-a","master_addr":"127.0.0.1","master_port":29500,"nnodes":1,"node":"node-a","node_rank":0,"nproc_per_node":3,"pid":4000}
{"v":"1.0","seq":1,"t":1717000000004,"type":"spawned","local_rank":0,"pid":4001,"rank":0}
{"v":"1.0","seq":4,"t":1717000000900,"type":"exited","exit_code":3,"pid":4002,"rank":1,"wall_s":0.9}
{"v":"1.0","seq":5,"t":1717000000900,"type":"stopping","rank":1,"reason":"rank 1 (pid 4002) exited with code 3"}
{"v":"1.0","seq":6,"t":1717000000901,"type":"signal_forwarded","ranks":2,"reason":"stopping the other ranks","signal":"SIGTERM"}
{"v":"1.0","seq":7,"t":1717000000950,"type":"exited","signal":9,"signal_name":"SIGKILL","pid":4001,"rank":0,"wall_s":0.95}
{"v":"1.0","seq":9,"t":1717000000960,"type":"agent_finished","exit_code":1,"reason":"rank 1 (pid 4002) exited with code 3"}
"""


def agent_files():
    """agent-<node>.jsonl lines (docs/run-directory.md's example) and launch.json of both launchers."""
    put("agent_events", "agent-node-a.jsonl", AGENT_EVENTS)
    put("agent_events", "exited_line.jsonl",
        '{"v":"1.0","seq":4,"t":1717000000900,"type":"exited","exit_code":3,"pid":4002,"rank":1,"wall_s":0.9}\r\n'
        '{"v":"1.1","seq":5,"t":1,"type":"rank_paused","rank":1}\n{"v":"1.0","seq":6,"t":1,"type":"stop')
    put("agent_events", "launch_ssh.json", """{
  "created": 1795000000000,
  "launcher": "ssh",
  "nodes": [
    {"address": "node-a.cluster", "agent_pid": 4242, "boot_id": "3f1c0c1e-9d2b-4a55-8f0e-2b1f7a9c0d11",
     "host": "node-a", "node_rank": 0, "start_ticks": 123456, "started": 1795000000100},
    {"address": "node-b.cluster", "agent_pid": 777, "boot_id": "8a6e9c1e-1111-4a55-8f0e-2b1f7a9c0d11",
     "host": "node-b", "node_rank": 1, "start_ticks": 99, "started": 1795000000200}
  ],
  "run_dir": "/scratch/runs/tiny-20261127-101500",
  "schema_version": "1.0",
  "shared_fs": true
}
""")
    put("agent_events", "launch_slurm.json", """{
  "created": 1795000000000,
  "launcher": "slurm",
  "run_dir": "/scratch/runs/tiny-20261127-101500",
  "schema_version": "1.0",
  "slurm": {"job_id": "123456", "login": "login01", "script": "slurm.sbatch"}
}
""")


SSH_CONFIG = """\
# ~/.ssh/config
Host *
  ServerAliveInterval 30
Host gpu-node0? !gpu-node09
  HostName %h.cluster.example.com
  User alice
  Port 2222
  IdentityFile ~/.ssh/id_ed25519
  IdentityFile "~/.ssh/id rsa"
  IdentitiesOnly yes
  ProxyJump bastion@jump.example.com:2200,login
Host db.example.com
  Include common
  UserKnownHostsFile ~/.ssh/known_hosts.d/%k %d/known
  StrictHostKeyChecking=accept-new
  HostKeyAlias db
Match host *.internal exec "true"
  User nobody
Match all
  ConnectTimeout 10
Host fuzzhost
  HashKnownHosts yes
  IdentityAgent ${SSH_AUTH_SOCK}
  GlobalKnownHostsFile /etc/ssh/ssh_known_hosts none
"""


def remote_files():
    """ssh_config with Host / Match / Include; known_hosts with hashed, pattern and marker lines
    for the keys known_hosts_fuzzer.cpp looks up."""
    import hashlib
    import hmac
    import struct

    put("ssh_config", "config", SSH_CONFIG)
    put("ssh_config", "include_self", "Host fuzzhost\n  Include config\n  User=me\n")
    put("ssh_config", "quotes", 'host 10.0.0.1 "Gpu-Node01"\n\tHostName="10.0.0.2" # comment\n'
        "\tServerAliveCountMax 5\n\tproxyjump none\n\tIdentityFile none\n\tIdentityAgent none\n")

    def blob(kind, key):
        return struct.pack(">I", len(kind)) + kind + struct.pack(">I", len(key)) + key

    def b64(x):
        return base64.b64encode(x).decode()

    def hashed(salt, name):
        return "|1|" + b64(salt) + "|" + b64(hmac.new(salt, name, hashlib.sha1).digest())

    ed = blob(b"ssh-ed25519", b"\x11" * 32)
    ec = blob(b"ecdsa-sha2-nistp256", b"nistp256" + b"\x04" * 65)
    other = blob(b"ssh-ed25519", b"\x22" * 32)
    put("known_hosts", "known_hosts", f"""# comment line
{hashed(bytes(range(20)), b"github.com")} ssh-ed25519 {b64(ed)}
{hashed(bytes(range(5, 25)), b"[gpu-node01]:2222")} ecdsa-sha2-nistp256 {b64(ec)}
10.0.0.*,!10.0.0.2 ssh-ed25519 {b64(other)}
[gpu-node0?]:2222,gpu-node01 ecdsa-sha2-nistp256 {b64(ec)} comment here
@revoked * ssh-ed25519 {b64(other)}
@cert-authority *.example.com ssh-ed25519 {b64(ed)}
malformed line
github.com ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQ==
""")
    put("known_hosts", "revoked", f"@revoked github.com ssh-ed25519 {b64(ed)}\n[10.0.0.1]:22 ssh-ed25519 {b64(ed)}\n"
        f"10.0.0.1 ecdsa-sha2-nistp256 {b64(ec)}\n")


def slurm_output():
    """squeue's output for squeueArgs' --format (fields separated by \\x1f), scontrol --oneliner, jobcomp."""
    s = "\x1f"
    put("slurm", "squeue.txt", f"123456{s}train-tiny{s}RUNNING{s}None{s}1:02:03{s}2{s}gpu-[01-02]\n"
        f"123457_4{s}eval job{s}PENDING{s}Priority{s}0:00{s}1{s}\n"
        f"123458{s}x{s}COMPLETING{s}None{s}2-03:04:05{s}1{s}gpu-07\n")
    put("slurm", "scontrol.txt",
        "JobId=123456 JobName=train tiny UserId=alice(1000) GroupId=alice(1000) MCS_label=N/A Priority=4294901759 "
        "Nice=0 Account=(null) QOS=normal JobState=FAILED Reason=NonZeroExitCode Dependency=(null) Requeue=1 "
        "Restarts=0 BatchFlag=1 Reboot=0 ExitCode=1:0 RunTime=00:00:05 TimeLimit=UNLIMITED NumNodes=1 NumCPUs=1 "
        "NodeList=gpu-01 Command=/scratch/runs/tiny/slurm.sbatch WorkDir=/scratch/runs/tiny "
        "StdOut=/scratch/runs/tiny/logs/slurm-%j.out\n")
    put("slurm", "jobcomp.txt",
        "JobId=123459 UserId=alice(1000) GroupId=alice(1000) Name=train JobState=CANCELLED Partition=gpu "
        "TimeLimit=60 StartTime=2026-11-27T10:15:00 EndTime=2026-11-27T10:16:00 NodeList=(null) NodeCnt=0 "
        "ProcCnt=0 WorkDir=/tmp ExitCode=0:15\n")


def shard_patterns():
    """shard_pattern_fuzzer.cpp's two forms: first byte even, the spec's text; odd, structured bytes."""
    texts = ["pipe:aws s3 cp s3://b/{00000..00041}.tar -", "pi{pe,g}:x::/d/{0..9}.tar",
             "{a.tar,pipe:cat /d/{1..3}.tar}::pipe:echo ${HOME}", "/d/{-05..05..2}.tar::{pipe:,x}{a,b}",
             "pipe:::x"]
    for i, t in enumerate(texts):
        put("shard_pattern", f"text{i}", b"\x00" + t.encode())
    put("shard_pattern", "structured0", bytes([1, 2, 3, 0, 10, 2, 1, 5, 3, 7, 2, 9]))
    put("shard_pattern", "structured1", bytes([1, 0, 4, 3, 1, 2, 0, 0, 1, 1, 6, 1, 3, 2, 2, 3, 4]))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_corpus.py BUILD_FUZZ_DIR")
    shutil.rmtree(CORPUS, ignore_errors=True)
    tmp = tempfile.mkdtemp()
    try:
        tensor_files(tmp)
        tokenizers(tmp)
    finally:
        shutil.rmtree(tmp)
    tar_shards()
    mmc4()
    wire_files()
    wire(sys.argv[1])
    images()
    agent_files()
    remote_files()
    slurm_output()
    shard_patterns()


if __name__ == "__main__":
    main()
