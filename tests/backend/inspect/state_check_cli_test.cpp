// `flamingo-train checkpoint state` and `check` on files PyTorch writes (FS_PYTHON)
// (make_checkpoints.py), torch-free: state --json gives torch's optimizer and
// scheduler figures and says what a file lacks; check classifies a foreign
// checkpoint against a config's model (loaded, mis-shaped, missing, ignored
// alias) and exits 1; bad input exits 1 or 2 naming the file, entry or option.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace {

using nlohmann::json;

struct Ran {
  int code = -1;
  std::string out;  // stdout and stderr
};

Ran checkpoint(const std::string& args) {
  const std::string cmd = std::string(FS_BINARY_DIR) + "/bin/flamingo-train checkpoint " + args + " 2>&1";
  Ran r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) r.out.append(buf, n);
  const int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

bool has(const json& list, const std::string& name) {
  return std::find(list.begin(), list.end(), json(name)) != list.end();
}

class StateCheckCliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(
        (std::filesystem::temp_directory_path() / ("fs_state_cli_" + std::to_string(::getpid()))).string());
    const std::string cmd = std::string(FS_PYTHON) + " " + FS_SOURCE_DIR +
                            "/tests/backend/inspect/make_checkpoints.py " + *dir_ + " > /dev/null";
    ok_ = std::system(cmd.c_str()) == 0;
    if (ok_) expected_ = new json(json::parse(std::ifstream(*dir_ + "/expected.json")));
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    std::filesystem::remove_all(*dir_, ec);
  }
  void SetUp() override {
    ASSERT_TRUE(ok_) << "make_checkpoints.py failed (needs " FS_PYTHON
                        " with torch: run scripts/install-deps.sh)";
  }
  static std::string path(const std::string& name) { return *dir_ + "/" + name; }

  static std::string* dir_;
  static json* expected_;
  static bool ok_;
};

std::string* StateCheckCliTest::dir_ = nullptr;
json* StateCheckCliTest::expected_ = nullptr;
bool StateCheckCliTest::ok_ = false;

TEST_F(StateCheckCliTest, StateJsonGivesTorchsFigures) {
  const Ran r = checkpoint("state --json " + path("openflamingo_train.pt"));
  ASSERT_EQ(r.code, 0) << r.out;
  const json j = json::parse(r.out);
  const json& want = expected_->at("state");
  EXPECT_EQ(j.at("format"), "OpenFlamingo checkpoint");
  EXPECT_EQ(j.at("epoch"), want.at("epoch"));
  EXPECT_TRUE(j.at("resume").is_null());
  EXPECT_EQ(j.at("lr_scheduler").at("last_epoch"), want.at("scheduler").at("last_epoch"));
  EXPECT_EQ(j.at("lr_scheduler").at("_last_lr"), want.at("scheduler").at("_last_lr"));
  const json& params = j.at("optimizer").at("params");
  ASSERT_EQ(params.size(), want.at("params").size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    const json& w = want.at("params")[i];
    SCOPED_TRACE(w.at("name").get<std::string>());
    EXPECT_EQ(params[i].at("name"), w.at("name"));
    EXPECT_EQ(params[i].at("group"), w.at("group"));
    EXPECT_EQ(params[i].at("step"), w.at("step"));
    EXPECT_NEAR(params[i].at("exp_avg_norm").get<double>(), w.at("exp_avg_norm").get<double>(), 1e-9);
    EXPECT_NEAR(params[i].at("exp_avg_sq_norm").get<double>(), w.at("exp_avg_sq_norm").get<double>(), 1e-9);
  }
  EXPECT_EQ(j.at("optimizer").at("param_groups")[0].at("weight_decay"), 0.1);
  EXPECT_EQ(j.at("absent"), json({"global step, RNG state and data position: not in this checkpoint"}));
}

TEST_F(StateCheckCliTest, StateTextSaysWhatAFileLacks) {
  const Ran r = checkpoint("state " + path("state_dict.bin"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("optimizer state: not in this checkpoint"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("LR scheduler state: not in this checkpoint"), std::string::npos) << r.out;
}

TEST_F(StateCheckCliTest, CheckClassifiesAForeignCheckpointAgainstAConfig) {
  const Ran r =
      checkpoint("check --json --config " + std::string(FS_SOURCE_DIR) +
                 "/resources/presets/tiny.yaml --set model.lm.family=llama " + path("openflamingo_train.pt"));
  ASSERT_EQ(r.code, 1) << r.out;
  const json j = json::parse(r.out);
  EXPECT_FALSE(j.at("ok").get<bool>());
  EXPECT_EQ(j.at("loaded"), json({"lang_encoder.model.layers.0.gated_cross_attn_layer.attn_gate"}));
  EXPECT_EQ(j.at("ignored"), json({"lang_encoder.gated_cross_attn_layers.0.attn_gate"}));
  EXPECT_EQ(j.at("unexpected"), json({"lang_encoder.model.embed_positions.weight"}));  // not a llama key
  ASSERT_EQ(j.at("mismatched").size(), 3u);
  EXPECT_EQ(j.at("mismatched")[2].at("name"), "perceiver.latents");
  EXPECT_EQ(j.at("mismatched")[2].at("expected"), json({4, 32}));
  EXPECT_EQ(j.at("mismatched")[2].at("got"), json({2, 4}));
  EXPECT_TRUE(has(j.at("missing"), "perceiver.norm.weight"));        // trainable: missing
  EXPECT_TRUE(has(j.at("expected_frozen"), "vision_encoder.proj"));  // frozen: expected
  EXPECT_FALSE(has(j.at("missing"), "vision_encoder.proj"));
  const Ran text =
      checkpoint("check -c " + std::string(FS_SOURCE_DIR) +
                 "/resources/presets/tiny.yaml --set model.lm.family=llama " + path("openflamingo_train.pt"));
  EXPECT_EQ(text.code, 1);
  EXPECT_NE(text.out.find("does NOT load into llama Flamingo"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("  mis-shaped: perceiver.latents: expected [4, 32], got [2, 4]"), std::string::npos)
      << text.out;
}

TEST_F(StateCheckCliTest, BadInputNamesTheFileEntryOrOption) {
  Ran r = checkpoint("state");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("usage: flamingo-train checkpoint state"), std::string::npos) << r.out;
  r = checkpoint("state --params many " + path("ours.pt"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--params 'many'"), std::string::npos) << r.out;
  r = checkpoint("state " + path("nope.pt"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find(path("nope.pt")), std::string::npos) << r.out;
  r = checkpoint("state " + path("ours.pt"));  // its data position is "{}"
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(
      r.out.find(path("ours.pt") + ": flamingo_studio.data_position: data position: missing required field"),
      std::string::npos)
      << r.out;
  r = checkpoint("check " + path("ours.pt"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--config: a run config is required"), std::string::npos) << r.out;
  r = checkpoint("check --config " + path("nope.yaml") + " " + path("ours.pt"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("nope.yaml"), std::string::npos) << r.out;
}

}  // namespace
