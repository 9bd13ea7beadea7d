#include "backend/engine/checkpoint_sharded_index.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

namespace fs::engine {

using nlohmann::json;
using protocol::Status;

namespace {

std::string hex(const std::vector<uint8_t>& bytes) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

std::vector<uint8_t> unhex(const std::string& text) {
  if (text.size() % 2 != 0) throw std::invalid_argument("odd number of hex digits");
  auto nibble = [](char c) -> uint8_t {
    if (c >= '0' && c <= '9') return static_cast<uint8_t>(c - '0');
    if (c >= 'a' && c <= 'f') return static_cast<uint8_t>(c - 'a' + 10);
    throw std::invalid_argument(std::string("not a hex digit: '") + c + "'");
  };
  std::vector<uint8_t> out(text.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(nibble(text[2 * i]) << 4 | nibble(text[2 * i + 1]));
  return out;
}

json groupJson(const train::AdamWGroupStateDict& g) {
  json j = {{"lr", g.lr},
            {"betas", {g.beta1, g.beta2}},
            {"eps", g.eps},
            {"weight_decay", g.weightDecay},
            {"amsgrad", g.amsgrad},
            {"maximize", g.maximize},
            {"capturable", g.capturable},
            {"params", g.params},
            {"param_names", g.paramNames}};
  if (g.initialLr) j["initial_lr"] = *g.initialLr;
  return j;
}

train::AdamWGroupStateDict groupFrom(const json& j) {
  train::AdamWGroupStateDict g;
  g.lr = j.at("lr").get<double>();
  g.beta1 = j.at("betas").at(0).get<double>();
  g.beta2 = j.at("betas").at(1).get<double>();
  g.eps = j.at("eps").get<double>();
  g.weightDecay = j.at("weight_decay").get<double>();
  g.amsgrad = j.at("amsgrad").get<bool>();
  g.maximize = j.at("maximize").get<bool>();
  g.capturable = j.at("capturable").get<bool>();
  if (j.contains("initial_lr")) g.initialLr = j.at("initial_lr").get<double>();
  g.params = j.at("params").get<std::vector<int64_t>>();
  g.paramNames = j.at("param_names").get<std::vector<std::string>>();
  return g;
}

json resumeJson(const ResumeState& r) {
  json cuda = json::array();
  for (const auto& c : r.rng.torchCuda) cuda.push_back(hex(c));
  return {{"kind", r.kind},
          {"step", r.step},
          {"iteration", r.iteration},
          {"epoch", r.epoch},
          {"data_position", data::encodeDataPosition(r.data)},
          {"rng_torch_cpu", hex(r.rng.torchCpu)},
          {"rng_torch_cuda", cuda},
          {"rng_own", std::vector<uint64_t>(r.rng.own.begin(), r.rng.own.end())},
          {"manifest", r.manifest}};
}

// Throws json / invalid_argument exceptions; the caller names the file.
ResumeState resumeFrom(const json& j) {
  ResumeState r;
  r.kind = j.at("kind").get<std::string>();
  r.step = j.at("step").get<int64_t>();
  r.iteration = j.at("iteration").get<int64_t>();
  r.epoch = j.at("epoch").get<int64_t>();
  auto position = data::decodeDataPosition(j.at("data_position").get<std::string>());
  if (!position) throw std::invalid_argument("resume.data_position: " + position.status().message());
  r.data = position.value();
  r.rng.torchCpu = unhex(j.at("rng_torch_cpu").get<std::string>());
  for (const auto& c : j.at("rng_torch_cuda")) r.rng.torchCuda.push_back(unhex(c.get<std::string>()));
  const auto own = j.at("rng_own").get<std::vector<uint64_t>>();
  if (own.size() != r.rng.own.size()) throw std::invalid_argument("resume.rng_own has the wrong length");
  std::copy(own.begin(), own.end(), r.rng.own.begin());
  r.manifest = j.at("manifest").get<std::string>();
  return r;
}

}  // namespace

std::string shardedRankFileName(int64_t shard) { return "rank-" + std::to_string(shard) + ".pt"; }

std::string encodeShardedIndex(const ShardedIndex& x) {
  json units = json::array();
  for (const auto& u : x.units) {
    json flats = json::array();
    for (const auto& f : u.flats) {
      json members = json::array();
      for (const auto& m : f.members) {
        members.push_back({{"name", m.name}, {"shape", m.shape}, {"offset", m.offset}, {"numel", m.numel}});
      }
      flats.push_back({{"key", f.key},
                       {"trainable", f.trainable},
                       {"dtype", f.dtype},
                       {"numel", f.numel},
                       {"padding", f.padding},
                       {"shard_numel", f.shardNumel},
                       {"optimizer_state", f.optimizerState},
                       {"members", std::move(members)}});
    }
    units.push_back({{"path", u.path}, {"flats", std::move(flats)}});
  }
  json groups = json::array();
  for (const auto& g : x.paramGroups) groups.push_back(groupJson(g));
  const auto& s = x.scheduler;
  json j = {{"format", kShardedFormatName},
            {"version", x.version},
            {"world_size", x.worldSize},
            {"strategy", x.strategy},
            {"shard_group_size", x.shardGroupSize},
            {"files", x.files},
            {"units", std::move(units)},
            {"parameter_order", x.parameterOrder},
            {"buffers", x.buffers},
            {"optimizer", {{"param_groups", std::move(groups)}}},
            {"lr_scheduler",
             {{"base_lrs", s.baseLrs},
              {"last_epoch", s.lastEpoch},
              {"_step_count", s.stepCount},
              {"verbose", s.verbose},
              {"_get_lr_called_within_step", s.getLrCalledWithinStep},
              {"_last_lr", s.lastLr}}},
            {"epoch", x.epoch},
            {"resume", resumeJson(x.resume)}};
  return j.dump(1) + "\n";
}

protocol::StatusOr<ShardedIndex> decodeShardedIndex(const std::string& text, const std::filesystem::path& where) {
  const auto bad = [&](const std::string& what) { return Status::corruption(where.string() + ": " + what); };
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return bad("not valid JSON (torn or damaged index)");
  if (j.value("format", "") != kShardedFormatName) {
    return bad("format is not '" + std::string(kShardedFormatName) + "'");
  }
  ShardedIndex x;
  try {
    x.version = j.at("version").get<int64_t>();
    if (x.version != kShardedIndexVersion) {
      return Status::unsupported(where.string() + ": index version " + std::to_string(x.version) +
                                 " is unknown (this engine reads version " + std::to_string(kShardedIndexVersion) +
                                 ")");
    }
    x.worldSize = j.at("world_size").get<int64_t>();
    x.strategy = j.at("strategy").get<std::string>();
    x.shardGroupSize = j.at("shard_group_size").get<int64_t>();
    x.files = j.at("files").get<std::vector<std::string>>();
    for (const auto& ju : j.at("units")) {
      ShardedUnit u;
      u.path = ju.at("path").get<std::string>();
      for (const auto& jf : ju.at("flats")) {
        ShardedFlat f;
        f.key = jf.at("key").get<std::string>();
        f.trainable = jf.at("trainable").get<bool>();
        f.dtype = jf.at("dtype").get<std::string>();
        f.numel = jf.at("numel").get<int64_t>();
        f.padding = jf.at("padding").get<int64_t>();
        f.shardNumel = jf.at("shard_numel").get<int64_t>();
        f.optimizerState = jf.at("optimizer_state").get<bool>();
        for (const auto& jm : jf.at("members")) {
          f.members.push_back({jm.at("name").get<std::string>(), jm.at("shape").get<std::vector<int64_t>>(),
                               jm.at("offset").get<int64_t>(), jm.at("numel").get<int64_t>()});
        }
        u.flats.push_back(std::move(f));
      }
      x.units.push_back(std::move(u));
    }
    x.parameterOrder = j.at("parameter_order").get<std::vector<std::string>>();
    x.buffers = j.at("buffers").get<std::vector<std::string>>();
    for (const auto& g : j.at("optimizer").at("param_groups")) x.paramGroups.push_back(groupFrom(g));
    const json& s = j.at("lr_scheduler");
    x.scheduler.baseLrs = s.at("base_lrs").get<std::vector<double>>();
    x.scheduler.lastEpoch = s.at("last_epoch").get<int64_t>();
    x.scheduler.stepCount = s.at("_step_count").get<int64_t>();
    x.scheduler.verbose = s.at("verbose").get<bool>();
    x.scheduler.getLrCalledWithinStep = s.at("_get_lr_called_within_step").get<bool>();
    x.scheduler.lastLr = s.at("_last_lr").get<std::vector<double>>();
    x.epoch = j.at("epoch").get<int64_t>();
    x.resume = resumeFrom(j.at("resume"));
  } catch (const std::exception& e) {
    return bad(std::string("malformed index: ") + e.what());
  }
  // The layout must add up, so a reader can trust offsets and sizes.
  if (x.shardGroupSize < 1 || static_cast<int64_t>(x.files.size()) != x.shardGroupSize) {
    return bad(std::to_string(x.files.size()) + " rank files listed for a shard group of " +
               std::to_string(x.shardGroupSize));
  }
  for (const auto& u : x.units) {
    for (const auto& f : u.flats) {
      if (f.shardNumel * x.shardGroupSize != f.numel + f.padding || f.padding < 0) {
        return bad("flat parameter " + f.key + ": " + std::to_string(f.numel) + " elements + " +
                   std::to_string(f.padding) + " padding is not " + std::to_string(x.shardGroupSize) +
                   " shards of " + std::to_string(f.shardNumel));
      }
      for (const auto& m : f.members) {
        int64_t n = 1;
        for (int64_t d : m.shape) n *= d;
        if (n != m.numel || m.offset < 0 || m.offset + m.numel > f.numel) {
          return bad("member " + m.name + " of " + f.key + " lies outside its flat parameter or disagrees with its shape");
        }
      }
    }
  }
  return x;
}

protocol::StatusOr<ShardedIndex> readShardedIndex(const std::filesystem::path& dir) {
  const auto path = dir / kShardedIndexFile;
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::notFound(path.string() + ": missing: an incomplete sharded checkpoint");
  std::stringstream ss;
  ss << in.rdbuf();
  return decodeShardedIndex(ss.str(), path);
}

protocol::StatusOr<c10::ScalarType> dtypeFromName(const std::string& name) {
  for (auto t : {c10::ScalarType::Float, c10::ScalarType::BFloat16, c10::ScalarType::Half, c10::ScalarType::Double,
                 c10::ScalarType::Long, c10::ScalarType::Int, c10::ScalarType::Short, c10::ScalarType::Char,
                 c10::ScalarType::Byte, c10::ScalarType::Bool}) {
    if (name == c10::toString(t)) return t;
  }
  return Status::unsupported("dtype '" + name + "' is not one a parameter can have");
}

}  // namespace fs::engine
