// Byte-level BPE against Hugging Face's own code: a BPE trained by tokenizers on
// generated text, saved in GPT-2's file layout and as a tokenizer.json, loaded by
// transformers with OpenFlamingo's added tokens; ours must give the same ids, id
// for id, and the same decoded text on more than 10,000 strings.
#include <thread>

#include "backend/data/tokenizer/tokenizer.h"
#include "tests/backend/data/tokenizer/tokenizer_test_util.h"

namespace fs::data {
namespace {

using namespace fs::data::testing;
using nlohmann::json;

// The strings both sides encode: 10,000 varied strings (scripts, emoji, combining
// marks, whitespace runs, numbers, punctuation), 1,000 with the added tokens
// between them, and edge cases.
std::vector<std::string> testStrings() {
  std::vector<std::string> s = variedStrings(10000, 20240611);
  for (std::string& t : stringsWithAddedTokens(1000, 77)) s.push_back(std::move(t));
  for (const char* edge :
       {"", " ", "hello", " world", "<image>", "<image><image>", "<|endofchunk|><PAD><PAD>",
        "<image>hello<|endofchunk|> world<|endoftext|>", "<imag e>", "<|endofchunk|", "<PAD"})
    s.push_back(edge);
  s.push_back(std::string(1000, 'a'));  // long runs: the merge queue and the regex on long matches
  s.push_back(std::string(500, ' ') + "x" + std::string(500, '\n'));
  s.push_back("1234567890 00000000000 3.14159 -42 1e10 0x1F 12,345,678");
  s.push_back(" \t \n\n\n   \u3000\u00a0 x  \t");
  return s;
}

// Per layout (GPT-2's vocab.json + merges.txt, or tokenizer.json): our tokenizer and
// transformers' answers, made once for the suite (the oracle takes seconds to start).
class HfBpe : public ::testing::TestWithParam<std::string> {
 protected:
  struct Side {
    std::unique_ptr<Tokenizer> ours;
    HfEncoding hf;
    std::string error;
  };
  static std::vector<std::string>& strings() {
    static std::vector<std::string> s = testStrings();
    return s;
  }
  static Side& side(const std::string& layout) {
    static std::map<std::string, Side> sides;
    auto it = sides.find(layout);
    if (it != sides.end()) return it->second;
    Side& s = sides[layout];
    const TrainedBpe& bpe = trainedBpe();
    if (bpe.dir.empty()) {
      s.error = bpe.error;
      return s;
    }
    std::string dir = bpe.dir + "/" + layout;
    auto t = loadTokenizer(dir, "gpt_neox");  // gpt_neox: no BOS, eos <|endoftext|>, as GPT-2
    if (!t.isOk()) {
      s.error = t.status().toString();
      return s;
    }
    s.ours = std::move(t).value();
    s.hf = hfEncode(layout, dir, strings());
    s.error = s.hf.error;
    return s;
  }
  void SetUp() override {
    Side& s = side(GetParam());
    ASSERT_TRUE(s.error.empty()) << s.error;
    ASSERT_EQ(s.hf.ids.size(), strings().size());
    ours_ = s.ours.get();
    hf_ = &s.hf;
  }
  Tokenizer* ours_ = nullptr;
  const HfEncoding* hf_ = nullptr;
};

TEST_P(HfBpe, MatchesTransformersIdForId) {
  const auto& all = strings();
  ASSERT_GE(all.size(), 10000u);
  int mismatches = 0;
  for (size_t i = 0; i < all.size() && mismatches < 5; ++i) {
    std::vector<int64_t> ids = ours_->encode(all[i]);
    if (ids != hf_->ids[i]) ++mismatches;
    EXPECT_EQ(ids, hf_->ids[i]) << "string #" << i << ": " << json(all[i]).dump();
    EXPECT_EQ(ours_->decode(ids), hf_->decoded[i]) << "decode of #" << i;
    EXPECT_EQ(ours_->decode(ids), all[i]) << "round trip of #" << i;
  }
  EXPECT_EQ(mismatches, 0);
}

TEST_P(HfBpe, AddedTokensAreOpenFlamingos) {
  EXPECT_EQ(ours_->size(), hf_->size);
  EXPECT_EQ(ours_->eosToken(), "<|endoftext|>");
  EXPECT_EQ(ours_->eosId(), hf_->added.at("<|endoftext|>"));
  EXPECT_EQ(ours_->endofchunkId(), hf_->added.at("<|endofchunk|>"));
  EXPECT_EQ(ours_->imageId(), hf_->added.at("<image>"));
  EXPECT_EQ(ours_->padId(), hf_->added.at("<PAD>"));  // the trained BPE has no pad: <PAD> is added
  EXPECT_EQ(ours_->tokenId("<PAD>"), hf_->added.at("<PAD>"));
  EXPECT_FALSE(ours_->bosId());
  EXPECT_FALSE(ours_->tokenId("no such token"));
  // The three added after the trained vocabulary, in OpenFlamingo's order.
  EXPECT_EQ(ours_->imageId(), ours_->endofchunkId() + 1);
  EXPECT_EQ(ours_->padId(), ours_->endofchunkId() + 2);
  EXPECT_EQ(ours_->size(), ours_->padId() + 1);
}

INSTANTIATE_TEST_SUITE_P(Layouts, HfBpe, ::testing::Values("gpt2", "json"));

// Our own behaviour beyond what transformers can be asked (it takes text, not bytes).
class Gpt2Bpe : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const TrainedBpe& bpe = trainedBpe();
    loadError_ = bpe.error;
    if (bpe.dir.empty()) return;
    auto t = loadTokenizer(bpe.dir + "/gpt2", "gpt_neox");
    if (!t.isOk()) {
      loadError_ = t.status().toString();
      return;
    }
    tokenizer_ = std::move(t).value().release();
  }
  static void TearDownTestSuite() { delete tokenizer_; }
  void SetUp() override { ASSERT_NE(tokenizer_, nullptr) << loadError_; }
  static std::string loadError_;
  static Tokenizer* tokenizer_;
};
std::string Gpt2Bpe::loadError_;
Tokenizer* Gpt2Bpe::tokenizer_ = nullptr;

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
  std::vector<int64_t> hello = tokenizer_->encode("hello");
  hello.insert(hello.begin(), {-1, 1 << 30});
  EXPECT_EQ(tokenizer_->decode(hello), "hello");  // out-of-range ids are skipped
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

}  // namespace
}  // namespace fs::data
