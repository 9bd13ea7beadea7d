// `flamingo-train checkpoint inspect` and `diff` on files PyTorch writes (FS_PYTHON)
// (make_checkpoints.py): --json lists what torch lists, the text output names
// the format, sections and modules, --verify checks manifest hashes (and fails
// with exit 1 naming the tensor when one differs), bad input exits 1 or 2 with
// a message naming the file or option.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace {

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

Ran inspect(const std::string& args) {
  return checkpoint("inspect " + args);
}

class InspectCliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(
        (std::filesystem::temp_directory_path() / ("fs_inspect_cli_" + std::to_string(::getpid()))).string());
    const std::string cmd = std::string(FS_PYTHON) + " " + FS_SOURCE_DIR +
                            "/tests/backend/inspect/make_checkpoints.py " + *dir_ + " > /dev/null";
    ok_ = std::system(cmd.c_str()) == 0;
    if (ok_) expected_ = new nlohmann::json(nlohmann::json::parse(std::ifstream(*dir_ + "/expected.json")));
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
  static nlohmann::json* expected_;
  static bool ok_;
};

std::string* InspectCliTest::dir_ = nullptr;
nlohmann::json* InspectCliTest::expected_ = nullptr;
bool InspectCliTest::ok_ = false;

TEST_F(InspectCliTest, JsonListsWhatTorchLists) {
  for (const char* name : {"openflamingo.pt", "state_dict.bin", "ours.pt"}) {
    SCOPED_TRACE(name);
    const Ran r = inspect("--json --tensors " + path(name));
    ASSERT_EQ(r.code, 0) << r.out;
    const auto j = nlohmann::json::parse(r.out);
    const auto& want = expected_->at(name);
    EXPECT_EQ(j.at("format"), want.at("format"));
    ASSERT_EQ(j.at("tensors").size(), want.at("tensors").size());
    for (std::size_t i = 0; i < j.at("tensors").size(); ++i) {
      const auto& got = j.at("tensors")[i];
      const auto& w = want.at("tensors")[i];
      EXPECT_EQ(got.at("name"), w.at("name"));
      EXPECT_EQ(got.at("section"), w.at("section"));
      EXPECT_EQ(got.at("dtype"), w.at("dtype"));
      EXPECT_EQ(got.at("shape"), w.at("shape"));
      EXPECT_EQ(got.at("bytes"), w.at("bytes"));
      EXPECT_EQ(got.at("same_as"), w.at("tied_to"));
    }
  }
  const Ran r = inspect("--json " + path("openflamingo.pt"));
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("sections").at("model").at("tensors"), 8);
  EXPECT_EQ(j.at("sections").at("model").at("tied"), 1);
  EXPECT_EQ(j.at("sections").at("optimizer").at("tensors"), 6);
  EXPECT_FALSE(j.contains("tensors"));  // only with --tensors
  bool layers = false;
  for (const auto& m : j.at("modules")) layers |= m.at("path") == "lang_encoder.layers";
  EXPECT_TRUE(layers);
}

TEST_F(InspectCliTest, TextNamesFormatSectionsAndModules) {
  const Ran r = inspect(path("sharded"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("flamingo-studio sharded checkpoint, 3 files"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("model"), std::string::npos);
  EXPECT_NE(r.out.find("optimizer"), std::string::npos);
  EXPECT_NE(r.out.find("fc"), std::string::npos);
  const Ran listed = inspect("--tensors --depth 0 " + path("openflamingo.pt"));
  ASSERT_EQ(listed.code, 0) << listed.out;
  EXPECT_NE(listed.out.find("lang_encoder.lm_head.weight  torch.float32 [6, 4]"), std::string::npos)
      << listed.out;
  EXPECT_NE(listed.out.find("= lang_encoder.embed_tokens.weight"), std::string::npos) << listed.out;
  EXPECT_EQ(listed.out.find("model by module"), std::string::npos);
}

TEST_F(InspectCliTest, VerifyFailsNamingTheTensorWhoseHashDiffers) {
  // ours.pt records a made-up hash for fc1.bias: it cannot match.
  const Ran r = inspect("--verify " + path("ours.pt"));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("manifest hashes: 0 match, 1 differ"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("differs: lang_encoder.layers.0.mlp.fc1.bias"), std::string::npos) << r.out;
  const Ran plain = inspect("--verify " + path("openflamingo.pt"));
  EXPECT_EQ(plain.code, 0) << plain.out;  // nothing recorded, nothing differs
  EXPECT_NE(plain.out.find("0 match, 0 differ"), std::string::npos) << plain.out;
}

TEST_F(InspectCliTest, BadInputGetsAClearMessage) {
  const Ran missing = inspect(path("nope.pt"));
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.out.find("nope.pt"), std::string::npos) << missing.out;
  const Ran depth = inspect("--depth two " + path("ours.pt"));
  EXPECT_EQ(depth.code, 2);
  EXPECT_NE(depth.out.find("--depth 'two' is not a count"), std::string::npos) << depth.out;
  const Ran none = inspect("");
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.out.find("usage: flamingo-train checkpoint inspect"), std::string::npos) << none.out;
  const Ran help = inspect("--help");
  EXPECT_EQ(help.code, 0);
}

TEST_F(InspectCliTest, DiffListsWhatChangedFirst) {
  const Ran r = checkpoint("diff " + path("diff_a.pt") + " " + path("diff_b.pt"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("3 changed, 1 unchanged, 1 added, 1 removed, 1 mis-shaped"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("changed    emb"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rows 3, 7"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mis-shaped shape  [2, 3] -> [3, 2]"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(" same"), std::string::npos) << r.out;  // unchanged only with --unchanged
  EXPECT_LT(r.out.find(" h  "), r.out.find(" emb  "));         // by relative change

  const Ran j = checkpoint("diff --json --unchanged " + path("diff_a.pt") + " " + path("diff_b.pt"));
  ASSERT_EQ(j.code, 0) << j.out;
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc.at("changed"), 3);
  const auto& want = expected_->at("diff");
  bool sawEmb = false;
  for (const auto& t : doc.at("tensors")) {
    if (t.at("name") != "emb") continue;
    sawEmb = true;
    EXPECT_EQ(t.at("changed_rows"), want.at("emb").at("rows"));
    EXPECT_NEAR(t.at("relative_change").get<double>(), want.at("emb").at("relative").get<double>(), 1e-12);
  }
  EXPECT_TRUE(sawEmb);
  EXPECT_EQ(doc.at("tensors").size(), 7u);

  const Ran bad = checkpoint("diff " + path("diff_a.pt") + " " + path("missing.pt"));
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.out.find("missing.pt"), std::string::npos) << bad.out;
  EXPECT_EQ(checkpoint("diff " + path("diff_a.pt")).code, 2);
}

}  // namespace
