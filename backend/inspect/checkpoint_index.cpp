#include "backend/inspect/checkpoint_index.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>
#include <variant>

#include "backend/protocol/wire/checkpoint_record.h"
#include "backend/protocol/wire/sharded_index.h"
#include "backend/tensorfile/state_dict.h"
#include "backend/tensorfile/torch_file.h"
#include "backend/tensorfile/weight_set.h"

// NOTE [Checkpoint formats]
// A torch.save file is told by its top-level keys: "flamingo_studio" is ours
// (backend/checkpoint/checkpoint_io.h), model_state_dict with
// optimizer_state_dict is OpenFlamingo's, anything else a plain torch.save file
// (a bare state dict such as pytorch_model.bin). Its tensors are sorted into
// sections: the model's state dict, the optimizer's, and the rest (our RNG
// state, say), each tensor once. Directories are ours when index.json names
// our sharded format (docs/run-directory.md, "Sharded checkpoints"); there a
// parameter is a member of a flat buffer cut into rank files, so its elements
// may lie in two files and are gathered into a copy when asked for. Anything
// else goes to tensorfile::WeightSet (safetensors, sharded index, Hugging Face
// model directory).

namespace fs::inspect {

namespace tf = fs::tensorfile;

namespace {

std::string shapeKey(const std::vector<std::int64_t>& v) {
  std::string out;
  for (auto x : v) out += std::to_string(x) + ",";
  return out;
}

// c10's dtype spelling ("Float"), as the sharded index and our manifest write it.
std::uint64_t sizeOf(const std::string& path) {
  std::error_code ec;
  const auto n = std::filesystem::file_size(path, ec);
  return ec ? 0 : static_cast<std::uint64_t>(n);
}

// Where an entry's elements are.
struct InTorchFile {
  std::size_t file = 0;
  std::shared_ptr<const tf::TensorRef> ref;
};
struct InWeightSet {};  // by name
struct InShards {
  std::string flatKey;
  std::string moment;  // "" for the parameter itself, else "exp_avg" / "exp_avg_sq"
  std::int64_t offset = 0;
  std::int64_t shardNumel = 0;
};
using Location = std::variant<InTorchFile, InWeightSet, InShards>;

}  // namespace

std::string_view formatName(CheckpointFormat format) {
  switch (format) {
    case CheckpointFormat::kFlamingoStudio:
      return "flamingo-studio checkpoint";
    case CheckpointFormat::kFlamingoStudioSharded:
      return "flamingo-studio sharded checkpoint";
    case CheckpointFormat::kOpenFlamingo:
      return "OpenFlamingo checkpoint";
    case CheckpointFormat::kTorchSave:
      return "torch.save file";
    case CheckpointFormat::kSafetensors:
      return "safetensors file";
    case CheckpointFormat::kShardedWeights:
      return "sharded weights (index)";
  }
  return "?";
}

std::string_view sectionName(Section section) {
  switch (section) {
    case Section::kModel:
      return "model";
    case Section::kOptimizer:
      return "optimizer";
    case Section::kOther:
      return "other";
  }
  return "?";
}

std::int64_t TensorEntry::numel() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

struct CheckpointIndex::Impl {
  std::string path;
  CheckpointFormat format = CheckpointFormat::kTorchSave;
  std::vector<std::string> files;
  std::uint64_t fileBytes = 0;
  std::vector<TensorEntry> tensors;
  std::vector<Location> where;
  std::vector<tf::TorchFile> torchFiles;  // torch.save file, or the rank files of a sharded one
  std::optional<tf::WeightSet> weights;
  std::map<std::string, std::size_t> weightFile;  // WeightSet file path -> files() index
  std::optional<protocol::CheckpointManifest> manifest;
  std::vector<std::string> warnings;
  DataGate gate;  // OpenOptions::gate
  // Lets the gate bring in `part` (a span inside `whole`, the mapping of `file`) before it is read.
  Status admit(const std::string& file, std::span<const std::byte> whole,
               std::span<const std::byte> part) const {
    if (!gate || part.empty()) return Status::ok();
    return gate(file, static_cast<std::uint64_t>(part.data() - whole.data()), part.size());
  }
  // Per section: name -> the first entry of that name (find()); built once the index is read.
  std::array<std::unordered_map<std::string, std::size_t>, 3> byName;

