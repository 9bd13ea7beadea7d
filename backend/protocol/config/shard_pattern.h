// Shard lists as users write them: brace patterns in the manner of
// webdataset's braceexpand ("/d/{00000..09999}.tar", "{a,b}", steps
// "{0..100..10}", zero padding kept), several patterns joined with "::",
// and "pipe:<command>" sources (the pattern is expanded inside the command).
//
// Counting never materialises the list, so a 10^7-shard pattern validates
// instantly. Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/protocol/status.h"

namespace fs::protocol {

// Number of shards the spec names. Errors name the pattern and the position.
StatusOr<uint64_t> countShards(const std::string& spec);

// The expanded list, in order. REQUIRES: the count is at most `limit`
// (an error says so otherwise).
StatusOr<std::vector<std::string>> expandShards(const std::string& spec, uint64_t limit = 10'000'000);

// The first `count` entries of the expanded list (all when fewer), without
// materialising the rest. Errors as countShards.
StatusOr<std::vector<std::string>> firstShards(const std::string& spec, uint64_t count);

// The spec's "::" parts as written, unexpanded ("a::b" -> {"a", "b"}).
std::vector<std::string> shardSpecParts(const std::string& spec);

// How many of the shards one part names are "pipe:" sources after brace
// expansion: "pipe:cat /{0..9}.tar" names 10, "{a.tar,pipe:x}" names 1,
// "pi{pe,g}:x" names 1. Never materialises the list. Errors as countShards.
StatusOr<uint64_t> countPipeShards(const std::string& part);

}  // namespace fs::protocol
