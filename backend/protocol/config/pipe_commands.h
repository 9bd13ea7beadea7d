// The shell commands a run config would start: every "pipe:COMMAND" shard
// source of data.datasets[].shards and .val_shards, found after the shard
// spec syntax is applied ("::" lists, brace patterns; shard_pattern.h), so a
// pipe inside a list ("a.tar::pipe:x") or an alternative ("{a.tar,pipe:x}")
// is found too.
//
// NOTE [Pipe approval]: a pipe: command runs with /bin/sh -c on every rank
// (backend/data/shards/shard_stream.cpp), so a config from someone else can
// run anything as this user. The CLI refuses such a config without
// --allow-pipe (backend/cli/pipe_gate.h) and the GUI asks before a launch
// (app/config/pipe_approval.h). The unit shown and approved is a *source*:
// one "::" part of a spec, exactly as written. One source may expand to many
// commands (OpenFlamingo's "pipe:aws s3 cp s3://b/{00000..41455}.tar -" is
// 41456), so approving each expanded command would be neither readable nor
// storable; the written source determines every command it expands to, and
// any change to it, however small, is a new source that asks again. The
// expanded commands are listed too (up to kMaxListedCommands per source)
// because brace expansion rewrites text: "pipe:echo ${HOME}" runs
// "echo $HOME".
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/protocol/config/config_types.h"

namespace fs::protocol {

inline constexpr size_t kMaxListedCommands = 100;

struct PipeSource {
  std::string field;          // "data.datasets[1].val_shards"
  std::string source;         // the "::" part as written; what approval is keyed on
  uint64_t commandCount = 0;  // pipe commands it expands to (a spec that does not parse: 0)
  // The first kMaxListedCommands of them, each the text after "pipe:" as /bin/sh -c gets it,
  // found among the part's first 10000 shards; empty when the part does not parse (validation
  // reports it; it is listed all the same) or names no pipe among those.
  std::vector<std::string> commands;
  bool operator==(const PipeSource&) const = default;
};

// Every pipe source of every dataset, in dataset order (shards before
// val_shards), whatever data.source says (a --set can switch it). A part
// that does not parse is listed when its text contains "pipe:" at all.
std::vector<PipeSource> pipeSources(const RunConfig& config);

// The pipe sources of one shard spec (its "::" parts that name a pipe, as
// written), in order; "" names none.
std::vector<std::string> pipeSourcesOfSpec(const std::string& spec);

// Whether pipeSources(config) is non-empty, without listing commands (cheap
// enough for every edit).
bool hasPipeSources(const RunConfig& config);

// The distinct source texts of pipeSources(config), in first-seen order.
std::vector<std::string> pipeSourceTexts(const RunConfig& config);

// For people: the field, the source in full, and its commands (with "and N
// more" past the listed ones), one source per block. Used by the CLI refusal.
std::string describePipeSources(const std::vector<PipeSource>& sources);

// The command line's refusal: "<program>: the config (<configPath> with any --set) runs shell commands
// ...", the sources as describePipeSources, and how to allow them (--allow-pipe). One text for
// flamingo-train and flamingo-studio.
std::string pipeRefusal(const std::string& program, const std::string& configPath,
                        const std::vector<PipeSource>& sources);

}  // namespace fs::protocol
