// config.json parsing (hf_lm_config.h), NOTE [LM resolution] (lm_resolver.h)
// and the catalog's shapes and knobs, without Python: config.json texts as the
// Hub's models and transformers 5 write them.
#include "backend/protocol/config/hf_lm_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backend/protocol/cmdline/cmdline.h"
#include "backend/protocol/config/lm_resolver.h"
#include "backend/protocol/config/model_catalog.h"
#include "backend/protocol/config/validate.h"

namespace fs::protocol {
namespace {

using Json = nlohmann::json;

// Abridged from the Hub's config.json files (transformers 4 names).
Json opt125m() {
  return Json::parse(
      R"({"model_type": "opt", "vocab_size": 50272, "hidden_size": 768, "num_hidden_layers": 12,
    "num_attention_heads": 12, "ffn_dim": 3072, "max_position_embeddings": 2048, "do_layer_norm_before": true,
    "word_embed_proj_dim": 768, "activation_function": "relu", "enable_bias": true, "pad_token_id": 1,
    "dropout": 0.1, "layerdrop": 0.0})");
}
Json pythia160m() {
  return Json::parse(R"({"model_type": "gpt_neox", "vocab_size": 50304, "hidden_size": 768,
    "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072,
    "max_position_embeddings": 2048, "rotary_pct": 0.25, "rotary_emb_base": 10000, "use_parallel_residual": true,
    "layer_norm_eps": 1e-05, "hidden_act": "gelu", "tie_word_embeddings": false})");
}
Json llama2() {
  return Json::parse(R"({"model_type": "llama", "vocab_size": 32000, "hidden_size": 4096,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32, "intermediate_size": 11008,
    "max_position_embeddings": 4096, "rms_norm_eps": 1e-05, "rope_scaling": null, "rope_theta": 10000.0,
    "hidden_act": "silu", "tie_word_embeddings": false, "pretraining_tp": 1})");
}
Json mpt7b() {
  return Json::parse(
      R"({"model_type": "mpt", "vocab_size": 50432, "d_model": 4096, "n_layers": 32, "n_heads": 32,
    "expansion_ratio": 4, "max_seq_len": 2048, "no_bias": true, "logit_scale": null, "learned_pos_emb": true,
    "norm_type": "low_precision_layernorm", "embedding_fraction": 1.0,
    "attn_config": {"alibi": true, "alibi_bias_max": 8, "attn_impl": "torch", "clip_qkv": null,
                    "qk_ln": false, "softmax_scale": null, "prefix_lm": false, "attn_uses_sequence_id": false,
                    "attn_type": "multihead_attention", "attn_pdrop": 0}})");
}
// MosaicGPTConfig's names (attn_ prefixed, top level; mlp_ratio).
Json mosaicGpt() {
  return Json::parse(R"({"model_type": "mosaic_gpt", "vocab_size": 50432, "d_model": 2048, "n_layers": 24,
    "n_heads": 16, "mlp_ratio": 4, "max_seq_len": 2048, "alibi": true, "alibi_bias_max": 8,
    "attn_qk_ln": true, "attn_clip_qkv": null, "softmax_scale": null, "attn_impl": "torch"})");
}

StatusOr<HfLmConfig> parse(const Json& j) {
  return parseHfLmConfig(j.dump(), "/m/config.json");
}

