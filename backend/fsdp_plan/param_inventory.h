// Every parameter of the Flamingo model, derived from the run config without
// building the model: names, shapes, owning modules, trainable flags and
// tied-parameter groups, exactly as backend/model names and freezes them.
//
// NOTE [Inventory contract]: `params` lists what the LibTorch model's
// named_parameters() lists, in the same order, with the same shapes, and
// `trainable` is requires_grad after Flamingo::freezeAsOpenFlamingo()
// (perceiver, every gated cross-attention block and - unless
// freeze_lm_embeddings - the input embedding). The model code is the truth:
// this file reads its shapes off the model sources, and
// tests/backend/fsdp_plan/param_inventory_test.cpp builds the real model for
// every LM family and fails on any drift. Shared tensors appear once (as
// named_parameters() lists them): a tied output head is not a parameter of
// its own but an alias in `tiedGroups`, under the name Hugging Face state
// dicts give it (`lang_encoder.lm_head.weight`), owned by a virtual module.
//
// Buffers: the model registers none (rotary tables, causal masks and ALiBi
// slopes are recomputed each forward), so there is nothing to shard or keep;
// `buffers` stays empty and the planner counts no buffer bytes.
//
// Thread-safety: plain values; buildParamInventory is a pure function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/protocol/config/config_types.h"
#include "backend/protocol/status.h"

namespace fs::fsdp_plan {

struct ModuleInfo {
  std::string path;  // "" = the Flamingo root; else e.g. "lang_encoder.model.decoder.layers.3.decoder_layer"
  std::string type;  // e.g. "VisionTransformer", "DecoderLayer", "Linear", "Container", "ModuleList"
  // Whether the model calls this module's forward as one piece: only such a
  // module can be an FSDP unit. Containers and module lists never are.
  bool callable = true;
  // Exists only as a state-dict name (the tied output head), not in the model.
  bool isVirtual = false;
  int64_t forwardOrder = 0;  // first use in forward (smaller = earlier); parents <= children
};

struct ParamInfo {
  std::string name;  // the model's named_parameters() name
  std::vector<int64_t> shape;
  int64_t numel = 0;
  std::string module;      // owning module path (the name without its last component)
  std::string moduleType;  // that module's type, e.g. "Linear", "GatedCrossAttentionBlock"
  std::string block;       // nearest enclosing block: vision tower, perceiver, gated block,
  std::string blockType;   //   decoder layer, embedding, output head, or the LM / root
  bool trainable = false;
  int tiedGroup = -1;        // index into ParamInventory::tiedGroups, -1 = not shared
  int64_t forwardOrder = 0;  // its module's forwardOrder
};

// One tensor known under several names: `param` is the name the model
// registers, `aliases` are the other names (with the module each belongs to).
struct TiedGroup {
  std::string param;
  std::vector<std::string> aliases;
  std::vector<std::string> aliasModules;
};

struct ParamInventory {
  std::vector<ModuleInfo> modules;  // pre-order, registration order
  std::vector<ParamInfo> params;    // named_parameters() order
  std::vector<TiedGroup> tiedGroups;
  std::vector<std::string> buffers;  // always empty: see NOTE [Inventory contract]
  std::string family;                // LM family

  int64_t numel() const;
  int64_t trainableNumel() const;
  // nullptr when absent.
  const ModuleInfo* module(const std::string& path) const;
  const ParamInfo* param(const std::string& name) const;
};

// From the model section of a run config (presets + overrides). An unknown
// LM family, or shapes the model would reject (width not divisible by
// heads, image size not a multiple of the patch), is InvalidArgument naming
// the field.
protocol::StatusOr<ParamInventory> buildParamInventory(const protocol::ModelConfig& model);

// Whether the model puts a gated cross-attention block before decoder layer i.
bool hasCrossAttentionAt(int64_t layer, int64_t every_n_layers);

}  // namespace fs::fsdp_plan
