"""Oracle for `flamingo-train export`: reads the exports back with the packages
that read them in practice and compares them with events.jsonl, in both
directions (nothing missing, nothing extra).

- TensorBoard: its own record reader (tensorboard.compat.tensorflow_stub's
  PyRecordReader_New, the one TensorBoard loads event files with when TensorFlow
  is absent) checks every record's framing and both CRC-32Cs, to the end of the
  file, and every record must parse as TensorBoard's own Event proto
  (tensorboard.compat.proto.event_pb2); the first says file_version
  "brain.Event:2". Then its EventAccumulator (size_guidance 0: everything kept)
  gives every scalar series (tag, step, wall time, float32 value), which must
  equal events.jsonl both ways, and the config text: one tensor under the text
  plugin, decoded by tensorboard.util.tensor_util and rendered by the text
  plugin's own text_array_to_html, which must show config.yaml verbatim as one
  code block. (EventAccumulator alone would not do for the framing: it stops
  silently at a bad CRC, so the record reader runs first and fails loudly.)
- CSV: Python's csv module and pandas.read_csv; every row (run, series, step,
  samples, tokens, wall_time, value to the last bit) is compared.
The series a line gives are derived here from the JSON independently of the C++
(docs/export.md is the table both follow).

Runs on the golden 1.4 telemetry sample (every event type) and, when the build has
the engine, on a run `flamingo-train demo` trains here.

Usage: export_oracle.py FLAMINGO_TRAIN SOURCE_DIR engine|no-engine
Exit 0 pass, 1 fail, 77 skipped (pandas or tensorboard missing outside CI).
"""
import collections
import csv
import html
import io
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import pandas as pd
    from tensorboard.backend.event_processing import event_accumulator
    from tensorboard.compat.proto import event_pb2
    from tensorboard.compat.tensorflow_stub import errors as tb_errors
    from tensorboard.compat.tensorflow_stub import pywrap_tensorflow
    from tensorboard.plugins.text import text_plugin
    from tensorboard.util import tensor_util
except ImportError as e:  # pragma: no cover - depends on the machine
    msg = (f"export_oracle: {e} (bash scripts/install-deps.sh: python3-pandas, and "
           f"tensorboard in the project's Python environment)")
    if os.environ.get("CI") == "true":
        print(msg + "; required under CI", file=sys.stderr)
        sys.exit(1)
    print(msg + "; skipped", file=sys.stderr)
    sys.exit(77)


# ---- TensorBoard's record reader ---------------------------------------------------------
def read_records(path):
    """Every record of an event file through TensorBoard's own reader; a framing or CRC error,
    which EventAccumulator would swallow (it stops reading there), fails here."""
    reader = pywrap_tensorflow.PyRecordReader_New(path)
    records = []
    while True:
        try:
            reader.GetNext()
        except tb_errors.OutOfRangeError:
            return records
        except tb_errors.DataLossError as e:
            raise AssertionError(f"{path}: record {len(records)}: {e.message}")
        records.append(reader.record())


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
    events = [event_pb2.Event.FromString(r) for r in read_records(os.path.join(out_dir, files[0]))]
    assert events[0].WhichOneof("what") == "file_version" and events[0].file_version == "brain.Event:2", events[0]

    config = open(os.path.join(run_dir, "config.yaml"), encoding="utf-8").read()
    expected_config = config if config.endswith("\n") else config + "\n"
    want = collections.Counter((s, step, t / 1000.0, f32_key(v)) for s, step, _, _, t, v in expected_points(run_dir))

    acc = event_accumulator.EventAccumulator(out_dir, size_guidance={event_accumulator.SCALARS: 0,
                                                                     event_accumulator.TENSORS: 0})
    acc.Reload()
    assert acc.file_version == 2.0, f"EventAccumulator: file_version {acc.file_version}"
    tags = acc.Tags()
    got = collections.Counter()
    for tag in tags["scalars"]:
        for ev in acc.Scalars(tag):
            got[(tag, ev.step, ev.wall_time, f32_key(ev.value))] += 1
    diff(f"tensorboard's EventAccumulator on {out_dir}", want, got)

    assert tags["tensors"] == ["config"], f"EventAccumulator tensors: {tags['tensors']}, expected ['config']"
    assert acc.SummaryMetadata("config").plugin_data.plugin_name == "text", acc.SummaryMetadata("config")
    (config_event,) = acc.Tensors("config")
    assert config_event.step == 0, config_event
    text = tensor_util.make_ndarray(config_event.tensor_proto)
    assert text.shape == () and text.dtype == object, (text.shape, text.dtype)
    shown = text_plugin.text_array_to_html(text, enable_markdown=True)
    start, end = "<pre><code>", "</code></pre>"
    assert shown.startswith(start) and shown.endswith(end) and shown.count("<pre>") == 1, \
        f"the text plugin does not show the config as one code block: {shown[:200]!r}"
    assert html.unescape(shown[len(start):-len(end)]) == expected_config, \
        f"the text plugin shows another config: {shown[:200]!r}"
    return sum(want.values())


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
