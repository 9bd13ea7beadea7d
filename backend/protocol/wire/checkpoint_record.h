// The records a Flamingo Studio checkpoint carries besides its tensors, each
// declared once: the resume record (a file's "flamingo_studio" dict, a sharded
// index's "resume" object), the data position inside it, the checkpoint
// manifest, and the loss scaler's state. Spec: docs/run-directory.md,
// "Checkpoints".
//
// NOTE [Checkpoint records]
// Each record has one describe(V&, R&) field list. Every encoding walks it:
//   - JSON (this library): the data position and the manifest are JSON
//     documents, and a sharded index's "resume" is a JSON object;
//   - the pickled dict of a torch.save file, written and read by the engine
//     (backend/checkpoint/record_ivalue.h, on LibTorch's IValue) and read
//     torch-free by the inspector (backend/inspect/record_pyvalue.h, on
//     tensorfile's PyValue).
// A visitor has req(key, field), opt(key, field) and lax(key, field)
// (json_fields.h says what each means) for the member types used below. Two
// types say how a field is carried rather than what it is: Bytes (a uint8
// tensor in a pickle, hex in JSON) and JsonText<R> (R's JSON document as a
// string, in both encodings). Adding a field: add the member and its line
// in describe(); checkpoint_record_test round-trips every record through
// every encoding and fails on a field one of them drops.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/protocol/status.h"

namespace fs::protocol {

// The top-level key of a torch.save checkpoint under which the resume record is pickled.
inline constexpr std::string_view kResumeRecordKey = "flamingo_studio";

// Raw bytes: a uint8 tensor in a pickle, lower-case hex in JSON.
struct Bytes {
  std::vector<std::uint8_t> data;
  bool operator==(const Bytes&) const = default;
};

// A record carried as its own JSON document inside a string.
template <class R>
struct JsonText {
  R value;
  bool operator==(const JsonText&) const = default;
};

// ---- the data position (backend/data/data_position.h: NOTE [Data position]) ----

// Where the shard reader stood when a dataset's last consumed batch completed
// (NOTE [Shard cursor] in backend/data/shard_cursor.h).
struct ShardCursorRecord {
  std::string shard;  // path or URL as the plan gives it
  std::int64_t shardIndex = 0;
  std::int64_t shardCount = 0;
  std::int64_t samplesRead = 0;
  std::int64_t pass = 0;
  std::int64_t worker = 0;
  bool operator==(const ShardCursorRecord&) const = default;
};

template <class V>
void describe(V& v, ShardCursorRecord& c) {
  v.req("shard", c.shard);
  v.req("shard_index", c.shardIndex);
  v.req("shard_count", c.shardCount);
  v.req("samples_read", c.samplesRead);
  v.req("pass", c.pass);
  v.req("worker", c.worker);
}

struct DataPositionRecord {
  static constexpr std::int64_t kFormatVersion = 1;

  std::int64_t format = kFormatVersion;
  std::string source;  // "synthetic" | "shards": the kind that wrote it
  std::int64_t epoch = 0;
  std::int64_t rank = 0;
  std::int64_t world = 1;
  std::vector<std::string> datasets;          // names, config order
  std::vector<std::int64_t> batchesConsumed;  // per dataset, within `epoch`
  std::vector<std::int64_t> batchSizes;       // per dataset, per rank; may be empty (older files)
  Bytes rngState;                             // source-specific, may be empty
  std::vector<ShardCursorRecord> cursors;     // per dataset or empty: NOTE [Data position cursors]
  bool operator==(const DataPositionRecord&) const = default;
};

template <class V>
void describe(V& v, DataPositionRecord& p) {
  v.req("format", p.format);
  v.req("source", p.source);
  v.req("epoch", p.epoch);
  v.req("rank", p.rank);
  v.req("world", p.world);
  v.req("datasets", p.datasets);
  v.req("batches_consumed", p.batchesConsumed);
  v.opt("batch_sizes", p.batchSizes);
  v.req("rng_state", p.rngState);
  v.opt("cursors", p.cursors);
}

// A compact JSON object. Keys are written sorted; a reader takes any order.
std::string encodeDataPosition(const DataPositionRecord& position);
// Refuses malformed JSON, missing or mistyped fields, a newer format, lists
// whose lengths disagree, negative cursor numbers and a cursor's shard_index
// not below its shard_count, naming the field ("data position:
// cursors[1].samples_read ..."). Ignores keys it does not know.
StatusOr<DataPositionRecord> decodeDataPosition(std::string_view json);

// ---- the checkpoint manifest (backend/checkpoint/checkpoint_manifest.h) ----

struct ManifestLm {
  std::string family;
  std::int64_t width = 0;
  std::int64_t layers = 0;
  std::int64_t heads = 0;
  std::int64_t vocabSize = 0;
  bool tiedHead = false;
  bool operator==(const ManifestLm&) const = default;
};

template <class V>
void describe(V& v, ManifestLm& m) {
  v.req("family", m.family);
  v.req("width", m.width);
  v.req("layers", m.layers);
  v.req("heads", m.heads);
  v.req("vocab_size", m.vocabSize);
  v.req("tied_head", m.tiedHead);
}

struct ManifestVision {
  std::string path;
  std::int64_t width = 0;
  std::int64_t layers = 0;
  std::int64_t patchSize = 0;
  std::int64_t imageSize = 0;
  bool operator==(const ManifestVision&) const = default;
};

template <class V>
void describe(V& v, ManifestVision& m) {
  v.req("path", m.path);
  v.req("width", m.width);
  v.req("layers", m.layers);
  v.req("patch_size", m.patchSize);
  v.req("image_size", m.imageSize);
}

// Every parameter of the model, in model order.
struct ManifestParameter {
  std::string name;
  std::vector<std::int64_t> shape;
  bool trainable = false;
  bool operator==(const ManifestParameter&) const = default;
};

template <class V>
void describe(V& v, ManifestParameter& p) {
  v.req("name", p.name);
  v.req("shape", p.shape);
  v.req("trainable", p.trainable);
}

// A tensor saved in model_state_dict: its c10 dtype name ("Float") and content hash.
struct ManifestTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  std::string dtype;
  std::string hash;  // 16 hex digits (tensorfile/content_hash.h)
  bool operator==(const ManifestTensor&) const = default;
};

