"""Oracle for `flamingo-train export`: reads the exports back with code of its own
and compares them with events.jsonl, in both directions (nothing missing, nothing
extra).

- TensorBoard: its own TFRecord reader and its own table-driven CRC-32C (checked on
  "123456789" -> 0xE3069283) verify every record's framing; the Event protobufs are
  decoded by protobuf (the Python environment's, pinned with tensorboard) through
  message classes built here from a FileDescriptorProto declared with
  TensorBoard's field numbers (not from our .proto, so a wrong number there is
  caught). Every scalar (tag, step, wall time,
  value as float32) and the config text are compared.
- TensorBoard itself: its EventAccumulator (the pinned tensorboard package, the
  code TensorBoard's own backend loads event files with) reads the same folder;
  every scalar series (tag, step, wall time, float32 value) and the config text
  must equal events.jsonl.
- CSV: Python's csv module and pandas.read_csv; every row (run, series, step,
  samples, tokens, wall_time, value to the last bit) is compared.
The series a line gives are derived here from the JSON independently of the C++
(docs/export.md is the table both follow).

Runs on the golden 1.4 telemetry sample (every event type) and, when the build has
the engine, on a run `flamingo-train demo` trains here.

Usage: export_oracle.py FLAMINGO_TRAIN SOURCE_DIR engine|no-engine
Exit 0 pass, 1 fail, 77 skipped (protobuf, pandas or tensorboard missing outside CI).
"""
import collections
import csv
import io
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import pandas as pd
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    from tensorboard.backend.event_processing import event_accumulator
except ImportError as e:  # pragma: no cover - depends on the machine
    msg = (f"export_oracle: {e} (bash scripts/install-deps.sh: python3-pandas, and "
           f"protobuf and tensorboard in the project's Python environment)")
    if os.environ.get("CI") == "true":
        print(msg + "; required under CI", file=sys.stderr)
        sys.exit(1)
    print(msg + "; skipped", file=sys.stderr)
    sys.exit(77)


# ---- CRC-32C (Castagnoli), our own ----------------------------------------------------
def _crc_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked(crc):
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283, hex(crc32c(b"123456789"))


def read_tfrecords(path):
    data = open(path, "rb").read()
    records, at = [], 0
    while at < len(data):
        if at + 12 > len(data):
            raise AssertionError(f"{path}: truncated record header at byte {at}")
        header = data[at:at + 8]
        (length,) = struct.unpack("<Q", header)
        (len_crc,) = struct.unpack("<I", data[at + 8:at + 12])
        if len_crc != masked(crc32c(header)):
            raise AssertionError(f"{path}: bad length CRC at byte {at}")
        body = data[at + 12:at + 12 + length]
        if len(body) != length or at + 16 + length > len(data):
            raise AssertionError(f"{path}: truncated record at byte {at}")
        (data_crc,) = struct.unpack("<I", data[at + 12 + length:at + 16 + length])
        if data_crc != masked(crc32c(body)):
            raise AssertionError(f"{path}: bad data CRC in the record at byte {at}")
        records.append(body)
        at += 16 + length
    return records


