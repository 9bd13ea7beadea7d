// Hugging Face models of every family (issue 41, item 3): transformers builds
// tiny random OPT, GPT-NeoX (Pythia-like and RedPajama-like), LLaMA and MPT
// models from configs and saves each as safetensors, sharded safetensors and a
// sharded .bin set (hf_models.py). For each, model.lm.path = that directory:
// the shape comes from its config.json (applyKnownShapes, as the OpenFlamingo
// command-line import does), validation passes, FlamingoOptions::fromConfig
// takes the family knobs from config.json (NOTE [LM resolution]), the weights
// load through loadPretrained, and the LM's logits equal transformers' within
// 1e-5 relative (fp32; the gates are 0 at init, so Flamingo's forward is the
// LM's). Copies of config.json with one unsupported field each are refused by
// validation and by the model factory, naming the field. Each directory also
// holds a byte-level BPE tokenizer saved by PreTrainedTokenizerFast; loadTokenizer
// on the directory (model.lm.tokenizer_path = model.lm.path, as train.py's empty
// --tokenizer_path) gives AutoTokenizer's ids for varied strings.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "backend/checkpoint/weights.h"
#include "backend/data/tokenizer/tokenizer.h"
#include "backend/model/flamingo.h"
#include "backend/protocol/config/config_yaml.h"
#include "backend/protocol/config/hf_lm_config.h"
#include "backend/protocol/config/model_catalog.h"
#include "backend/protocol/config/validate.h"
#include "tests/backend/data/tokenizer/tokenizer_test_util.h"
#include "tests/fixtures/fixture_unavailable.h"

namespace fs::checkpoint {
namespace {

namespace fsys = std::filesystem;

struct Knobs {
  std::string family;
  bool tied;
  double norm_eps;  // as the family reads it (OPT has no field: LayerNorm's 1e-5)
  double rotary_pct;
  double rotary_base;
  bool parallel_residual;
  bool layer_norm_before;
};

struct Case {
  std::string name;
  Knobs knobs;
};
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"opt", {"opt", true, 1e-5, 1.0, 10000.0, false, true}},
      {"opt_post_ln", {"opt", true, 1e-5, 1.0, 10000.0, false, false}},
      {"pythia", {"gpt_neox", false, 3e-4, 0.25, 10000.0, true, true}},
      {"redpajama", {"gpt_neox", false, 1e-6, 1.0, 20000.0, false, true}},
      {"llama", {"llama", false, 1e-5, 1.0, 50000.0, false, true}},
      {"llama_tied", {"llama", true, 1e-3, 1.0, 300.0, false, true}},
      {"mpt", {"mpt", true, 1e-3, 1.0, 10000.0, false, true}},
  };
  return c;
}

const std::vector<std::string>& formats() {
  static const std::vector<std::string> f = {"safetensors", "safetensors_sharded", "bin_sharded"};
  return f;
}

fsys::path root() {
  return fsys::path(FS_BINARY_DIR) / "tests" / "hf_models";
}

struct Fixture {
  int exit_code = -1;
  std::string log;
};

// The tokenizer test's strings (tokenizer_test_util.h), and what the tokenizers train on.
std::vector<std::string> tokenizerStrings() {
  auto s = data::testing::variedStrings(2000, 4141);
  s.insert(s.end(), {"", " ", "A photo of a dog on the beach.", "  two leading spaces", "trailing \n\n"});
  return s;
}

// hf_models.py once per process.
const Fixture& fixture() {
  static const Fixture f = [] {
    Fixture out;
    fsys::remove_all(root());
    fsys::create_directories(root());
    const auto log = root() / "hf_models.log";
    const auto corpus = root() / "corpus.json", strings = root() / "strings.json";
    std::ofstream(corpus) << nlohmann::json(data::testing::variedStrings(4000, 41)).dump();
    std::ofstream(strings) << nlohmann::json(tokenizerStrings()).dump();
    const std::string cmd = std::string(FS_PYTHON) + " " + FS_SOURCE_DIR +
                            "/tests/backend/checkpoint/hf_models.py " + root().string() + " " +
                            corpus.string() + " " + strings.string() + " > " + log.string() + " 2>&1";
    const int status = std::system(cmd.c_str());
    out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream in(log);
    out.log = std::string(std::istreambuf_iterator<char>(in), {});
    return out;
  }();
  return f;
}

