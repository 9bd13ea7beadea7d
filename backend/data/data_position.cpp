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
  j["rng_state"] = toHex(p.rngState);
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
    if (p.datasets.size() != p.batchesConsumed.size()) {
      return Status::corruption("data position: datasets and batches_consumed differ in length");
    }
    return p;
  } catch (const nlohmann::json::exception& e) {
    return Status::corruption(std::string("data position: ") + e.what());
  }
}

}  // namespace fs::data