# ---- TensorBoard's messages, declared from its field numbers ----------------------------
def tensorboard_messages():
    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="oracle_tensorboard.proto", package="oracle", syntax="proto3")
    dt = fdp.enum_type.add(name="DataType")
    for name, number in (("DT_INVALID", 0), ("DT_FLOAT", 1), ("DT_DOUBLE", 2), ("DT_STRING", 7)):
        dt.value.add(name=name, number=number)

    def field(msg, name, number, ftype, label=F.LABEL_OPTIONAL, type_name=None, oneof=None):
        f = msg.field.add(name=name, number=number, type=ftype, label=label)
        if type_name:
            f.type_name = type_name
        if oneof is not None:
            f.oneof_index = oneof

    shape = fdp.message_type.add(name="TensorShapeProto")
    dim = shape.nested_type.add(name="Dim")
    field(dim, "size", 1, F.TYPE_INT64)
    field(dim, "name", 2, F.TYPE_STRING)
    field(shape, "dim", 2, F.TYPE_MESSAGE, F.LABEL_REPEATED, ".oracle.TensorShapeProto.Dim")
    field(shape, "unknown_rank", 3, F.TYPE_BOOL)

    tensor = fdp.message_type.add(name="TensorProto")
    field(tensor, "dtype", 1, F.TYPE_ENUM, type_name=".oracle.DataType")
    field(tensor, "tensor_shape", 2, F.TYPE_MESSAGE, type_name=".oracle.TensorShapeProto")
    field(tensor, "tensor_content", 4, F.TYPE_BYTES)
    field(tensor, "float_val", 5, F.TYPE_FLOAT, F.LABEL_REPEATED)
    field(tensor, "double_val", 6, F.TYPE_DOUBLE, F.LABEL_REPEATED)
    field(tensor, "string_val", 8, F.TYPE_BYTES, F.LABEL_REPEATED)

    meta = fdp.message_type.add(name="SummaryMetadata")
    plugin = meta.nested_type.add(name="PluginData")
    field(plugin, "plugin_name", 1, F.TYPE_STRING)
    field(plugin, "content", 2, F.TYPE_BYTES)
    field(meta, "plugin_data", 1, F.TYPE_MESSAGE, type_name=".oracle.SummaryMetadata.PluginData")
    field(meta, "display_name", 2, F.TYPE_STRING)
    field(meta, "summary_description", 3, F.TYPE_STRING)

    summary = fdp.message_type.add(name="Summary")
    value = summary.nested_type.add(name="Value")
    value.oneof_decl.add(name="value")
    field(value, "node_name", 7, F.TYPE_STRING)
    field(value, "tag", 1, F.TYPE_STRING)
    field(value, "metadata", 9, F.TYPE_MESSAGE, type_name=".oracle.SummaryMetadata")
    field(value, "simple_value", 2, F.TYPE_FLOAT, oneof=0)
    field(value, "obsolete_old_style_histogram", 3, F.TYPE_BYTES, oneof=0)
    field(value, "tensor", 8, F.TYPE_MESSAGE, type_name=".oracle.TensorProto", oneof=0)
    field(summary, "value", 1, F.TYPE_MESSAGE, F.LABEL_REPEATED, ".oracle.Summary.Value")

    event = fdp.message_type.add(name="Event")
    event.oneof_decl.add(name="what")
    field(event, "wall_time", 1, F.TYPE_DOUBLE)
    field(event, "step", 2, F.TYPE_INT64)
    field(event, "file_version", 3, F.TYPE_STRING, oneof=0)
    field(event, "graph_def", 4, F.TYPE_BYTES, oneof=0)
    field(event, "summary", 5, F.TYPE_MESSAGE, type_name=".oracle.Summary", oneof=0)
    field(event, "meta_graph_def", 9, F.TYPE_BYTES, oneof=0)

    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    descriptor = pool.FindMessageTypeByName("oracle.Event")
    if hasattr(message_factory, "GetMessageClass"):  # protobuf >= 4.22
        return message_factory.GetMessageClass(descriptor)
    return message_factory.MessageFactory(pool).GetPrototype(descriptor)


Event = tensorboard_messages()


# ---- the series of events.jsonl, derived here -------------------------------------------
def num(v):
    if v is None:
        return math.nan
    if isinstance(v, str):
        return float(v.lower())  # "nan", "inf", "-inf" in any case
    return float(v)


