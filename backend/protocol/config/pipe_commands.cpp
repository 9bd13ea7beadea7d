#include "backend/protocol/config/pipe_commands.h"

#include <algorithm>

#include "backend/protocol/config/shard_pattern.h"

namespace fs::protocol {
namespace {

constexpr std::string_view kPipeScheme = "pipe:";
// The listing looks at this many of a part's first shards (a part may name
// millions); the pipe count is exact regardless (countPipeShards).
constexpr uint64_t kScanLimit = 10'000;

void addSources(const std::string& field, const std::string& spec, std::vector<PipeSource>* out) {
  if (spec.empty()) return;
  for (const auto& part : shardSpecParts(spec)) {
    auto pipes = countPipeShards(part);
    if (!pipes) {
      if (part.find(kPipeScheme) != std::string::npos) out->push_back({field, part, 0, {}});
      continue;
    }
    if (pipes.value() == 0) continue;
    PipeSource s{field, part, pipes.value(), {}};
    if (auto list = firstShards(part, kScanLimit)) {
      for (const auto& url : list.value()) {
        if (s.commands.size() == kMaxListedCommands) break;
        if (url.starts_with(kPipeScheme)) s.commands.push_back(url.substr(kPipeScheme.size()));
      }
    }
    out->push_back(std::move(s));
  }
}

}  // namespace

std::vector<std::string> pipeSourcesOfSpec(const std::string& spec) {
  std::vector<PipeSource> sources;
  addSources("", spec, &sources);
  std::vector<std::string> out;
  for (auto& s : sources) out.push_back(std::move(s.source));
  return out;
}

std::vector<PipeSource> pipeSources(const RunConfig& config) {
  std::vector<PipeSource> out;
  for (size_t i = 0; i < config.data.datasets.size(); ++i) {
    const auto& d = config.data.datasets[i];
    const std::string base = "data.datasets[" + std::to_string(i) + "].";
    addSources(base + "shards", d.shards, &out);
    addSources(base + "val_shards", d.val_shards, &out);
  }
  return out;
}

bool hasPipeSources(const RunConfig& config) {
  auto any = [](const std::string& spec) {
    if (spec.empty()) return false;
    for (const auto& part : shardSpecParts(spec)) {
      auto pipes = countPipeShards(part);
      if (pipes ? pipes.value() > 0 : part.find(kPipeScheme) != std::string::npos) return true;
    }
    return false;
  };
  for (const auto& d : config.data.datasets) {
    if (any(d.shards) || any(d.val_shards)) return true;
  }
  return false;
}

std::vector<std::string> pipeSourceTexts(const RunConfig& config) {
  std::vector<std::string> out;
  for (auto& s : pipeSources(config)) {
    if (std::find(out.begin(), out.end(), s.source) == out.end()) out.push_back(std::move(s.source));
  }
  return out;
}

std::string describePipeSources(const std::vector<PipeSource>& sources) {
  std::string out;
  for (const auto& s : sources) {
    out += "  " + s.field + ": " + s.source + "\n";
    if (s.commandCount == 0) {
      out += "    (does not parse as a shard list; validation says why)\n";
      continue;
    }
    if (s.commandCount == 1 && s.commands.size() == 1 && "pipe:" + s.commands[0] == s.source)
      continue;  // the source is the command
    out += "    runs " + std::to_string(s.commandCount) + (s.commandCount == 1 ? " command" : " commands") +
           " with /bin/sh -c:\n";
    for (const auto& c : s.commands) out += "      " + c + "\n";
    if (s.commands.empty()) {
      out += "      (past the first shards it names: the source above names them all)\n";
    } else if (s.commandCount > s.commands.size()) {
      out += "      ... and " + std::to_string(s.commandCount - s.commands.size()) + " more\n";
    }
  }
  return out;
}

std::string pipeRefusal(const std::string& program, const std::string& configPath,
                        const std::vector<PipeSource>& sources) {
  // The sources may come from the file or from --set: describePipeSources names each one's field.
  return program + ": the config (" + configPath +
         " with any --set) runs shell commands to read its shards (pipe:), refused without --allow-pipe:\n" +
         describePipeSources(sources) + "Read them; if you trust every one, run again with --allow-pipe.\n";
}

}  // namespace fs::protocol
