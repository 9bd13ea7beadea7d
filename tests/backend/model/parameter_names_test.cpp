// The full parameter-name list of the tiny model for each LM family equals
// OpenFlamingo's state-dict names, in named_parameters() order. Written out
// from the reference classes: open_clip's VisionTransformer (own parameters
// first), OpenFlamingo's PerceiverResampler / GatedCrossAttentionBlock /
// FlamingoLayer, and the Hugging Face (transformers 4.28) / MosaicML classes.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "tiny_model.h"

namespace fs::model {
namespace {

using Names = std::vector<std::string>;

void append(Names& out, const std::string& prefix, const Names& names) {
  for (const auto& n : names) out.push_back(prefix + n);
}

// Tiny preset: ViT with 2 blocks, perceiver depth 1, 2 LM layers, a gated block before each.
Names visionAndPerceiver() {
  Names n = {
      "vision_encoder.class_embedding", "vision_encoder.positional_embedding", "vision_encoder.proj",
      "vision_encoder.conv1.weight",    "vision_encoder.ln_pre.weight",        "vision_encoder.ln_pre.bias",
  };
  for (const std::string i : {"0", "1"}) {
    append(n, "vision_encoder.transformer.resblocks." + i + ".",
           {"ln_1.weight", "ln_1.bias", "attn.in_proj_weight", "attn.in_proj_bias", "attn.out_proj.weight",
            "attn.out_proj.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias",
            "mlp.c_proj.weight", "mlp.c_proj.bias"});
  }
  append(n, "", {"vision_encoder.ln_post.weight", "vision_encoder.ln_post.bias", "perceiver.latents"});
  append(n, "perceiver.layers.0.",
         {"0.norm_media.weight", "0.norm_media.bias", "0.norm_latents.weight", "0.norm_latents.bias",
          "0.to_q.weight", "0.to_kv.weight", "0.to_out.weight", "1.0.weight", "1.0.bias", "1.1.weight",
          "1.3.weight"});
  append(n, "", {"perceiver.norm.weight", "perceiver.norm.bias"});
  return n;
}

const Names kGatedBlock = {
    "gated_cross_attn_layer.attn_gate",          "gated_cross_attn_layer.ff_gate",
    "gated_cross_attn_layer.attn.norm.weight",   "gated_cross_attn_layer.attn.norm.bias",
    "gated_cross_attn_layer.attn.to_q.weight",   "gated_cross_attn_layer.attn.to_kv.weight",
    "gated_cross_attn_layer.attn.to_out.weight", "gated_cross_attn_layer.ff.0.weight",
    "gated_cross_attn_layer.ff.0.bias",          "gated_cross_attn_layer.ff.1.weight",
    "gated_cross_attn_layer.ff.3.weight"};

// before / each decoder layer (prefixed with its gated block) / after.
Names languageModel(const Names& before, const std::string& layers, const Names& layer, const Names& after) {
  Names n;
  append(n, "lang_encoder.", before);
  for (const std::string i : {"0", "1"}) {
    append(n, "lang_encoder." + layers + "." + i + ".", kGatedBlock);
    append(n, "lang_encoder." + layers + "." + i + ".decoder_layer.", layer);
  }
  append(n, "lang_encoder.", after);
  return n;
}

Names expected(const std::string& variant) {
  Names lm;
  if (variant == "opt") {
    lm = languageModel({"model.decoder.embed_tokens.weight", "model.decoder.embed_positions.weight",
                        "model.decoder.final_layer_norm.weight", "model.decoder.final_layer_norm.bias"},
                       "model.decoder.layers",
                       {"self_attn.k_proj.weight", "self_attn.k_proj.bias", "self_attn.v_proj.weight",
                        "self_attn.v_proj.bias", "self_attn.q_proj.weight", "self_attn.q_proj.bias",
                        "self_attn.out_proj.weight", "self_attn.out_proj.bias", "self_attn_layer_norm.weight",
                        "self_attn_layer_norm.bias", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias",
                        "final_layer_norm.weight", "final_layer_norm.bias"},
                       {});  // lm_head.weight is embed_tokens.weight (tied): listed once
  } else if (variant == "mpt") {
    lm = languageModel({"transformer.wte.weight"}, "transformer.blocks",
                       {"norm_1.weight", "attn.Wqkv.weight", "attn.out_proj.weight", "norm_2.weight",
                        "ffn.up_proj.weight", "ffn.down_proj.weight"},
                       {"transformer.norm_f.weight"});
  } else if (variant == "mpt-1b") {
    lm = languageModel({"transformer.wte.weight"}, "transformer.blocks",
                       {"ln_1.weight", "attn.Wqkv.weight", "attn.q_ln.weight", "attn.k_ln.weight",
                        "attn.out_proj.weight", "ln_2.weight", "mlp.mlp_up.weight", "mlp.mlp_down.weight"},
                       {"transformer.ln_f.weight"});
  } else if (variant == "gpt_neox" || variant == "pythia") {
    lm = languageModel(
        {"gpt_neox.embed_in.weight"}, "gpt_neox.layers",
        {"input_layernorm.weight", "input_layernorm.bias", "post_attention_layernorm.weight",
         "post_attention_layernorm.bias", "attention.query_key_value.weight",
         "attention.query_key_value.bias", "attention.dense.weight", "attention.dense.bias",
         "mlp.dense_h_to_4h.weight", "mlp.dense_h_to_4h.bias", "mlp.dense_4h_to_h.weight",
         "mlp.dense_4h_to_h.bias"},
        {"gpt_neox.final_layer_norm.weight", "gpt_neox.final_layer_norm.bias", "embed_out.weight"});
  } else if (variant == "llama") {
    lm = languageModel({"model.embed_tokens.weight"}, "model.layers",
                       {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
                        "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.down_proj.weight",
                        "mlp.up_proj.weight", "input_layernorm.weight", "post_attention_layernorm.weight"},
                       {"model.norm.weight", "lm_head.weight"});
  }
  Names all = visionAndPerceiver();
  all.insert(all.end(), lm.begin(), lm.end());
  return all;
}

class ParameterNames : public ::testing::TestWithParam<std::string> {};

TEST_P(ParameterNames, EqualOpenFlamingoStateDictNames) {
  auto model = testing::buildTiny(GetParam());
  Names actual;
  for (const auto& [name, tensor] : model->namedParameters()) actual.push_back(name);
  const auto want = expected(GetParam());
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(actual, want);
  for (size_t i = 0; i < std::min(actual.size(), want.size()); ++i) {
    if (actual[i] != want[i]) {
      ADD_FAILURE() << "first difference at " << i << ": " << actual[i] << " vs " << want[i];
      break;
    }
  }
}

TEST_P(ParameterNames, ShapesFollowTheTinyPreset) {
  auto model = testing::buildTiny(GetParam());
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& [name, tensor] : model->namedParameters()) shapes[name] = tensor.sizes().vec();
  const auto embed = "lang_encoder." + model->languageModel()->inputEmbeddingPath() + ".weight";
  EXPECT_EQ(shapes.at(embed), (std::vector<int64_t>{130, 32}));  // resized to tokens.vocab_size
  EXPECT_EQ(shapes.at("vision_encoder.positional_embedding"), (std::vector<int64_t>{17, 32}));
  EXPECT_EQ(shapes.at("vision_encoder.conv1.weight"), (std::vector<int64_t>{32, 3, 8, 8}));
  EXPECT_EQ(shapes.at("perceiver.latents"), (std::vector<int64_t>{4, 32}));
  const auto l0 =
      "lang_encoder." + model->languageModel()->decoderLayersPath() + ".0.gated_cross_attn_layer.";
  EXPECT_EQ(shapes.at(l0 + "attn_gate"), (std::vector<int64_t>{1}));
  EXPECT_EQ(shapes.at(l0 + "attn.to_kv.weight"), (std::vector<int64_t>{64, 32}));
  EXPECT_EQ(shapes.at(l0 + "ff.1.weight"), (std::vector<int64_t>{64, 32}));
  if (GetParam() == "opt") {
    EXPECT_EQ(shapes.at("lang_encoder.model.decoder.embed_positions.weight"),
              (std::vector<int64_t>{130, 32}));
  }
  if (GetParam() == "gpt_neox") {
    EXPECT_EQ(shapes.at("lang_encoder.embed_out.weight"), (std::vector<int64_t>{130, 32}));
  }
}

INSTANTIATE_TEST_SUITE_P(Families, ParameterNames, ::testing::ValuesIn(testing::variants()),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (auto& c : name) c = (c == '-') ? '_' : c;
                           return name;
                         });

}  // namespace
}  // namespace fs::model