  void add(TensorEntry e, Location at) {
    tensors.push_back(std::move(e));
    where.push_back(std::move(at));
  }

  Status openTorch(const std::string& file);
  Status openSharded(const std::string& dir);
  Status openWeights(const std::string& path, bool directory);
  void applyManifest();
  StatusOr<TensorData> shardedData(const TensorEntry& e, const InShards& s) const;
};

Status CheckpointIndex::Impl::openTorch(const std::string& file) {
  auto opened = tf::openTorchFile(file);
  if (!opened) return opened.status();
  torchFiles.push_back(std::move(opened.value()));
  const tf::TorchFile& tfile = torchFiles.back();
  files = {file};
  fileBytes = sizeOf(file);
  const tf::PyValue& root = tfile.root();
  const tf::CheckpointSections sections = tf::checkpointSections(root);
  if (root.find(protocol::kResumeRecordKey)) {
    format = CheckpointFormat::kFlamingoStudio;
    if (const auto* ours = root.find(protocol::kResumeRecordKey); ours->isDict()) {
      if (const auto* m = ours->find("manifest"); m && m->isStr()) {
        auto decoded = protocol::decodeCheckpointManifest(m->text);
        if (decoded) {
          manifest = std::move(decoded.value());
        } else {
          warnings.push_back(path + ": " + decoded.status().message() +
                             "; trainability and hashes are unknown");
        }
      }
    }
  } else if (sections.modelKey == "model_state_dict" && sections.optimizer) {
    format = CheckpointFormat::kOpenFlamingo;
  }
  std::set<const tf::TensorRef*> seen;
  std::map<std::string, std::size_t> byView;  // identical views: tied weights
  auto addAll = [&](const tf::PyValue* value, Section section, const std::string& prefix) -> Status {
    if (!value) return Status::ok();
    tf::FlattenOptions options;
    options.prefix = prefix;
    auto named = tf::flattenTensors(*value, options);
    if (!named) return Status::invalidArgument(file + ": " + named.status().message());
    std::set<const tf::TensorRef*> mine;
    for (auto& n : named.value()) {
      // In an earlier section (the root's walk meets the model again); twice in this
      // one is one tensor under two names (tied weights: the pickle memo shares it).
      if (seen.contains(n.tensor.get())) continue;
      mine.insert(n.tensor.get());
      const tf::TensorRef& r = *n.tensor;
      TensorEntry e;
      e.name = std::move(n.name);
      e.section = section;
      e.dtype = r.dtype;
      e.shape = r.shape;
      e.bytes = r.isMeta ? 0 : r.byteSize();
      const std::string key = r.storageKey + "|" + std::to_string(r.storageOffset) + "|" + shapeKey(r.shape) +
                              "|" + shapeKey(r.strides) + "|" + std::string(tf::torchName(r.dtype));
      if (!r.isMeta && !r.storageKey.empty()) {
        auto [it, fresh] = byView.emplace(key, tensors.size());
        if (!fresh) e.sameAs = it->second;
      }
      add(std::move(e), InTorchFile{0, n.tensor});
    }
    seen.insert(mine.begin(), mine.end());
    return Status::ok();
  };
  if (Status s = addAll(sections.model, Section::kModel, ""); !s) return s;
  if (Status s = addAll(sections.optimizer, Section::kOptimizer, ""); !s) return s;
  if (sections.model != &root) {
    if (Status s = addAll(&root, Section::kOther, ""); !s) return s;
  }
  return Status::ok();
}

Status CheckpointIndex::Impl::openSharded(const std::string& dir) {
  format = CheckpointFormat::kFlamingoStudioSharded;
  const std::string indexPath = dir + "/index.json";
  std::ifstream in(indexPath, std::ios::binary);
  if (!in) return Status::notFound(indexPath + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  auto record = protocol::decodeShardedIndex(text.str());
  if (!record) return Status::corruption(indexPath + ": " + record.status().message());
  const protocol::ShardedIndexRecord& r = record.value();
  manifest = r.resume.manifest.value;
  files = {indexPath};
  fileBytes = sizeOf(indexPath);
  for (const std::string& name : r.files) {
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
      return Status::corruption(indexPath + ": files names '" + name + "', not a file in this directory");
    }
    const std::string rankPath = dir + "/" + name;
    auto opened = tf::openTorchFile(rankPath);
    if (!opened) return Status::corruption(rankPath + ": " + opened.status().message());
    torchFiles.push_back(std::move(opened.value()));
    files.push_back(rankPath);
    fileBytes += sizeOf(rankPath);
  }
  std::map<std::string, std::int64_t> paramIds;  // optimizer state keys, as the full checkpoint's
  for (const auto& g : r.optimizer.paramGroups) {
    for (std::size_t i = 0; i < g.paramNames.size() && i < g.params.size(); ++i)
      paramIds[g.paramNames[i]] = g.params[i];
  }
  for (const auto& unit : r.units) {
    for (const auto& flat : unit.flats) {
      const auto dtype = tf::dtypeFromC10Name(flat.dtype);
      if (!dtype)
        return Status::corruption(indexPath + ": flat " + flat.key + " has unknown dtype '" + flat.dtype +
                                  "'");
      if (flat.shardNumel <= 0 && flat.numel > 0) {
        return Status::corruption(indexPath + ": flat " + flat.key + " has shard_numel " +
                                  std::to_string(flat.shardNumel));
      }
      for (const auto& m : flat.members) {
        if (m.offset < 0 || m.numel < 0 || m.offset + m.numel > flat.numel) {
          return Status::corruption(indexPath + ": member " + m.name + " of " + flat.key +
                                    " lies outside its flat buffer");
        }
        auto entry = [&](std::string name, Section section, std::string moment) {
          TensorEntry e;
          e.name = std::move(name);
          e.section = section;
          e.dtype = *dtype;
          e.shape = m.shape;
          e.bytes = static_cast<std::uint64_t>(m.numel) * tf::itemSize(*dtype);
          e.file = 1 + static_cast<std::size_t>(flat.shardNumel > 0 ? m.offset / flat.shardNumel : 0);
          e.trainable = flat.trainable;
          add(std::move(e), InShards{flat.key, std::move(moment), m.offset, flat.shardNumel});
        };
        entry(m.name, Section::kModel, "");
        if (flat.optimizerState) {
          auto id = paramIds.find(m.name);
          const std::string key = id == paramIds.end() ? m.name : std::to_string(id->second);
          entry("state." + key + ".exp_avg", Section::kOptimizer, "exp_avg");
          entry("state." + key + ".exp_avg_sq", Section::kOptimizer, "exp_avg_sq");
        }
      }
    }
  }
  // Buffers are whole tensors in the first rank file.
  if (!torchFiles.empty()) {
    if (const auto* buffers = torchFiles.front().root().find("buffers"); buffers && buffers->isDict()) {
      for (const auto& [k, v] : buffers->entries) {
        if (!v->isTensor()) continue;
        TensorEntry e;
        e.name = tf::keyToString(*k);
        e.dtype = v->tensor->dtype;
        e.shape = v->tensor->shape;
        e.bytes = v->tensor->byteSize();
        e.file = 1;
        e.trainable = false;
        add(std::move(e), InTorchFile{0, v->tensor});
      }
    }
  }
  return Status::ok();
}

Status CheckpointIndex::Impl::openWeights(const std::string& p, bool directory) {
  auto ws = directory                                ? tf::WeightSet::openDirectory(p)
            : (p.size() > 5 && p.ends_with(".json")) ? tf::WeightSet::openIndex(p)
                                                     : tf::WeightSet::openFile(p);
  if (!ws) return ws.status();
  weights.emplace(std::move(ws.value()));
  const std::vector<std::string> shardFiles = weights->files();
  format = (directory || p.ends_with(".json")) ? CheckpointFormat::kShardedWeights
                                               : CheckpointFormat::kSafetensors;
  if (directory && shardFiles.size() == 1)
    format = shardFiles.front().ends_with(".safetensors") ? CheckpointFormat::kSafetensors
                                                          : CheckpointFormat::kTorchSave;
  if (p.ends_with(".json")) {
    files.push_back(p);
    fileBytes += sizeOf(p);
  }
  for (const auto& f : shardFiles) {
    weightFile[f] = files.size();
    files.push_back(f);
    fileBytes += sizeOf(f);
  }
  for (const std::string& name : weights->names()) {
    auto view = weights->get(name);
    if (!view) return view.status();
    TensorEntry e;
    e.name = name;
    e.dtype = view->dtype;
    e.shape = view->shape;
    e.bytes = static_cast<std::uint64_t>(view->numel()) * tf::itemSize(view->dtype);
    if (auto f = weights->fileOf(name); f) e.file = weightFile[f.value()];
    add(std::move(e), InWeightSet{});
  }
  return Status::ok();
}

// Trainability and content hashes from our manifest (protocol::CheckpointManifest).
void CheckpointIndex::Impl::applyManifest() {
  if (!manifest) return;
  std::map<std::string, bool> trainable;
  std::map<std::string, std::string> hashes;
  for (const auto& p : manifest->parameters) trainable[p.name] = p.trainable;
  if (manifest->tensors) {
    for (const auto& t : *manifest->tensors) hashes[t.name] = t.hash;
  }
  for (TensorEntry& e : tensors) {
    if (e.section != Section::kModel) continue;
    if (auto it = trainable.find(e.name); it != trainable.end()) {
      e.trainable = it->second;
    } else if (!trainable.empty() && !e.trainable) {
      e.trainable = false;  // not a parameter: a buffer
    }
    if (auto it = hashes.find(e.name); it != hashes.end()) e.manifestHash = it->second;
  }
}

StatusOr<TensorData> CheckpointIndex::Impl::shardedData(const TensorEntry& e, const InShards& s) const {
  const std::int64_t numel = e.numel();
  const std::size_t item = tf::itemSize(e.dtype);
  std::vector<std::span<const std::byte>> spans;
  for (std::size_t r = 0; r < torchFiles.size(); ++r) {
    const tf::PyValue& root = torchFiles[r].root();
    const tf::PyValue* v = nullptr;
    if (s.moment.empty()) {
      if (const auto* shards = root.find("shards")) v = shards->find(s.flatKey);
    } else if (const auto* opt = root.find("optimizer")) {
      if (const auto* state = opt->find(s.flatKey)) v = state->find(s.moment);
    }
    const std::string what =
        files[r + 1] + ": " + (s.moment.empty() ? "" : s.moment + " of ") + "shard of " + s.flatKey;
    if (!v || !v->isTensor()) return Status::corruption(what + " is missing");
    auto view = torchFiles[r].view(*v->tensor);
    if (!view) return Status::corruption(what + ": " + view.status().message());
    if (view->dtype != e.dtype || view->numel() != s.shardNumel || !view->isContiguous()) {
      return Status::corruption(what + " is " + std::string(tf::torchName(view->dtype)) + " with " +
                                std::to_string(view->numel()) + " elements, the index says " +
                                std::string(tf::torchName(e.dtype)) + " with " +
                                std::to_string(s.shardNumel));
    }
    spans.push_back(view->bytes.first(static_cast<std::size_t>(s.shardNumel) * item));
  }
  TensorData out;
  out.view.dtype = e.dtype;
  out.view.shape = e.shape;
  out.view.strides = tf::contiguousStrides(e.shape);
  if (numel == 0) return out;
  const std::int64_t first = s.offset / s.shardNumel, last = (s.offset + numel - 1) / s.shardNumel;
  if (last >= static_cast<std::int64_t>(spans.size())) {
    return Status::corruption(files.front() + ": " + e.name + " reaches shard " + std::to_string(last) +
                              " of " + std::to_string(spans.size()));
  }
  auto piece = [&](std::int64_t shard, std::int64_t at,
                   std::int64_t end) -> StatusOr<std::span<const std::byte>> {
    const auto part = spans[static_cast<std::size_t>(shard)].subspan(
        static_cast<std::size_t>(at - shard * s.shardNumel) * item,
        static_cast<std::size_t>(end - at) * item);
    const auto& file = torchFiles[static_cast<std::size_t>(shard)];
    if (Status st = admit(file.path(), file.fileBytes(), part); !st) return st;
    return part;
  };
  if (first == last) {  // in one rank file: a view into its mapping
    auto part = piece(first, s.offset, s.offset + numel);
    if (!part) return part.status();
    out.view.bytes = part.value();
    return out;
  }
  out.owned.resize(static_cast<std::size_t>(numel) * item);
  for (std::int64_t at = s.offset; at < s.offset + numel;) {
    const std::int64_t shard = at / s.shardNumel;
    const std::int64_t end = std::min(s.offset + numel, (shard + 1) * s.shardNumel);
    auto part = piece(shard, at, end);
    if (!part) return part.status();
    std::memcpy(out.owned.data() + (at - s.offset) * item, part->data(), part->size());
    at = end;
  }
  out.view.bytes = out.owned;
  return out;
}

CheckpointIndex::CheckpointIndex(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
  for (std::size_t i = 0; i < impl_->tensors.size(); ++i) {
    const TensorEntry& t = impl_->tensors[i];
    impl_->byName[static_cast<std::size_t>(t.section)].emplace(t.name, i);
  }
}
CheckpointIndex::CheckpointIndex(CheckpointIndex&&) noexcept = default;
CheckpointIndex& CheckpointIndex::operator=(CheckpointIndex&&) noexcept = default;
CheckpointIndex::~CheckpointIndex() = default;

StatusOr<CheckpointIndex> CheckpointIndex::open(const std::string& path, OpenOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->gate = std::move(options.gate);
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) return Status::notFound(path + ": no such file or directory");
  Status opened;
  if (std::filesystem::is_directory(status)) {
    const std::string index = path + "/index.json";
    std::ifstream in(index);
    std::string head(256, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(in.gcount()));
    opened = head.find(protocol::kShardedFormatName) != std::string::npos ? impl->openSharded(path)
                                                                          : impl->openWeights(path, true);
  } else {
    std::ifstream in(path, std::ios::binary);
    char magic[2] = {0, 0};
    in.read(magic, 2);
    opened = (magic[0] == 'P' && magic[1] == 'K') ? impl->openTorch(path) : impl->openWeights(path, false);
  }
  if (!opened) return opened;
  impl->applyManifest();
  return CheckpointIndex(std::move(impl));
}

