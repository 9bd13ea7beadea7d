#include "backend/protocol/wire/checkpoint_record.h"

#include <cmath>

#include "backend/protocol/wire/checkpoint_record_json.h"

namespace fs::protocol {

namespace {

constexpr char kHex[] = "0123456789abcdef";

int nibble(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Reads `json` as R through its field list; errors start with `what`.
template <class R>
StatusOr<R> decodeRecord(std::string_view json, const std::string& what) {
  StatusOr<json_fields::Json> parsed = json_fields::parseDocument(json);
  if (!parsed.isOk()) return Status::corruption(what + ": " + parsed.status().message());
  R record;
  const std::string error = json_fields::readRecord(*parsed, record);
  if (!error.empty()) return Status::corruption(what + ": " + error);
  return record;
}

std::string count(std::size_t n, const char* noun) {
  return std::to_string(n) + " " + noun;
}

Status checkDataPosition(const DataPositionRecord& p) {
  const auto bad = [](const std::string& what) { return Status::corruption("data position: " + what); };
  if (p.format > DataPositionRecord::kFormatVersion) {
    return Status::unsupported("data position: format " + std::to_string(p.format) +
                               " is newer than this build (" +
                               std::to_string(DataPositionRecord::kFormatVersion) + ")");
  }
  if (p.datasets.size() != p.batchesConsumed.size())
    return bad("datasets and batches_consumed differ in length");
  if (!p.batchSizes.empty() && p.batchSizes.size() != p.datasets.size())
    return bad("datasets and batch_sizes differ in length");
  if (!p.cursors.empty() && p.cursors.size() != p.datasets.size())
    return bad(count(p.cursors.size(), "cursors for ") + count(p.datasets.size(), "datasets"));
  for (std::size_t i = 0; i < p.cursors.size(); ++i) {
    const ShardCursorRecord& c = p.cursors[i];
    const std::string where = "cursors[" + std::to_string(i) + "]";
    if (c.shard.empty()) return bad(where + ".shard is empty");
    for (const auto& [key, value] : {std::pair<const char*, std::int64_t>{"shard_index", c.shardIndex},
                                     {"shard_count", c.shardCount},
                                     {"samples_read", c.samplesRead},
                                     {"pass", c.pass},
                                     {"worker", c.worker}}) {
      if (value < 0) return bad(where + "." + key + " is " + std::to_string(value) + ", below 0");
    }
    if (c.shardIndex >= c.shardCount) {
      return bad(where + ".shard_index " + std::to_string(c.shardIndex) + " is not below shard_count " +
                 std::to_string(c.shardCount));
    }
  }
  return Status::ok();
}

}  // namespace

json_fields::Json toJson(const Bytes& bytes) {
  std::string s;
  s.reserve(bytes.data.size() * 2);
  for (std::uint8_t b : bytes.data) {
    s += kHex[b >> 4];
    s += kHex[b & 15];
  }
  return json_fields::Json(std::move(s));
}

std::string fromJson(const json_fields::Json& j, Bytes& out) {
  if (!j.is_string()) return "expected a hex string";
  const auto& s = j.get_ref<const std::string&>();
  if (s.size() % 2 != 0) return "expected a hex string (an odd number of digits)";
  out.data.clear();
  out.data.reserve(s.size() / 2);
  for (std::size_t i = 0; i < s.size(); i += 2) {
    const int hi = nibble(s[i]), lo = nibble(s[i + 1]);
    if (hi < 0 || lo < 0) return "expected a hex string";
    out.data.push_back(static_cast<std::uint8_t>(hi * 16 + lo));
  }
  return "";
}

std::string encodeDataPosition(const DataPositionRecord& position) {
  return json_fields::toJson(position).dump();
}

StatusOr<DataPositionRecord> decodeDataPosition(std::string_view json) {
  auto p = decodeRecord<DataPositionRecord>(json, "data position");
  if (!p.isOk()) return p.status();
  if (Status s = checkDataPosition(*p); !s) return s;
  return p;
}

std::string encodeCheckpointManifest(const CheckpointManifest& manifest) {
  return json_fields::toJson(manifest).dump();
}

StatusOr<CheckpointManifest> decodeCheckpointManifest(std::string_view json) {
  return decodeRecord<CheckpointManifest>(json, "checkpoint manifest");
}

std::string encodeJsonText(const DataPositionRecord& record) {
  return encodeDataPosition(record);
}

std::string encodeJsonText(const CheckpointManifest& record) {
  return encodeCheckpointManifest(record);
}

Status decodeJsonText(std::string_view json, DataPositionRecord& out) {
  auto r = decodeDataPosition(json);
  if (!r.isOk()) return r.status();
  out = std::move(r.value());
  return Status::ok();
}

Status decodeJsonText(std::string_view json, CheckpointManifest& out) {
  auto r = decodeCheckpointManifest(json);
  if (!r.isOk()) return r.status();
  out = std::move(r.value());
  return Status::ok();
}

Status checkResumeRecord(const ResumeRecord& r) {
  if (r.format > ResumeRecord::kFormatVersion) {
    return Status::unsupported("format " + std::to_string(r.format) + " is newer than this build (" +
                               std::to_string(ResumeRecord::kFormatVersion) + ")");
  }
  if (r.kind != "epoch" && r.kind != "step" && r.kind != "final")
    return Status::corruption("kind: '" + r.kind + "' is not epoch, step or final");
  if (r.step < 0 || r.iteration < 0 || r.epoch < 0)
    return Status::corruption("step, iteration and epoch must not be negative");
  if (r.rngOwn.size() != 4)
    return Status::corruption("rng_own: " + std::to_string(r.rngOwn.size()) + " words, not 4");
  if (Status s = checkDataPosition(r.dataPosition.value); !s) return s;
  if (r.gradScaler && (!(r.gradScaler->scale > 0.0) || !std::isfinite(r.gradScaler->scale)))
    return Status::corruption("grad_scaler.scale is not a positive finite number");
  return Status::ok();
}

std::string encodeResumeRecord(const ResumeRecord& record) {
  return json_fields::toJson(record).dump();
}

StatusOr<ResumeRecord> decodeResumeRecord(std::string_view json) {
  auto r = decodeRecord<ResumeRecord>(json, "resume record");
  if (!r.isOk()) return r.status();
  if (Status s = checkResumeRecord(*r); !s) return s.withMessage("resume record: " + s.message());
  return r;
}

}  // namespace fs::protocol