// The fixture, or the test ends: skipped outside CI when a package is missing (exit 77), failed under CI.
#define REQUIRE_FIXTURE()                                                      \
  do {                                                                         \
    const auto& fx = fixture();                                                \
    if (fx.exit_code == 77) FS_FIXTURE_UNAVAILABLE("hf_models.py: " + fx.log); \
    ASSERT_EQ(fx.exit_code, 0) << "hf_models.py failed:\n" << fx.log;          \
  } while (0)

protocol::RunConfig tinyRun() {
  auto load = protocol::loadConfigFile(std::string(FS_SOURCE_DIR) + "/resources/presets/tiny.yaml");
  EXPECT_TRUE(load.ok()) << "tiny.yaml does not load";
  return load.config;
}

// The tiny preset with model.lm.path = dir and model.lm from its config.json.
protocol::RunConfig configFor(const fsys::path& dir) {
  auto run = tinyRun();
  auto& m = run.model;
  m.lm.path = dir.string();
  m.lm.tokenizer_path = "";
  EXPECT_TRUE(protocol::applyKnownShapes(&m)) << dir;
  // No new tokens: the embedding keeps config.json's rows, so the logits compare column for column.
  m.tokens.vocab_size = m.lm.vocab_size;
  m.tokens.eos_id = 2;
  m.tokens.pad_id = 1;
  m.tokens.image_id = m.lm.vocab_size - 1;
  m.tokens.endofchunk_id = m.lm.vocab_size - 2;
  m.cross_attn.every_n_layers = 1;
  return run;
}

std::vector<protocol::Problem> errorsOf(const protocol::RunConfig& run) {
  std::vector<protocol::Problem> out;
  for (const auto& p : protocol::validateConfig(run, protocol::FileChecks::kModelFiles))
    if (p.isError()) out.push_back(p);
  return out;
}

std::string describe(const std::vector<protocol::Problem>& problems) {
  std::string s;
  for (const auto& p : problems) s += p.toString() + "\n";
  return s;
}

StateDict readReference(const fsys::path& file) {
  auto sd = loadStateDictFile(file.string());
  EXPECT_TRUE(sd.isOk()) << sd.status().message();
  return sd.isOk() ? *sd : StateDict{};
}

class HfModels : public ::testing::TestWithParam<std::tuple<Case, std::string>> {};

