#include "backend/inspect/hash_check.h"

#include "backend/tensorfile/content_hash.h"

namespace fs::inspect {

namespace tf = fs::tensorfile;

std::string_view hashStateName(HashState state) {
  switch (state) {
    case HashState::kNotRecorded:
      return "not recorded";
    case HashState::kMatches:
      return "matches";
    case HashState::kDiffers:
      return "differs";
  }
  return "?";
}

StatusOr<HashState> checkManifestHash(const CheckpointIndex& index, std::size_t i) {
  if (i >= index.tensors().size()) return Status::invalidArgument("no tensor " + std::to_string(i));
  const TensorEntry& t = index.tensors()[i];
  if (t.manifestHash.empty()) return HashState::kNotRecorded;
  auto data = index.data(i);
  if (!data) return data.status();
  const tf::TensorView& v = data->view;
  std::uint64_t hash = 0;
  if (v.isContiguous()) {
    const std::size_t bytes = static_cast<std::size_t>(v.numel()) * tf::itemSize(v.dtype);
    hash = tf::xxh64(v.bytes.first(std::min(bytes, v.bytes.size())));
  } else {
    const auto packed = tf::toContiguous(v);
    hash = tf::xxh64(packed);
  }
  return tf::contentHashText(hash) == t.manifestHash ? HashState::kMatches : HashState::kDiffers;
}

StatusOr<HashReport> checkManifestHashes(const CheckpointIndex& index, const HashCheckOptions& options) {
  HashReport report;
  std::uint64_t total = 0, done = 0;
  for (const TensorEntry& t : index.tensors())
    if (!t.manifestHash.empty()) total += t.bytes;
  for (std::size_t i = 0; i < index.tensors().size(); ++i) {
    if (options.cancel && options.cancel->load(std::memory_order_relaxed)) {
      report.cancelled = true;  // the states so far stand; the rest were not looked at
      return report;
    }
    auto state = checkManifestHash(index, i);
    if (!state) return state.status();
    report.states.push_back(state.value());
    switch (state.value()) {
      case HashState::kNotRecorded:
        ++report.notRecorded;
        continue;
      case HashState::kMatches:
        ++report.matching;
        break;
      case HashState::kDiffers:
        ++report.differing;
        report.differ.push_back(index.tensors()[i].name);
        break;
    }
    done += index.tensors()[i].bytes;
    if (options.progress) options.progress(done, total);
  }
  return report;
}

}  // namespace fs::inspect
