// Reading a JSON file into a value, with errors that name the file and where
// the syntax breaks. Internal to fs_tokenizer.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "backend/protocol/status.h"

namespace fs::data::detail {

// NOTE [Tokenizer file sizes]: every tokenizer file is read whole into memory;
// the largest real ones (multilingual tokenizer.json) are under 20 MiB, so a
// file over kMaxTokenizerFileBytes is refused before it is read, naming the file,
// its size and the limit. The same limit covers merges.txt, the JSON beside the
// files and a SentencePiece model.
inline constexpr std::uint64_t kMaxTokenizerFileBytes = std::uint64_t{64} << 20;

// OK, or Corruption "<path>: N bytes is over the limit of M bytes for a tokenizer file".
protocol::Status checkTokenizerFileSize(const std::string& path);
// The file's bytes, after checkTokenizerFileSize.
protocol::StatusOr<std::string> readTokenizerFile(const std::string& path);
protocol::StatusOr<nlohmann::json> readJsonFile(const std::string& path);

// A special token as special_tokens_map.json / tokenizer_config.json write it:
// "text" or {"content": "text", ...}. nullopt when neither.
std::optional<std::string> specialTokenText(const nlohmann::json& value);

}  // namespace fs::data::detail