template <class V>
void describe(V& v, ManifestTensor& t) {
  v.req("name", t.name);
  v.req("shape", t.shape);
  v.req("dtype", t.dtype);
  v.req("hash", t.hash);
}

struct CheckpointManifest {
  std::string engineVersion;
  ManifestLm lm;
  ManifestVision vision;
  std::int64_t crossAttnEveryNLayers = 0;
  std::map<std::string, std::int64_t> addedTokens;  // token text -> id
  std::vector<ManifestParameter> parameters;
  // Absent in engines before 0.2 and in a sharded index (its reader adds them).
  std::optional<std::vector<ManifestTensor>> tensors;
  bool operator==(const CheckpointManifest&) const = default;
};

template <class V>
void describe(V& v, CheckpointManifest& m) {
  v.req("engine_version", m.engineVersion);
  v.req("lm", m.lm);
  v.req("vision", m.vision);
  v.req("cross_attn_every_n_layers", m.crossAttnEveryNLayers);
  v.req("added_tokens", m.addedTokens);
  v.req("parameters", m.parameters);
  v.opt("tensors", m.tensors);
}

std::string encodeCheckpointManifest(const CheckpointManifest& manifest);
// Errors name the field ("checkpoint manifest: lm.width ...").
StatusOr<CheckpointManifest> decodeCheckpointManifest(std::string_view json);

// ---- the loss scaler and the resume record ----

// torch.cuda.amp.GradScaler.state_dict()'s fields: the loss scale of fp16 runs.
struct GradScalerRecord {
  double scale = 65536.0;
  double growthFactor = 2.0;
  double backoffFactor = 0.5;
  std::int64_t growthInterval = 2000;
  std::int64_t growthTracker = 0;
  bool operator==(const GradScalerRecord&) const = default;
};

template <class V>
void describe(V& v, GradScalerRecord& g) {
  v.req("scale", g.scale);
  v.req("growth_factor", g.growthFactor);
  v.req("backoff_factor", g.backoffFactor);
  v.req("growth_interval", g.growthInterval);
  v.req("_growth_tracker", g.growthTracker);
}

// Where training stands, and what it needs to continue bit for bit.
struct ResumeRecord {
  static constexpr std::int64_t kFormatVersion = 1;

  std::int64_t format = kFormatVersion;  // absent in sharded indexes before 0.3: read as 1
  std::string kind;                      // "epoch" | "step" | "final"
  std::int64_t step = 0;                 // optimizer steps taken
  std::int64_t iteration = 0;            // training iterations (micro-steps) taken
  std::int64_t epoch = 0;                // epoch to continue in
  JsonText<DataPositionRecord> dataPosition;
  Bytes rngTorchCpu;                           // torch's CPU generator state
  std::vector<Bytes> rngTorchCuda;             // one per CUDA device; empty without CUDA
  std::vector<std::uint64_t> rngOwn;           // our process generator's 4 words
  JsonText<CheckpointManifest> manifest;       // without tensors in a sharded index
  std::optional<GradScalerRecord> gradScaler;  // fp16 precisions only
  bool operator==(const ResumeRecord&) const = default;
};

template <class V>
void describe(V& v, ResumeRecord& r) {
  v.lax("format", r.format);
  v.req("kind", r.kind);
  v.req("step", r.step);
  v.req("iteration", r.iteration);
  v.req("epoch", r.epoch);
  v.req("data_position", r.dataPosition);
  v.req("rng_torch_cpu", r.rngTorchCpu);
  v.req("rng_torch_cuda", r.rngTorchCuda);
  v.req("rng_own", r.rngOwn);
  v.req("manifest", r.manifest);
  v.opt("grad_scaler", r.gradScaler);
}

// What a reader checks once the fields are read, whatever the encoding: the
// format, the kind, four own RNG words, a positive finite loss scale. Errors
// name the field ("rng_own: 3 words, not 4").
Status checkResumeRecord(const ResumeRecord& record);

// JsonText<R>'s document for each record carried so; decoding checks what
// decodeDataPosition / decodeCheckpointManifest check.
std::string encodeJsonText(const DataPositionRecord& record);
std::string encodeJsonText(const CheckpointManifest& record);
Status decodeJsonText(std::string_view json, DataPositionRecord& out);
Status decodeJsonText(std::string_view json, CheckpointManifest& out);

// The resume record as a JSON object (a sharded index's "resume"), and back.
std::string encodeResumeRecord(const ResumeRecord& record);
StatusOr<ResumeRecord> decodeResumeRecord(std::string_view json);

}  // namespace fs::protocol