def series_of(e):
    """[(series, step, samples, tokens, value)] of one decoded JSON event."""
    out, kind = [], e["type"]

    def add(name, step, value, samples=None, tokens=None):
        out.append((name, int(step), samples, tokens, num(value)))

    if kind == "step":
        step = e["step"]
        smp, tok = e.get("samples", {}), e.get("tokens", {})
        tot_s = sum(int(v) for v in smp.values()) if smp else None
        tot_t = sum(int(v) for v in tok.values()) if tok else None

        def per_ds(name, ds, value):
            add(name, step, value, int(smp[ds]) if ds in smp else None, int(tok[ds]) if ds in tok else None)

        def whole(name, value):
            add(name, step, value, tot_s, tot_t)

        for ds, v in e["loss"].items():
            per_ds(f"loss/{ds}", ds, v)
        for ds, losses in e.get("rank_loss", {}).items():
            for r, v in enumerate(losses):
                per_ds(f"rank_loss/{ds}/rank{r}", ds, v)
        whole("lr", e.get("lr", 0))
        if e.get("grad_norm") is not None:
            whole("grad_norm", e["grad_norm"])
        if e.get("loss_scale") is not None:
            whole("loss_scale", e["loss_scale"])
        whole("epoch", e.get("epoch", 0))
        whole("skipped", 1 if e.get("skipped") else 0)
        whole("time/step_s", e.get("step_time_s", 0))
        whole("time/data_s", e.get("data_time_s", 0))
        whole("time/comm_s", e.get("comm_time_s", 0))
        for ds, v in e.get("samples_per_s", {}).items():
            per_ds(f"throughput/samples_per_s/{ds}", ds, v)
        for ds, v in smp.items():
            per_ds(f"samples/{ds}", ds, v)
        for ds, v in tok.items():
            per_ds(f"tokens/{ds}", ds, v)
        for g in e.get("gates", []):
            whole(f"gates/layer{g['layer']}/attn", g["attn"])
            whole(f"gates/layer{g['layer']}/ff", g["ff"])
    elif kind == "validation":
        for ds, v in e["loss"].items():
            add(f"validation/loss/{ds}", e["step"], v)
        if e.get("duration_s") is not None:
            add("validation/duration_s", e["step"], e["duration_s"])
    elif kind == "memory":
        for r in e["ranks"]:
            p = f"memory/rank{r['rank']}/"
            for f in ("rss_bytes", "peak_bytes", "params", "grads", "optimizer", "gathered", "activations"):
                add(p + f, e["step"], r.get(f, 0))
            for f in ("step_peak", "gathered_units", "device_bytes", "device_peak", "device_reserved",
                      "device_reserved_peak"):
                if r.get(f) is not None:
                    add(p + f, e["step"], r[f])
            for phase, m in r.get("device_phases", {}).items():
                add(f"{p}phase/{phase}/allocated_peak", e["step"], m.get("allocated_peak", 0))
                add(f"{p}phase/{phase}/reserved_peak", e["step"], m.get("reserved_peak", 0))
    elif kind == "checkpoint":
        add("checkpoint/bytes", e["step"], e.get("bytes", 0))
        add("checkpoint/duration_s", e["step"], e.get("duration_s", 0))
    elif kind == "data_stats":
        for ds, n in e.get("accepted", {}).items():
            add(f"data/accepted/{ds}", e["step"], n)
        for ds, reasons in e["dropped"].items():
            for reason, n in reasons.items():
                add(f"data/dropped/{ds}/{reason}", e["step"], n)
        for ds, shards in e.get("shards", {}).items():
            for shard, reasons in shards.items():
                for reason, n in reasons.items():
                    add(f"data/shard_dropped/{ds}/{shard}/{reason}", e["step"], n)
    elif kind == "heartbeat":
        for r in e.get("ranks", []):
            add(f"heartbeat/rank{r['rank']}/collective_seq", e["step"], r.get("collective_seq", 0))
    elif kind == "run_finished":
        for ds, v in e.get("final_loss", {}).items():
            add(f"final_loss/{ds}", e["steps"], v)
        add("run/duration_s", e["steps"], e.get("duration_s", 0))
    return out