const std::string& CheckpointIndex::path() const {
  return impl_->path;
}
CheckpointFormat CheckpointIndex::format() const {
  return impl_->format;
}
const std::vector<std::string>& CheckpointIndex::files() const {
  return impl_->files;
}
std::uint64_t CheckpointIndex::fileBytes() const {
  return impl_->fileBytes;
}
const std::vector<TensorEntry>& CheckpointIndex::tensors() const {
  return impl_->tensors;
}
const std::optional<protocol::CheckpointManifest>& CheckpointIndex::manifest() const {
  return impl_->manifest;
}
const std::vector<std::string>& CheckpointIndex::warnings() const {
  return impl_->warnings;
}

const tf::PyValue* CheckpointIndex::root() const {
  if (impl_->format == CheckpointFormat::kFlamingoStudioSharded || impl_->torchFiles.empty()) return nullptr;
  return &impl_->torchFiles.front().root();
}

std::optional<std::size_t> CheckpointIndex::find(std::string_view name, Section section) const {
  const auto& names = impl_->byName[static_cast<std::size_t>(section)];
  const auto it = names.find(std::string(name));
  if (it == names.end()) return std::nullopt;
  return it->second;
}

StatusOr<TensorData> CheckpointIndex::data(std::size_t i) const {
  if (i >= impl_->tensors.size()) return Status::invalidArgument("no tensor " + std::to_string(i));
  const TensorEntry& e = impl_->tensors[i];
  const Location& at = impl_->where[i];
  if (const auto* t = std::get_if<InTorchFile>(&at)) {
    const tf::TorchFile& file = impl_->torchFiles[t->file];
    auto view = file.view(*t->ref);
    if (!view) return Status::corruption(file.path() + ": " + e.name + ": " + view.status().message());
    if (Status st = impl_->admit(file.path(), file.fileBytes(), view->bytes); !st) return st;
    return TensorData{view.value(), {}};
  }
  if (std::holds_alternative<InWeightSet>(at)) {
    auto view = impl_->weights->get(e.name);
    if (!view) return view.status();
    if (impl_->gate) {
      auto whole = impl_->weights->fileBytesOf(e.name);
      auto file = impl_->weights->fileOf(e.name);
      if (!whole || !file) return whole ? file.status() : whole.status();
      if (Status st = impl_->admit(file.value(), whole.value(), view->bytes); !st) return st;
    }
    return TensorData{view.value(), {}};
  }
  return impl_->shardedData(e, std::get<InShards>(at));
}

}  // namespace fs::inspect
