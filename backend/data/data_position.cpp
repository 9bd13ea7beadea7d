#include "backend/data/data_position.h"

#include <nlohmann/json.hpp>

namespace fs::data {
namespace {
constexpr char kHex[] = "0123456789abcdef";

std::string toHex(const std::vector<uint8_t>& bytes) {
  std::string s;
  s.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    s += kHex[b >> 4];
    s += kHex[b & 15];
  }
  return s;
}

bool fromHex(const std::string& s, std::vector<uint8_t>& out) {
  if (s.size() % 2 != 0) return false;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  out.clear();
  for (size_t i = 0; i < s.size(); i += 2) {
    const int hi = nibble(s[i]), lo = nibble(s[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out.push_back(static_cast<uint8_t>(hi * 16 + lo));
  }
  return true;
}

// cursors[i].<key> as a non-negative integer; errors name the field.
protocol::Status cursorNumber(const nlohmann::json& c, const std::string& where, const char* key,
                              int64_t& out) {
  using protocol::Status;
  const std::string field = where + "." + key;
  if (!c.contains(key)) return Status::corruption("data position: " + field + " is missing");
  const auto& v = c.at(key);
  if (!v.is_number_integer()) {
    return Status::corruption("data position: " + field + " is " + v.dump() + ", not an integer");
  }
  out = v.get<int64_t>();
  if (out < 0)
    return Status::corruption("data position: " + field + " is " + std::to_string(out) + ", below 0");
  return Status::ok();
}

protocol::Status decodeCursors(const nlohmann::json& j, DataPosition& p) {
  using protocol::Status;
  const auto& list = j.at("cursors");
  if (!list.is_array()) return Status::corruption("data position: cursors is not an array");
  if (list.size() != p.datasets.size()) {
    return Status::corruption("data position: " + std::to_string(list.size()) + " cursors for " +
                              std::to_string(p.datasets.size()) + " datasets");
  }
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = "cursors[" + std::to_string(i) + "]";
    const auto& c = list[i];
    if (!c.is_object()) return Status::corruption("data position: " + where + " is not an object");
    ShardCursor cursor;
    if (!c.contains("shard") || !c.at("shard").is_string() || c.at("shard").get<std::string>().empty()) {
      return Status::corruption("data position: " + where + ".shard is missing or not a non-empty string");
    }
    cursor.shard = c.at("shard").get<std::string>();
    for (const auto& [key, out] : {std::pair<const char*, int64_t*>{"shard_index", &cursor.shardIndex},
                                   {"shard_count", &cursor.shardCount},
                                   {"samples_read", &cursor.samplesRead},
                                   {"pass", &cursor.pass},
                                   {"worker", &cursor.worker}}) {
      if (Status s = cursorNumber(c, where, key, *out); !s) return s;
    }
    if (cursor.shardIndex >= cursor.shardCount) {
      return Status::corruption("data position: " + where + ".shard_index " +
                                std::to_string(cursor.shardIndex) + " is not below shard_count " +
                                std::to_string(cursor.shardCount));
    }
    p.cursors.push_back(std::move(cursor));
  }
  return Status::ok();
}
}  // namespace

std::string encodeDataPosition(const DataPosition& p) {
  nlohmann::ordered_json j;
  j["format"] = DataPosition::kFormatVersion;
  j["source"] = p.source;
  j["epoch"] = p.epoch;
  j["rank"] = p.rank;
  j["world"] = p.world;
  j["datasets"] = p.datasets;
  j["batches_consumed"] = p.batchesConsumed;
  if (!p.batchSizes.empty()) j["batch_sizes"] = p.batchSizes;
  j["rng_state"] = toHex(p.rngState);
  if (!p.cursors.empty()) {
    auto& list = j["cursors"] = nlohmann::ordered_json::array();
    for (const ShardCursor& c : p.cursors) {
      list.push_back({{"shard", c.shard},
                      {"shard_index", c.shardIndex},
                      {"shard_count", c.shardCount},
                      {"samples_read", c.samplesRead},
                      {"pass", c.pass},
                      {"worker", c.worker}});
    }
  }
  return j.dump();
}

protocol::StatusOr<DataPosition> decodeDataPosition(const std::string& text) {
  using protocol::Status;
  const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Status::corruption("data position: not a JSON object");
  try {
    const int format = j.at("format").get<int>();
    if (format > DataPosition::kFormatVersion) {
      return Status::unsupported("data position: format " + std::to_string(format) +
                                 " is newer than this build (" +
                                 std::to_string(DataPosition::kFormatVersion) + ")");
    }
    DataPosition p;
    p.source = j.at("source").get<std::string>();
    p.epoch = j.at("epoch").get<int64_t>();
    p.rank = j.at("rank").get<int64_t>();
    p.world = j.at("world").get<int64_t>();
    p.datasets = j.at("datasets").get<std::vector<std::string>>();
    p.batchesConsumed = j.at("batches_consumed").get<std::vector<int64_t>>();
    if (!fromHex(j.at("rng_state").get<std::string>(), p.rngState)) {
      return Status::corruption("data position: rng_state is not a hex string");
    }
    if (j.contains("batch_sizes")) p.batchSizes = j.at("batch_sizes").get<std::vector<int64_t>>();
    if (p.datasets.size() != p.batchesConsumed.size()) {
      return Status::corruption("data position: datasets and batches_consumed differ in length");
    }
    if (!p.batchSizes.empty() && p.batchSizes.size() != p.datasets.size()) {
      return Status::corruption("data position: datasets and batch_sizes differ in length");
    }
    if (j.contains("cursors")) {
      if (Status s = decodeCursors(j, p); !s) return s;
    }
    return p;
  } catch (const nlohmann::json::exception& e) {
    return Status::corruption(std::string("data position: ") + e.what());
  }
}

protocol::Status checkResumable(const DataPosition& mine, const DataPosition& p, int64_t stepsPerEpoch) {
  using protocol::Status;
  if (p.source != mine.source) {
    return Status::invalidArgument("data position: written by a '" + p.source + "' source, not " +
                                   mine.source);
  }
  if (p.rank != mine.rank || p.world != mine.world) {
    return Status::invalidArgument("data position: saved on rank " + std::to_string(p.rank) + " of " +
                                   std::to_string(p.world) + ", restoring on rank " +
                                   std::to_string(mine.rank) + " of " + std::to_string(mine.world) +
                                   ": the data stream would differ");
  }
  if (p.datasets.size() != mine.datasets.size() || p.batchesConsumed.size() != mine.datasets.size()) {
    return Status::invalidArgument("data position: " + std::to_string(p.datasets.size()) +
                                   " datasets saved, the config has " + std::to_string(mine.datasets.size()));
  }
  for (size_t i = 0; i < mine.datasets.size(); ++i) {
    if (p.datasets[i] != mine.datasets[i]) {
      return Status::invalidArgument("data position: dataset " + std::to_string(i) + " was '" +
                                     p.datasets[i] + "', the config has '" + mine.datasets[i] + "'");
    }
    if (p.batchesConsumed[i] < 0 || p.batchesConsumed[i] > stepsPerEpoch) {
      return Status::invalidArgument("data position: " + std::to_string(p.batchesConsumed[i]) +
                                     " batches of '" + p.datasets[i] + "' consumed, but an epoch has " +
                                     std::to_string(stepsPerEpoch));
    }
  }
  if (p.epoch < 0) return Status::invalidArgument("data position: negative epoch");
  return Status::ok();
}

}  // namespace fs::data