def expected_points(run_dir):
    points = []
    with open(os.path.join(run_dir, "events.jsonl"), encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            e = json.loads(line)
            points += [(s, step, smp, tok, e["t"], v) for s, step, smp, tok, v in series_of(e)]
    return points


def f32_key(v):
    v = float(np.float32(v))
    return "nan" if math.isnan(v) else v


def exact_key(v):
    return "nan" if math.isnan(v) else v


def diff(what, expected, got):
    missing, extra = expected - got, got - expected
    if missing or extra:
        raise AssertionError(f"{what}: {sum(missing.values())} expected point(s) missing, e.g. "
                             f"{list(missing.elements())[:3]}; {sum(extra.values())} extra, e.g. "
                             f"{list(extra.elements())[:3]}")


# ---- the checks -------------------------------------------------------------------------
def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p


def check_tensorboard(train, run_dir, out_dir):
    run([train, "export", "tensorboard", run_dir, out_dir])
    files = [f for f in os.listdir(out_dir) if f.startswith("events.out.tfevents.")]
    assert len(files) == 1, f"{out_dir}: expected one event file, found {os.listdir(out_dir)}"
    records = read_tfrecords(os.path.join(out_dir, files[0]))
    events = [Event.FromString(r) for r in records]
    assert events[0].WhichOneof("what") == "file_version" and events[0].file_version == "brain.Event:2", events[0]

    config = open(os.path.join(run_dir, "config.yaml"), encoding="utf-8").read()
    texts = [(e, v) for e in events for v in e.summary.value if v.WhichOneof("value") == "tensor"]
    assert len(texts) == 1, f"expected one text summary, found {len(texts)}"
    e, v = texts[0]
    assert v.tag == "config" and e.step == 0, (v.tag, e.step)
    assert v.metadata.plugin_data.plugin_name == "text", v.metadata
    assert v.tensor.dtype == 7 and len(v.tensor.tensor_shape.dim) == 0, v.tensor
    text = v.tensor.string_val[0].decode("utf-8")
    assert all(l.startswith("    ") for l in text.splitlines()), "config lines are indented (Markdown code)"
    expected_config = config if config.endswith("\n") else config + "\n"
    assert "".join(l[4:] + "\n" for l in text.splitlines()) == expected_config, "config text differs"

    got = collections.Counter()
    for e in events:
        for v in e.summary.value:
            if v.WhichOneof("value") == "simple_value":
                got[(v.tag, e.step, e.wall_time, f32_key(v.simple_value))] += 1
    want = collections.Counter((s, step, t / 1000.0, f32_key(v)) for s, step, _, _, t, v in expected_points(run_dir))
    diff(f"tensorboard {run_dir}", want, got)
    check_event_accumulator(out_dir, want, expected_config)
    return sum(want.values())


def check_event_accumulator(out_dir, want, expected_config):
    """TensorBoard's own reader on the exported folder: the same points and config text."""
    acc = event_accumulator.EventAccumulator(out_dir, size_guidance={event_accumulator.SCALARS: 0,
                                                                     event_accumulator.TENSORS: 0})
    acc.Reload()
    tags = acc.Tags()
    got = collections.Counter()
    for tag in tags["scalars"]:
        for ev in acc.Scalars(tag):
            got[(tag, ev.step, ev.wall_time, f32_key(ev.value))] += 1
    diff(f"tensorboard's EventAccumulator on {out_dir}", want, got)
    assert tags["tensors"] == ["config"], f"EventAccumulator tensors: {tags['tensors']}, expected ['config']"
    (config_event,) = acc.Tensors("config")
    assert config_event.step == 0, config_event
    assert acc.SummaryMetadata("config").plugin_data.plugin_name == "text"
    text = config_event.tensor_proto.string_val[0].decode("utf-8")
    assert "".join(l[4:] + "\n" for l in text.splitlines()) == expected_config, \
        "EventAccumulator: config text differs"


def check_csv(train, run_dirs, out_csv):
    run([train, "export", "csv", *run_dirs, out_csv])
    text = open(out_csv, encoding="utf-8", newline="").read()
    stdout = run([train, "export", "csv", *run_dirs, "-"]).stdout
    assert stdout == text, "the CSV on standard output differs from the file"

    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert rows[0] == ["run", "series", "step", "samples", "tokens", "wall_time", "value"], rows[0]
    got = collections.Counter()
    for r in rows[1:]:
        run_name, series, step, smp, tok, wall, value = r
        got[(run_name, series, int(step), smp, tok, wall, exact_key(float(value)))] += 1
    want = collections.Counter()
    for d in run_dirs:
        name = os.path.basename(os.path.normpath(d))
        for s, step, smp, tok, t, v in expected_points(d):
            want[(name, s, step, "" if smp is None else str(smp), "" if tok is None else str(tok),
                  f"{t // 1000}.{t % 1000:03d}", exact_key(v))] += 1
    diff(f"csv {out_csv}", want, got)

    frame = pd.read_csv(out_csv, float_precision="round_trip", keep_default_na=False,
                        na_values={"samples": [""], "tokens": [""]})
    assert list(frame.columns) == rows[0], list(frame.columns)
    assert len(frame) == len(rows) - 1
    assert frame["step"].dtype.kind == "i" and frame["value"].dtype.kind == "f", frame.dtypes
    values = [float(r[6]) for r in rows[1:]]
    same = [(a == b) or (math.isnan(a) and math.isnan(b)) for a, b in zip(frame["value"].tolist(), values)]
    assert all(same), "pandas reads other values than the text holds"
    return sum(want.values())


def check_cli_errors(train, golden, work):
    """Exit codes and messages of the command itself (the library's cases: run_export_test)."""
    def expect(cmd, code, text, stream="stderr"):
        p = subprocess.run(cmd, capture_output=True, text=True)
        out = getattr(p, stream)
        if p.returncode != code or text not in out:
            raise AssertionError(f"{' '.join(cmd)}: expected exit {code} and {text!r} on {stream}, "
                                 f"got {p.returncode}:\n{p.stdout}\n{p.stderr}")

    missing = os.path.join(work, "no-such-run")
    expect([train, "export", "csv", missing, os.path.join(work, "x.csv")], 1, f"{missing} does not exist")
    out = os.path.join(work, "twice.csv")
    run([train, "export", "csv", golden, out])
    expect([train, "export", "csv", golden, out], 1, f"{out} exists; pass --force to replace it")
    run([train, "export", "csv", "--force", golden, out])
    expect([train, "export", "parquet", golden, out], 2, "unknown tool 'parquet'")
    expect([train, "export", "tensorboard", golden], 2, "tensorboard takes RUN_DIR and OUT_DIR")
    expect([train, "export", "--help"], 0, "usage: flamingo-train export <tool>", stream="stdout")

    broken = os.path.join(work, "broken")
    shutil.copytree(golden, broken)
    with open(os.path.join(broken, "events.jsonl"), "a", encoding="utf-8") as f:
        f.write("{not json\n")
    lines = sum(1 for _ in open(os.path.join(broken, "events.jsonl"), encoding="utf-8"))
    where = f"{os.path.join(broken, 'events.jsonl')} line {lines}"
    expect([train, "export", "csv", broken, os.path.join(work, "broken.csv")], 0, where)
    got = open(os.path.join(work, "broken.csv"), encoding="utf-8").read()
    want = open(out, encoding="utf-8").read().replace("\ngolden,", "\nbroken,")
    assert got == want, "a corrupt last line changed what the other lines export"


def main(argv):
    train, source, mode = os.path.abspath(argv[1]), os.path.abspath(argv[2]), argv[3]
    work = tempfile.mkdtemp(prefix="export_oracle-")
    try:
        golden = os.path.join(work, "golden")
        os.makedirs(golden)
        shutil.copy(os.path.join(source, "tests/assets/telemetry/events-1.4.jsonl"),
                    os.path.join(golden, "events.jsonl"))
        with open(os.path.join(golden, "config.yaml"), "w", encoding="utf-8") as f:
            f.write("# golden sample\nname: golden\noptim: {lr: 1.0e-4}\n")
        n = check_tensorboard(train, golden, os.path.join(work, "tb-golden"))
        print(f"golden sample: {n} scalars match events.jsonl both ways")
        check_cli_errors(train, golden, work)
        print("command errors: missing run, existing output, --force, corrupt line named: ok")
        runs = [golden]
        if mode == "engine":
            demo = os.path.join(work, "demo")
            run([train, "demo", "--run-dir", demo, "--set", "optim.epochs=1"], cwd=work,
                env=dict(os.environ, XDG_DATA_HOME=os.path.join(work, "data"),
                         XDG_CACHE_HOME=os.path.join(work, "cache"), XDG_CONFIG_HOME=os.path.join(work, "config")))
            n = check_tensorboard(train, demo, os.path.join(work, "tb-demo"))
            print(f"demo run: {n} scalars match events.jsonl both ways")
            runs.append(demo)
        n = check_csv(train, runs, os.path.join(work, "all.csv"))
        print(f"csv of {len(runs)} run(s): {n} rows match events.jsonl both ways, pandas reads them")
    except AssertionError as e:
        print(f"export_oracle: FAILED: {e}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("export oracle: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