TEST(HfLmConfig, ReadsEachFamily) {
  auto opt = parse(opt125m());
  ASSERT_TRUE(opt.isOk()) << opt.status().message();
  EXPECT_EQ(opt->shape.family, "opt");
  EXPECT_EQ(opt->shape.width, 768);
  EXPECT_EQ(opt->shape.ffn_dim, 3072);
  EXPECT_TRUE(opt->shape.tied_head);
  EXPECT_TRUE(opt->arch.layer_norm_before);
  EXPECT_EQ(opt->arch.pad_token_id, 1);
  EXPECT_EQ(opt->arch.dropout, 0.1);
  EXPECT_EQ(opt->arch.attention_dropout, std::nullopt);
  EXPECT_EQ(opt->arch.embedding_dropout, std::nullopt);

  auto neox = parse(pythia160m());
  ASSERT_TRUE(neox.isOk()) << neox.status().message();
  EXPECT_EQ(neox->shape.family, "gpt_neox");
  EXPECT_FALSE(neox->shape.tied_head);
  EXPECT_DOUBLE_EQ(neox->arch.rotary_pct, 0.25);
  EXPECT_TRUE(neox->arch.parallel_residual);
  EXPECT_EQ(neox->arch.norm_eps, 1e-5);

  auto llama = parse(llama2());
  ASSERT_TRUE(llama.isOk()) << llama.status().message();
  EXPECT_EQ(llama->shape.max_positions, 4096);
  EXPECT_EQ(llama->arch.norm_eps, 1e-5);
  EXPECT_DOUBLE_EQ(llama->arch.rotary_base, 10000.0);

  auto mpt = parse(mpt7b());
  ASSERT_TRUE(mpt.isOk()) << mpt.status().message();
  EXPECT_EQ(mpt->shape.family, "mpt");
  EXPECT_EQ(mpt->shape.ffn_dim, 16384);
  EXPECT_TRUE(mpt->shape.tied_head);
  EXPECT_FALSE(mpt->arch.qk_ln);
  EXPECT_FALSE(mpt->arch.mosaic_gpt_names);
  EXPECT_EQ(mpt->arch.dropout, 0.0);  // transformers' MPT: attn_pdrop
  EXPECT_EQ(mpt->arch.attention_dropout, 0.0);

  auto mosaic = parse(mosaicGpt());
  ASSERT_TRUE(mosaic.isOk()) << mosaic.status().message();
  EXPECT_EQ(mosaic->shape.family, "mpt");
  EXPECT_EQ(mosaic->model_type, "mosaic_gpt");
  EXPECT_EQ(mosaic->shape.ffn_dim, 8192);
  EXPECT_TRUE(mosaic->arch.qk_ln);
  EXPECT_TRUE(mosaic->arch.mosaic_gpt_names);
}

TEST(HfLmConfig, ReadsTransformers5RopeParameters) {
  auto j = pythia160m();
  j.erase("rotary_pct");
  j.erase("rotary_emb_base");
  j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 20000.0}, {"partial_rotary_factor", 0.5}};
  auto neox = parse(j);
  ASSERT_TRUE(neox.isOk()) << neox.status().message();
  EXPECT_DOUBLE_EQ(neox->arch.rotary_pct, 0.5);
  EXPECT_DOUBLE_EQ(neox->arch.rotary_base, 20000.0);

  auto l = llama2();
  l.erase("rope_theta");
  l["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 500000.0}};
  auto llama = parse(l);
  ASSERT_TRUE(llama.isOk()) << llama.status().message();
  EXPECT_DOUBLE_EQ(llama->arch.rotary_base, 500000.0);
}

TEST(HfLmConfig, TransformersDefaultsForAbsentKnobs) {
  auto j = pythia160m();
  for (const char* k : {"rotary_pct", "rotary_emb_base", "use_parallel_residual", "layer_norm_eps"})
    j.erase(k);
  auto neox = parse(j);
  ASSERT_TRUE(neox.isOk()) << neox.status().message();
  EXPECT_DOUBLE_EQ(neox->arch.rotary_pct, 0.25);  // GPTNeoXConfig's defaults
  EXPECT_TRUE(neox->arch.parallel_residual);
  auto l = llama2();
  l.erase("rms_norm_eps");
  EXPECT_EQ(parse(l)->arch.norm_eps, 1e-6);
}

struct Refused {
  Json (*base)();
  std::string pointer;
  Json value;
  std::string names;
};