TEST_P(HfModels, LogitsMatchTransformers) {
  REQUIRE_FIXTURE();
  const auto& [c, format] = GetParam();
  const auto dir = root() / c.name / format;
  const auto run = configFor(dir);
  const auto errors = errorsOf(run);
  ASSERT_TRUE(errors.empty()) << describe(errors);

  auto options = model::FlamingoOptions::fromConfig(run.model);
  // Dropouts from config.json (hf_models.py's are 0; OPT's family default would be 0.1).
  EXPECT_EQ(options.lm().dropoutOr(-1.0), c.knobs.family == "llama" ? -1.0 : 0.0);
  EXPECT_EQ(options.lm().attentionDropoutOr(-1.0), 0.0);
  options.lm().noDropout();
  const auto& lm = options.lm();
  const auto& k = c.knobs;
  EXPECT_EQ(lm.family(), k.family);
  EXPECT_EQ(lm.tied_head(), k.tied);
  EXPECT_DOUBLE_EQ(lm.normEpsOr(k.family == "llama" ? 1e-6 : 1e-5), k.norm_eps);
  if (k.family == "gpt_neox") {
    EXPECT_DOUBLE_EQ(lm.rotary_pct(), k.rotary_pct);
    EXPECT_EQ(lm.parallel_residual(), k.parallel_residual);
  }
  if (k.family == "gpt_neox" || k.family == "llama") {
    EXPECT_DOUBLE_EQ(lm.rotary_base(), k.rotary_base);
  }
  if (k.family == "opt") {
    EXPECT_EQ(lm.layer_norm_before(), k.layer_norm_before);
  }
  if (k.family == "mpt") {
    EXPECT_FALSE(lm.qk_ln());
    EXPECT_FALSE(lm.mosaic_gpt_names());
    EXPECT_DOUBLE_EQ(lm.alibi_bias_max(), 8.0);
  }

  torch::manual_seed(0);
  model::Flamingo flamingo(options);
  flamingo->eval();
  const auto loaded = loadPretrained(*flamingo, run.model);
  ASSERT_TRUE(loaded.isOk()) << loaded.status().message();
  for (const auto& w : loaded->warnings) ADD_FAILURE() << "unexpected: " << w;
  for (const auto& g : flamingo->gateValues()) {
    ASSERT_EQ(g.attn, 0.0);  // Flamingo's forward is the LM's
    ASSERT_EQ(g.ff, 0.0);
  }

  const auto ref = readReference(root() / c.name / "reference.safetensors");
  const auto ids = ref.at("input_ids");
  const auto mask = ref.at("attention_mask");
  const auto expected = ref.at("logits");
  const auto& v = run.model.vision;
  const auto vision_x = torch::zeros({ids.size(0), 1, 1, 3, v.image_size, v.image_size});
  torch::Tensor logits;
  {
    torch::NoGradGuard no_grad;
    logits = flamingo->forward(vision_x, ids, mask);
  }
  ASSERT_EQ(logits.sizes(), expected.sizes());
  const double scale = expected.abs().max().item<double>();
  const double max_diff = (logits - expected).abs().max().item<double>();
  EXPECT_GT(scale, 0.0);
  EXPECT_LE(max_diff, 1e-5 * scale) << c.name << "/" << format << ": max |ours - transformers| = " << max_diff
                                    << " (max |logit| " << scale << ")";
  std::ostringstream rel;
  rel << std::scientific << max_diff / scale;
  RecordProperty("max_relative_difference", rel.str());

  if (format != "safetensors") return;
  // Without an <image> token the cross-attention is inert whatever its gate (OpenFlamingo's
  // text_without_media_mask zeroes its output); the feed-forward half is not: with tanh(ff_gate)
  // != 0 it changes every token, in OpenFlamingo as here (helpers.py GatedCrossAttentionBlock).
  ASSERT_FALSE(ids.eq(run.model.tokens.image_id).any().item<bool>());
  {
    torch::NoGradGuard no_grad;
    for (auto& block : flamingo->gatedCrossAttentionBlocks()) block->attn_gate.fill_(1.0);
    const double open_attn = (flamingo->forward(vision_x, ids, mask) - expected).abs().max().item<double>();
    EXPECT_LE(open_attn, 1e-5 * scale) << c.name << ": cross-attention without media changed the logits";
    for (auto& block : flamingo->gatedCrossAttentionBlocks()) block->ff_gate.fill_(1.0);
    const double open_ff = (flamingo->forward(vision_x, ids, mask) - expected).abs().max().item<double>();
    EXPECT_GT(open_ff, 1e-3 * scale) << c.name << ": the gated feed-forward changed nothing";
  }

  // The comparison sees the knobs config.json set: the same weights with one of them as the
  // family default (or another value) give other logits.
  const auto differs = [&](const char* knob, const std::function<void(model::LmOptions&)>& set) {
    auto wrong = options;
    set(wrong.lm());
    torch::manual_seed(0);
    model::Flamingo other(wrong);
    other->eval();
    ASSERT_TRUE(loadPretrained(*other, run.model).isOk());
    torch::NoGradGuard no_grad;
    const double wrong_diff = (other->forward(vision_x, ids, mask) - expected).abs().max().item<double>();
    EXPECT_GT(wrong_diff, 1e-3 * scale) << c.name << ": a wrong " << knob << " went unseen";
  };
  if (k.family == "gpt_neox")
    differs("parallel_residual", [&](auto& lm) { lm.parallel_residual(!k.parallel_residual); });
  if (k.family == "gpt_neox")
    differs("rotary_pct", [&](auto& lm) { lm.rotary_pct(k.rotary_pct == 1.0 ? 0.5 : 1.0); });
  if (k.family == "llama") differs("rotary_base", [&](auto& lm) { lm.rotary_base(10000.0); });
  if (k.family == "mpt") differs("alibi_bias_max", [&](auto& lm) { lm.alibi_bias_max(4.0); });
  if (c.name == "llama_tied") differs("rms_norm_eps", [&](auto& lm) { lm.norm_eps(1e-6); });
  if (k.family == "mpt") differs("layer_norm_epsilon", [&](auto& lm) { lm.norm_eps(1e-5); });
  if (c.name == "pythia") differs("layer_norm_eps", [&](auto& lm) { lm.norm_eps(1e-5); });
}

