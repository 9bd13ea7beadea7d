// A Hugging Face `config.json` read as the shape (LmConfig) and the family
// knobs (LmArchitecture) of a language model this engine builds.
//
// model_type opt, gpt_neox, llama, mpt, and mosaic_gpt (MPT-1B's remote code)
// are read; transformers 4 names (rope_theta, rope_scaling, rotary_pct,
// rotary_emb_base) and transformers 5 names (rope_parameters) both. A field
// asking for something backend/model does not compute (grouped-query
// attention, rope scaling, another activation, biases where the family has
// none, QKV clipping, ...) is refused: the Status names the file, the field and
// its value. The list, per family, is in backend/model/README.md.
//
//   auto hf = readHfLmConfig("/models/opt-125m");   // /models/opt-125m/config.json
//   if (!hf) return hf.status();                    // "/models/opt-125m/config.json: ..."
//
// Thread-safety: free functions over values; readHfLmConfig reads one file.
#pragma once

#include <map>
#include <string>

#include "backend/protocol/config/config_types.h"
#include "backend/protocol/config/lm_architecture.h"
#include "backend/protocol/status.h"

namespace fs::protocol {

struct HfLmConfig {
  std::string file;        // the config.json read
  std::string model_type;  // as written (mosaic_gpt stays mosaic_gpt; shape.family is mpt)
  LmConfig shape;          // family and dimensions; path and tokenizer_path empty
  LmArchitecture arch;
  // LmConfig field -> the config.json key it came from ("width" -> "hidden_size").
  std::map<std::string, std::string> keys;
};

// config.json text -> HfLmConfig. `file` names the source in every message.
StatusOr<HfLmConfig> parseHfLmConfig(const std::string& jsonText, const std::string& file);

// <dir>/config.json. NotFound when there is none, IOError when unreadable.
StatusOr<HfLmConfig> readHfLmConfig(const std::string& dir);

// True when `path` is a directory holding a config.json.
bool hasHfConfigJson(const std::string& path);

}  // namespace fs::protocol