TEST(HfLmConfig, RefusesWhatNoFamilyImplements) {
  const std::vector<Refused> cases = {
      {llama2, "/num_key_value_heads", 8, "num_key_value_heads = 8"},
      {llama2, "/rope_scaling", {{"type", "linear"}, {"factor", 2.0}}, "rope_scaling"},
      {llama2, "/attention_bias", true, "attention_bias = true"},
      {llama2, "/mlp_bias", true, "mlp_bias = true"},
      {llama2, "/hidden_act", "gelu", "hidden_act = \"gelu\""},
      {llama2, "/head_dim", 64, "head_dim = 64"},
      {llama2, "/partial_rotary_factor", 0.5, "partial_rotary_factor = 0.5"},
      // transformers 5 writes it inside rope_parameters: named there, with its value
      {llama2, "/rope_parameters/partial_rotary_factor", 0.5, "rope_parameters.partial_rotary_factor = 0.5"},
      {pythia160m, "/hidden_act", "gelu_new", "hidden_act = \"gelu_new\""},
      {pythia160m, "/rope_scaling", {{"type", "dynamic"}, {"factor", 2.0}}, "rope_scaling"},
      {pythia160m, "/attention_bias", false, "attention_bias = false"},
      {pythia160m, "/rotary_pct", 0.01, "rotary_pct"},
      {opt125m, "/word_embed_proj_dim", 512, "word_embed_proj_dim = 512"},
      {opt125m, "/activation_function", "gelu", "activation_function = \"gelu\""},
      {opt125m, "/enable_bias", false, "enable_bias = false"},
      {opt125m, "/layer_norm_elementwise_affine", false, "layer_norm_elementwise_affine = false"},
      {opt125m, "/_remove_final_layer_norm", true, "_remove_final_layer_norm = true"},
      {opt125m, "/layerdrop", 0.1, "layerdrop = 0.1"},
      {mpt7b, "/attn_config/alibi", false, "attn_config.alibi = false"},
      {mpt7b, "/attn_config/clip_qkv", 8, "attn_config.clip_qkv = 8"},
      {mpt7b, "/attn_config/softmax_scale", 0.1, "attn_config.softmax_scale = 0.1"},
      {mpt7b, "/attn_config/attn_impl", "xformers", "attn_config.attn_impl = \"xformers\""},
      {mpt7b, "/attn_config/attn_type", "multiquery_attention", "attn_config.attn_type"},
      {mpt7b, "/attn_config/alibi_bias_max", 16, "attn_config.alibi_bias_max = 16"},
      {mpt7b, "/attn_config/qk_ln", true, "attn_config.qk_ln = true"},
      {mpt7b, "/attn_config/prefix_lm", true, "attn_config.prefix_lm = true"},
      {mpt7b, "/no_bias", false, "no_bias = false"},
      {mpt7b, "/logit_scale", 0.5, "logit_scale = 0.5"},
      {mpt7b, "/expansion_ratio", 2.7, "expansion_ratio = 2.7"},
      {mpt7b, "/expansion_ratio", 2, "expansion_ratio = 2"},
      {mpt7b, "/norm_type", "rmsnorm", "norm_type = \"rmsnorm\""},
      {mpt7b, "/embedding_fraction", 0.1, "embedding_fraction = 0.1"},
      {mosaicGpt, "/alibi", false, "alibi = false"},
      {mosaicGpt, "/attn_clip_qkv", 6, "attn_clip_qkv = 6"},
      {opt125m, "/model_type", "bloom", "model_type = \"bloom\""},
      {opt125m, "/hidden_size", "768", "hidden_size is \"768\""},
      {opt125m, "/num_attention_heads", 7, "not divisible"},
      {opt125m, "/dropout", 1.5, "dropout is 1.5; a probability"},
  };
  for (const auto& c : cases) {
    auto j = c.base();
    j[Json::json_pointer(c.pointer)] = c.value;
    const auto r = parse(j);
    ASSERT_FALSE(r.isOk()) << c.pointer << " = " << c.value.dump() << " was accepted";
    EXPECT_NE(r.status().message().find(c.names), std::string::npos) << r.status().message();
    EXPECT_EQ(r.status().message().rfind("/m/config.json: ", 0), 0u) << r.status().message();
  }
  // What the families do compute is accepted: MosaicGPT's alibi_bias_max and any integer mlp_ratio.
  auto m = mosaicGpt();
  m["alibi_bias_max"] = 16;
  m["mlp_ratio"] = 2;
  auto ok = parse(m);
  ASSERT_TRUE(ok.isOk()) << ok.status().message();
  EXPECT_EQ(ok->arch.alibi_bias_max, 16.0);
  EXPECT_EQ(ok->shape.ffn_dim, 4096);
}

