// Shard lists as users write them: brace patterns as webdataset's
// braceexpand reads them ("/d/{00000..09999}.tar", "{a,b}", steps
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

// NOTE [braceexpand grammar]: patterns expand as webdataset's braceexpand
// (0.1.7; shard_webdataset_reader_oracle_test compares them): a brace group
// is a range when its text is exactly "a..b" or "a..b..s" with integers a,
// b (zero padding from an endpoint written with a leading 0, other than "0"
// and "-0"; the sign before s is ignored, s = 0 means 1) or with single
// letters (over A-Z then a-z); else a list when it has a comma outside
// nested braces; else it is literal text, its braces kept ("{a}", "{}",
// "{0..x}"; nested groups inside still expand). A backslash escapes the next
// character (it is neither a brace nor a comma) and is removed from the
// expansion. Unbalanced braces are errors. Unlike braceexpand: integers past
// 64 bits are errors, not expanded; a "}" before any "{" is an error (its
// depth count goes below 0 and a later "{" makes up for it, so it reads
// "a}b{c" as one literal); a backslash inside a group is removed once (it
// removes one per enclosing group: "{\\\\0}" gives "{0}", we "{\\0}").

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