// The tokenizer save_pretrained put beside the model, loaded as the engine does when
// model.lm.tokenizer_path is the model's directory: AutoTokenizer's ids, specials and text.
TEST_P(HfModels, TokenizerMatchesAutoTokenizer) {
  REQUIRE_FIXTURE();
  const auto& [c, format] = GetParam();
  auto run = configFor(root() / c.name / format);
  run.model.lm.tokenizer_path = run.model.lm.path;
  nlohmann::json hf;
  std::ifstream(root() / c.name / "tokens.json") >> hf;
  EXPECT_EQ(hf["class"], "TokenizersBackend");  // transformers 5's class for a plain tokenizer.json
  auto loaded = data::loadTokenizer(run.model.lm.tokenizer_path, run.model.lm.family);
  ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
  const data::Tokenizer& t = *loaded.value();
  EXPECT_EQ(t.size(), hf["size"].get<int64_t>());
  EXPECT_LE(t.size(), run.model.lm.vocab_size + 3);  // the model's rows, then OpenFlamingo's additions
  EXPECT_EQ(t.eosId(), hf["eos"].get<int64_t>());
  EXPECT_EQ(t.padId(), hf["pad"].get<int64_t>());
  EXPECT_EQ(t.imageId(), hf["added"]["<image>"].get<int64_t>());
  EXPECT_EQ(t.endofchunkId(), hf["added"]["<|endofchunk|>"].get<int64_t>());
  const auto strings = tokenizerStrings();
  ASSERT_EQ(hf["ids"].size(), strings.size());
  size_t wrong = 0;
  for (size_t i = 0; i < strings.size() && wrong < 5; ++i) {
    const auto expected = hf["ids"][i].get<std::vector<int64_t>>();
    const auto ids = t.encode(strings[i]);
    wrong += ids != expected;
    EXPECT_EQ(ids, expected) << "#" << i << " " << nlohmann::json(strings[i]).dump();
    EXPECT_EQ(t.decode(expected), hf["decoded"][i].get<std::string>()) << "#" << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Families, HfModels,
                         ::testing::Combine(::testing::ValuesIn(cases()), ::testing::ValuesIn(formats())),
                         [](const auto& info) {
                           return std::get<0>(info.param).name + "_" + std::get<1>(info.param);
                         });

// ---------------------------------------------------------------- refusals

struct Refusal {
  std::string family_case;  // whose config.json is copied
  std::string pointer;      // JSON pointer of the field changed
  nlohmann::json value;
  std::string names;  // what the message must contain
};
void PrintTo(const Refusal& r, std::ostream* os) {
  *os << r.family_case << r.pointer << " = " << r.value.dump();
}

const std::vector<Refusal>& refusals() {
  static const std::vector<Refusal> r = {
      {"llama", "/num_key_value_heads", 2, "num_key_value_heads = 2"},
      {"llama", "/rope_scaling", {{"rope_type", "linear"}, {"factor", 2.0}}, "rope_scaling"},
      {"llama", "/rope_parameters/rope_type", "yarn", "rope_parameters.rope_type = \"yarn\""},
      {"llama", "/attention_bias", true, "attention_bias = true"},
      {"llama", "/mlp_bias", true, "mlp_bias = true"},
      {"llama", "/hidden_act", "gelu", "hidden_act = \"gelu\""},
      {"llama", "/head_dim", 16, "head_dim = 16"},
      {"llama", "/partial_rotary_factor", 0.5, "partial_rotary_factor = 0.5"},
      {"llama", "/rope_parameters/partial_rotary_factor", 0.5, "rope_parameters.partial_rotary_factor = 0.5"},
      {"pythia", "/hidden_act", "relu", "hidden_act = \"relu\""},
      {"pythia", "/rope_scaling", {{"rope_type", "dynamic"}, {"factor", 2.0}}, "rope_scaling"},
      {"pythia", "/attention_bias", false, "attention_bias = false"},
      {"opt", "/word_embed_proj_dim", 16, "word_embed_proj_dim = 16"},
      {"opt", "/activation_function", "gelu", "activation_function = \"gelu\""},
      {"opt", "/enable_bias", false, "enable_bias = false"},
      {"mpt", "/attn_config/alibi", false, "attn_config.alibi = false"},
      {"mpt", "/attn_config/clip_qkv", 6.0, "attn_config.clip_qkv = 6.0"},
      {"mpt", "/attn_config/alibi_bias_max", 4, "attn_config.alibi_bias_max = 4"},
      {"mpt", "/attn_config/softmax_scale", 0.5, "attn_config.softmax_scale = 0.5"},
      {"mpt", "/attn_config/qk_ln", true, "attn_config.qk_ln = true"},
      {"mpt", "/no_bias", false, "no_bias = false"},
      {"mpt", "/expansion_ratio", 2.5, "expansion_ratio = 2.5"},
      {"mpt", "/model_type", "bloom", "model_type = \"bloom\""},
  };
  return r;
}

class HfRefusals : public ::testing::TestWithParam<Refusal> {};

TEST_P(HfRefusals, ValidationAndTheFactoryNameTheField) {
  REQUIRE_FIXTURE();
  const auto& r = GetParam();
  const auto source = root() / r.family_case / "safetensors";
  const auto copy = root() / "refused" / (r.family_case + r.pointer);
  fsys::create_directories(copy);
  nlohmann::json config;
  std::ifstream(source / "config.json") >> config;
  auto run = configFor(source);  // model.lm as the unchanged file gives it
  config[nlohmann::json::json_pointer(r.pointer)] = r.value;
  std::ofstream(copy / "config.json") << config.dump(2);
  for (const auto& f : fsys::directory_iterator(source))
    if (f.path().extension() == ".safetensors")
      fsys::copy_file(f.path(), copy / f.path().filename(), fsys::copy_options::overwrite_existing);
  run.model.lm.path = copy.string();

  const auto hf = protocol::readHfLmConfig(copy.string());
  ASSERT_FALSE(hf.isOk());
  EXPECT_NE(hf.status().message().find(r.names), std::string::npos) << hf.status().message();
  EXPECT_NE(hf.status().message().find((copy / "config.json").string()), std::string::npos)
      << hf.status().message();

  const auto errors = errorsOf(run);
  ASSERT_EQ(errors.size(), 1u) << describe(errors);
  EXPECT_EQ(errors[0].path, "model.lm.path");
  EXPECT_NE(errors[0].message.find(r.names), std::string::npos) << errors[0].message;

  try {
    model::FlamingoOptions::fromConfig(run.model);
    ADD_FAILURE() << "fromConfig accepted " << r.pointer;
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find(r.names), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Fields, HfRefusals, ::testing::ValuesIn(refusals()), [](const auto& info) {
  std::string n = info.param.family_case + info.param.pointer;
  for (auto& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
});

// model.lm contradicting config.json: an error per field, naming the file's key.
TEST(HfModelsContradiction, ValidationNamesTheFieldAndTheFile) {
  REQUIRE_FIXTURE();
  const auto dir = root() / "llama" / "safetensors";
  auto run = configFor(dir);
  run.model.lm.width = 64;
  run.model.lm.tied_head = true;
  const auto errors = errorsOf(run);
  ASSERT_EQ(errors.size(), 2u) << describe(errors);
  EXPECT_EQ(errors[0].path, "model.lm.width");
  EXPECT_NE(errors[0].message.find("hidden_size 32"), std::string::npos) << errors[0].message;
  EXPECT_NE(errors[0].message.find((dir / "config.json").string()), std::string::npos) << errors[0].message;
  EXPECT_EQ(errors[1].path, "model.lm.tied_head");
  EXPECT_THROW(model::FlamingoOptions::fromConfig(run.model), c10::Error);
}

}  // namespace
}  // namespace fs::checkpoint