TEST(HfLmConfig, NotJsonIsCorruption) {
  const auto r = parseHfLmConfig("{\"model_type\": ", "/m/config.json");
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), Status::Code::kCorruption);
  EXPECT_NE(r.status().message().find("/m/config.json"), std::string::npos);
}

// ---------------------------------------------------------------- resolution

std::filesystem::path writeDir(const std::string& name, const Json& config) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / ("hf_lm_config_test_" + name);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << config.dump();
  return dir;
}

TEST(LmResolution, ConfigJsonIsTheSourceOfTruth) {
  const auto dir = writeDir("mpt1b", mosaicGpt());
  LmConfig lm;
  lm.path = dir.string();
  // model.lm as applyKnownShapes fills it from the directory.
  ModelConfig m;
  m.lm.path = lm.path;
  ASSERT_TRUE(applyKnownShapes(&m));
  EXPECT_EQ(m.lm.family, "mpt");
  EXPECT_EQ(m.lm.width, 2048);
  auto r = resolveLm(m.lm);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_TRUE(r->arch.qk_ln);
  EXPECT_TRUE(r->arch.mosaic_gpt_names);
  EXPECT_EQ(r->source, (dir / "config.json").string());

  m.lm.heads = 8;
  m.lm.ffn_dim = 4096;
  const auto mismatched = resolveLm(m.lm);
  ASSERT_FALSE(mismatched.isOk());
  EXPECT_NE(mismatched.status().message().find("model.lm.heads is 8, but " + (dir / "config.json").string() +
                                               " has n_heads 16"),
            std::string::npos)
      << mismatched.status().message();
  EXPECT_NE(mismatched.status().message().find("(and 1 more)"), std::string::npos);
}

std::vector<Problem> lmErrors(const RunConfig& run) {
  std::vector<Problem> out;
  for (const auto& p : validateConfig(run, FileChecks::kModelFiles))
    if (p.isError() && p.path.rfind("model.lm", 0) == 0) out.push_back(p);
  return out;
}

TEST(LmResolution, ValidationReportsAnUnreadableOrContradictedConfigJson) {
  const auto broken = std::filesystem::path(::testing::TempDir()) / "hf_lm_config_test_broken";
  std::filesystem::create_directories(broken);
  std::ofstream(broken / "config.json") << "{\"model_type\": \"opt\", ";
  RunConfig run = defaultRunConfig();
  run.model.lm.path = broken.string();
  auto errors = lmErrors(run);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].path, "model.lm.path");
  EXPECT_NE(errors[0].message.find((broken / "config.json").string() + ": not valid JSON"), std::string::npos)
      << errors[0].message;
  EXPECT_FALSE(resolveLm(run.model.lm).isOk());
  // Without FileChecks::kModelFiles nothing is read (the GUI validates on every edit, on its own thread).
  for (const auto& p : validateConfig(run)) EXPECT_NE(p.path, "model.lm.path") << p.message;

  // The defaults (OPT-1.3b's shape) against MPT-7B's config.json: one error per field, each naming the key.
  run.model.lm.path = writeDir("mpt7b", mpt7b()).string();
  errors = lmErrors(run);
  std::vector<std::string> paths;
  for (const auto& e : errors) paths.push_back(e.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"model.lm.family", "model.lm.vocab_size", "model.lm.width",
                                             "model.lm.layers", "model.lm.ffn_dim"}));
  ASSERT_FALSE(errors.empty());
  EXPECT_NE(errors[0].message.find("'opt', but "), std::string::npos) << errors[0].message;
  EXPECT_NE(errors[0].message.find("has model_type 'mpt'"), std::string::npos) << errors[0].message;
  EXPECT_NE(errors[4].message.find("has expansion_ratio giving 16384"), std::string::npos)
      << errors[4].message;
}

// An OpenFlamingo command line with --lm_path a local directory: model.lm from its config.json.
TEST(LmResolution, ImportReadsTheDirectorysConfigJson) {
  const auto dir = writeDir("llama2", llama2());
  const CmdlineImport im = importOpenFlamingoCmdline("train.py --lm_path " + dir.string());
  const LmConfig& lm = im.config.model.lm;
  EXPECT_EQ(lm.path, dir.string());
  EXPECT_EQ(lm.family, "llama");
  EXPECT_EQ(lm.width, 4096);
  EXPECT_EQ(lm.max_positions, 4096);
  EXPECT_FALSE(lm.tied_head);
  for (const auto& p : im.problems) EXPECT_NE(p.path, "model.lm.path") << p.toString();
  EXPECT_TRUE(resolveLm(lm).isOk());
}

