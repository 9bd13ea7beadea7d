// Reading a JSON file into a value, with errors that name the file and where
// the syntax breaks. Internal to fs_tokenizer.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "backend/protocol/status.h"

namespace fs::data::detail {

protocol::StatusOr<nlohmann::json> readJsonFile(const std::string& path);

// A special token as special_tokens_map.json / tokenizer_config.json write it:
// "text" or {"content": "text", ...}. nullopt when neither.
std::optional<std::string> specialTokenText(const nlohmann::json& value);

}  // namespace fs::data::detail
