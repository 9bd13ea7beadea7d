// YAML load and save of RunConfig, driven by the schema.
//
// Loading starts from the defaults and applies what the document says, so a
// YAML file need only name what differs. It collects every problem (unknown
// keys with the closest known key, type errors with line numbers, a newer
// schema major version) instead of stopping at the first. Saving writes every
// field; load(save(c)) == c for every config.
//
// Thread-safety: free functions without shared state.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "backend/protocol/config/config_types.h"
#include "backend/protocol/problem.h"
#include "backend/protocol/status.h"

namespace fs::protocol {

struct ConfigLoad {
  RunConfig config;               // defaults + whatever parsed; only trustworthy without errors
  std::vector<Problem> problems;  // parse and type problems (not validation rules)
  bool ok() const { return !hasErrors(problems); }
};

// A run config is a few KB; a document over this is refused before it is parsed
// (a single problem naming the source, its size and the limit).
inline constexpr std::size_t kMaxConfigBytes = std::size_t{1} << 20;

// `source` names the document in messages (a file path, "<stdin>", ...).
ConfigLoad loadConfigYaml(const std::string& text, const std::string& source);
// Reads the file; an unreadable file, or one over kMaxConfigBytes (checked before
// it is read), is a single problem naming the path.
ConfigLoad loadConfigFile(const std::string& path);

struct DumpOptions {
  bool comments = false;  // help text, unit and allowed values as comments
};
std::string dumpConfigYaml(const RunConfig& config, const DumpOptions& options = {});

// Writes atomically (temp file + rename) so a crash never leaves half a config.
// `mode`: the new file's permissions (before umask), given when it is created
// (kConfigFileMode for a run directory's config.yaml).
Status saveConfigFile(const RunConfig& config, const std::string& path, const DumpOptions& options = {},
                      unsigned mode = 0644);

}  // namespace fs::protocol