// The catalog's shapes as they were before config.json was read (issue 41 item 3), and its knobs.
TEST(LmResolution, CatalogIdsResolveAsBefore) {
  struct Entry {
    std::string id, family;
    int64_t vocab, width, layers, heads, ffn, positions;
    bool tied;
  };
  const std::vector<Entry> before = {
      {"facebook/opt-125m", "opt", 50272, 768, 12, 12, 3072, 2048, true},
      {"facebook/opt-1.3b", "opt", 50272, 2048, 24, 32, 8192, 2048, true},
      {"facebook/opt-2.7b", "opt", 50272, 2560, 32, 32, 10240, 2048, true},
      {"facebook/opt-6.7b", "opt", 50272, 4096, 32, 32, 16384, 2048, true},
      {"anas-awadalla/mpt-1b-redpajama-200b", "mpt", 50432, 2048, 24, 16, 8192, 2048, true},
      {"anas-awadalla/mpt-1b-redpajama-200b-dolly", "mpt", 50432, 2048, 24, 16, 8192, 2048, true},
      {"anas-awadalla/mpt-7b", "mpt", 50432, 4096, 32, 32, 16384, 2048, true},
      {"togethercomputer/RedPajama-INCITE-Base-3B-v1", "gpt_neox", 50432, 2560, 32, 32, 10240, 2048, false},
      {"togethercomputer/RedPajama-INCITE-Instruct-3B-v1", "gpt_neox", 50432, 2560, 32, 32, 10240, 2048,
       false},
      {"huggyllama/llama-7b", "llama", 32000, 4096, 32, 32, 11008, 2048, false},
      {"meta-llama/Llama-2-7b-hf", "llama", 32000, 4096, 32, 32, 11008, 4096, false},
  };
  for (const auto& e : before) {
    ModelConfig m;
    m.lm.path = e.id;
    ASSERT_TRUE(applyKnownShapes(&m)) << e.id;
    const LmConfig& s = m.lm;
    EXPECT_EQ(
        std::tie(s.family, s.vocab_size, s.width, s.layers, s.heads, s.ffn_dim, s.max_positions, s.tied_head),
        std::tie(e.family, e.vocab, e.width, e.layers, e.heads, e.ffn, e.positions, e.tied))
        << e.id;
    auto r = resolveLm(m.lm);
    ASSERT_TRUE(r.isOk()) << e.id;
    EXPECT_EQ(r->shape, m.lm);
    EXPECT_EQ(r->source, "catalog: " + e.id);
    const bool mpt1b = e.id.find("mpt-1b") != std::string::npos;
    EXPECT_EQ(r->arch.qk_ln, mpt1b) << e.id;
    EXPECT_EQ(r->arch.mosaic_gpt_names, mpt1b) << e.id;
    EXPECT_EQ(r->arch.norm_eps,
              e.id == "meta-llama/Llama-2-7b-hf" ? std::optional<double>(1e-5) : std::nullopt)
        << e.id;
    EXPECT_DOUBLE_EQ(r->arch.rotary_pct, 1.0) << e.id;
    EXPECT_FALSE(r->arch.parallel_residual) << e.id;
  }
  // Pythia's knobs, also for a local path named after it (without a config.json there).
  LmConfig pythia;
  pythia.family = "gpt_neox";
  pythia.path = "/nowhere/pythia-160m";
  auto r = resolveLm(pythia);
  ASSERT_TRUE(r.isOk());
  EXPECT_DOUBLE_EQ(r->arch.rotary_pct, 0.25);
  EXPECT_TRUE(r->arch.parallel_residual);
  // A catalog id of another family, and an unknown path: the family defaults.
  pythia.family = "llama";
  EXPECT_EQ(resolveLm(pythia)->arch, LmArchitecture{});
  EXPECT_EQ(resolveLm(pythia)->source, "family defaults");
}

}  // namespace
}  // namespace fs::protocol
