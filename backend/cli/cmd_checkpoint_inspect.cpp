// checkpoint inspect: what a checkpoint holds, from its index only
// (backend/inspect): format, files, each section's tensors and bytes, the
// model by module path to a depth, every tensor on request, and the manifest
// hashes checked on request. Human output, or --json for scripts. Torch-free.
#include <algorithm>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "backend/cli/args.h"
#include "backend/cli/commands.h"
#include "backend/cli/progress_line.h"
#include "backend/fsdp_plan/plan_report.h"
#include "backend/inspect/checkpoint_index.h"
#include "backend/inspect/hash_check.h"
#include "backend/inspect/module_tree.h"

namespace fs::cli {

namespace {

namespace in = fs::inspect;
namespace tf = fs::tensorfile;
using nlohmann::json;

constexpr const char* kWho = "flamingo-train checkpoint inspect";

std::string shapeText(const std::vector<std::int64_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

std::string tensorsText(std::uint64_t n) {
  return std::to_string(n) + (n == 1 ? " tensor " : " tensors");
}

std::string bytesText(std::uint64_t bytes) {
  return fsdp_plan::formatBytes(static_cast<std::int64_t>(bytes));
}

json nodeJson(const in::ModuleNode& n) {
  return {{"tensors", n.tensors},
          {"tied", n.tied},
          {"elements", n.elements},
          {"bytes", n.bytes},
          {"trainable_bytes", n.trainableBytes},
          {"frozen_bytes", n.frozenBytes}};
}

json tensorJson(const in::CheckpointIndex& c, const in::TensorEntry& t) {
  json j = {{"name", t.name},
            {"section", std::string(in::sectionName(t.section))},
            {"dtype", std::string(tf::torchName(t.dtype))},
            {"shape", t.shape},
            {"bytes", t.bytes},
            {"file", c.files()[t.file]}};
  j["same_as"] = t.sameAs ? json(c.tensors()[*t.sameAs].name) : json(nullptr);
  j["trainable"] = t.trainable ? json(*t.trainable) : json(nullptr);
  j["hash"] = t.manifestHash.empty() ? json(nullptr) : json(t.manifestHash);
  return j;
}

// The module tree below `node` to `depth` levels, one line per module.
void printTree(std::ostream& os, const in::ModuleTree& tree, const in::ModuleNode& node, int depth,
               int indent) {
  for (std::size_t child : node.children) {
    const in::ModuleNode& n = tree.nodes[child];
    std::ostringstream line;
    line << std::string(static_cast<std::size_t>(indent) * 2, ' ') << n.name;
    os << "  " << std::left << std::setw(44) << line.str() << std::right << std::setw(12)
       << tensorsText(n.tensors) << " " << std::setw(11) << bytesText(n.bytes);
    if (n.trainableBytes > 0) os << "  trainable " << bytesText(n.trainableBytes);
    if (n.tied > 0) os << "  (" << n.tied << " tied)";
    os << "\n";
    if (depth > 1 && !n.tensor) printTree(os, tree, n, depth - 1, indent + 1);
  }
}

}  // namespace

const std::vector<OptionSpec> kCheckpointInspectOptions = {
    {"json", false, false, "", "Print one JSON object instead of text"},
    {"depth", true, false, "N", "Module levels to show (default 2; 0: none)"},
    {"tensors", false, false, "", "List every tensor (name, dtype, shape, bytes, trainable, tied)"},
    {"verify", false, false, "", "Check every tensor against our manifest's hash (reads all tensor data)"},
    {"help", false, false, "", "Show this help"}};

int runCheckpointInspect(const std::vector<std::string>& args, Io& io) {
  auto parsed = parseArgs(args, kCheckpointInspectOptions);
  const bool help = parsed && parsed->has("help");
  const auto depthOption = parsed ? countOption(*parsed, "depth", 2) : protocol::StatusOr<long>(2L);
  const bool badDepth = !depthOption;
  const int depth = badDepth ? 0 : static_cast<int>(std::min(depthOption.value(), 1000L));
  if (!parsed || help || badDepth || parsed->positionals.size() != 1) {
    auto& os = help ? io.out : io.err;
    if (!parsed) os << kWho << ": " << parsed.status().message() << "\n";
    if (badDepth) os << kWho << ": " << depthOption.status().message() << "\n";
    os << "usage: " << kWho
       << " <checkpoint> [--depth N] [--tensors] [--verify] [--json]\n\n"
          "Shows what a checkpoint holds without loading it: our full or sharded checkpoints,\n"
          "OpenFlamingo's checkpoint_<epoch>.pt, any torch.save zip file (pytorch_model.bin),\n"
          ".safetensors files and sharded weights through their *.index.json or model directory.\n\n"
       << formatOptions(kCheckpointInspectOptions);
    return help ? kExitOk : kExitUsage;
  }
  const std::string path = parsed->positionals[0];
  auto ckpt = in::CheckpointIndex::open(path);
  if (!ckpt) {
    io.err << kWho << ": " << ckpt.status().message() << "\n";
    return kExitFailure;
  }
  const in::CheckpointIndex& c = ckpt.value();
  std::optional<in::HashReport> hashes;
  if (parsed->has("verify")) {
    ProgressLine progress(io.err, io.errIsTerminal, "verify", ProgressLine::Unit::kBytes);
    in::HashCheckOptions options;
    options.progress = [&](std::uint64_t done, std::uint64_t total) {
      progress.setTotal(static_cast<int64_t>(total));
      progress.update(static_cast<int64_t>(done));
    };
    auto report = in::checkManifestHashes(c, options);
    progress.finish();
    if (!report) {
      io.err << kWho << ": " << report.status().message() << "\n";
      return kExitFailure;
    }
    hashes = std::move(report.value());
  }
  const in::Section sections[] = {in::Section::kModel, in::Section::kOptimizer, in::Section::kOther};
  const in::ModuleTree model = in::buildModuleTree(c, in::Section::kModel);

  if (parsed->has("json")) {
    json j = {
        {"path", path}, {"format", std::string(in::formatName(c.format()))}, {"file_bytes", c.fileBytes()}};
    j["files"] = c.files();
    json secs = json::object();
    for (auto s : sections)
      secs[std::string(in::sectionName(s))] = nodeJson(in::buildModuleTree(c, s).root());
    j["sections"] = std::move(secs);
    if (depth > 0) {
      json modules = json::array();
      std::vector<std::pair<std::size_t, int>> stack;
      for (auto it = model.root().children.rbegin(); it != model.root().children.rend(); ++it)
        stack.push_back({*it, 1});
      while (!stack.empty()) {
        auto [i, level] = stack.back();
        stack.pop_back();
        const in::ModuleNode& n = model.nodes[i];
        json m = nodeJson(n);
        m["path"] = n.path;
        modules.push_back(std::move(m));
        if (level < depth)
          for (auto it = n.children.rbegin(); it != n.children.rend(); ++it)
            stack.push_back({*it, level + 1});
      }
      j["modules"] = std::move(modules);
    }
    if (parsed->has("tensors")) {
      json list = json::array();
      for (const auto& t : c.tensors()) list.push_back(tensorJson(c, t));
      j["tensors"] = std::move(list);
    }
    if (hashes) {
      j["hashes"] = {{"matching", hashes->matching},
                     {"differing", hashes->differing},
                     {"not_recorded", hashes->notRecorded},
                     {"differ", hashes->differ}};
    }
    j["warnings"] = c.warnings();
    io.out << j.dump(1) << "\n";
    return hashes && hashes->differing > 0 ? kExitFailure : kExitOk;
  }

  io.out << path << ": " << in::formatName(c.format()) << ", " << c.files().size()
         << (c.files().size() == 1 ? " file, " : " files, ") << bytesText(c.fileBytes()) << "\n";
  for (const auto& w : c.warnings()) io.out << "warning: " << w << "\n";
  for (auto s : sections) {
    const in::ModuleNode r = in::buildModuleTree(c, s).root();
    if (r.tensors == 0 && r.tied == 0) continue;
    io.out << "  " << std::left << std::setw(10) << in::sectionName(s) << std::right << std::setw(12)
           << tensorsText(r.tensors) << " " << std::setw(11) << bytesText(r.bytes);
    if (r.tied > 0) io.out << "  (" << r.tied << " more tied to them)";
    if (r.trainableBytes > 0 || r.frozenBytes > 0)
      io.out << "  trainable " << bytesText(r.trainableBytes) << ", frozen " << bytesText(r.frozenBytes);
    io.out << "\n";
  }
  if (depth > 0 && !model.root().children.empty()) {
    io.out << "model by module:\n";
    printTree(io.out, model, model.root(), depth, 0);
  }
  if (parsed->has("tensors")) {
    io.out << "tensors:\n";
    for (const auto& t : c.tensors()) {
      io.out << "  " << in::sectionName(t.section) << "  " << t.name << "  " << tf::torchName(t.dtype) << " "
             << shapeText(t.shape) << "  " << bytesText(t.bytes);
      if (t.trainable) io.out << (*t.trainable ? "  trainable" : "  frozen");
      if (t.sameAs) io.out << "  = " << c.tensors()[*t.sameAs].name;
      io.out << "\n";
    }
  }
  if (hashes) {
    io.out << "manifest hashes: " << hashes->matching << " match, " << hashes->differing << " differ, "
           << hashes->notRecorded << " not recorded\n";
    for (const auto& name : hashes->differ) io.out << "  differs: " << name << " (damaged file?)\n";
  }
  return hashes && hashes->differing > 0 ? kExitFailure : kExitOk;
}

}  // namespace fs::cli
