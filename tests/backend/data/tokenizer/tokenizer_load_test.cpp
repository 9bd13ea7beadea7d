// Loading: tokenizer.json (both merges formats, Sequence pre-tokenizer,
// add_prefix_space) must give the same ids as GPT-2's vocab.json + merges.txt;
// an OPT-like directory takes BOS/eos/pad from special_tokens_map.json. Every
// file here is built at run time from the byte-level BPE that Hugging Face's
// tokenizers trains (tokenizer_test_util.h), whose GPT-2 layout bpe_tokenizer_test
// holds to transformers.
#include "backend/data/tokenizer/tokenizer.h"
#include "tests/backend/data/tokenizer/tokenizer_test_util.h"

namespace fs::data {
namespace {

using namespace fs::data::testing;
using nlohmann::json;

struct Gpt2Files {
  json vocab;  // token -> id
  std::vector<std::pair<std::string, std::string>> merges;
};

Gpt2Files readGpt2Files(const std::string& dir) {
  Gpt2Files f;
  f.vocab = json::parse(readFile(dir + "/vocab.json"));
  std::istringstream lines(readFile(dir + "/merges.txt"));
  std::string line;
  while (std::getline(lines, line)) {
    size_t space = line.find(' ');
    if (line.empty() || line[0] == '#' || space == std::string::npos) continue;
    f.merges.emplace_back(line.substr(0, space), line.substr(space + 1));
  }
  return f;
}

// A Hugging Face tokenizer.json of GPT-2, merges as "a b" strings or [a, b] pairs.
json tokenizerJson(const Gpt2Files& f, bool pairMerges, json preTokenizer) {
  json merges = json::array();
  for (const auto& [a, b] : f.merges) merges.push_back(pairMerges ? json::array({a, b}) : json(a + " " + b));
  return json{
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", json::array({json{{"id", f.vocab.at("<|endoftext|>").get<int64_t>()},
                                         {"content", "<|endoftext|>"},
                                         {"single_word", false},
                                         {"lstrip", false},
                                         {"rstrip", false},
                                         {"normalized", true},
                                         {"special", true}}})},
      {"normalizer", nullptr},
      {"pre_tokenizer", preTokenizer},
      {"post_processor", json{{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}}},
      {"decoder", json{{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}}},
      {"model", json{{"type", "BPE"},
                     {"dropout", nullptr},
                     {"unk_token", nullptr},
                     {"continuing_subword_prefix", ""},
                     {"end_of_word_suffix", ""},
                     {"fuse_unk", false},
                     {"byte_fallback", false},
                     {"vocab", f.vocab},
                     {"merges", merges}}}};
}

json byteLevel(bool addPrefixSpace) {
  return json{{"type", "ByteLevel"},
              {"add_prefix_space", addPrefixSpace},
              {"trim_offsets", true},
              {"use_regex", true}};
}

std::unique_ptr<Tokenizer> load(const std::string& path, const std::string& family) {
  auto t = loadTokenizer(path, family);
  EXPECT_TRUE(t.isOk()) << t.status().toString();
  return t.isOk() ? std::move(t).value() : nullptr;
}

// The trained files and the reference tokenizer are made once for the suite.
class TokenizerLoad : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const TrainedBpe& bpe = trainedBpe();
    error_ = bpe.error;
    if (bpe.dir.empty()) return;
    dir_ = bpe.dir + "/gpt2";
    files_ = readGpt2Files(dir_);
    reference_ = load(dir_, "gpt_neox").release();
  }
  static void TearDownTestSuite() { delete reference_; }
  void SetUp() override {
    ASSERT_FALSE(dir_.empty()) << error_;
    ASSERT_NE(reference_, nullptr);
    vocab_ = int64_t(files_.vocab.size());
  }
  static std::string dir_, error_;
  static Gpt2Files files_;
  static Tokenizer*
      reference_;      // from vocab.json + merges.txt, checked against transformers in bpe_tokenizer_test
  int64_t vocab_ = 0;  // the trained vocabulary's size
};
std::string TokenizerLoad::dir_, TokenizerLoad::error_;
Gpt2Files TokenizerLoad::files_;
Tokenizer* TokenizerLoad::reference_ = nullptr;

TEST_F(TokenizerLoad, TokenizerJsonMatchesVocabAndMerges) {
  std::vector<std::string> strings = variedStrings(500, 31337);
  strings.push_back("<image>hello<|endofchunk|>");
  struct Variant {
    const char* name;
    bool pairMerges;
    json pre;
  } variants[] = {
      {"string_merges", false, byteLevel(false)},
      {"pair_merges", true, byteLevel(false)},
      {"sequence", false, json{{"type", "Sequence"}, {"pretokenizers", json::array({byteLevel(false)})}}}};
  for (const Variant& v : variants) {
    stdfs::path dir = scratchDir(std::string("json_") + v.name);
    writeFile(dir / "tokenizer.json", tokenizerJson(files_, v.pairMerges, v.pre).dump());
    auto t = load(dir.string(), "gpt_neox");
    ASSERT_NE(t, nullptr) << v.name;
    EXPECT_EQ(t->size(), vocab_ + 3) << v.name;
    EXPECT_EQ(t->specialTokenIds(), reference_->specialTokenIds()) << v.name;
    for (const std::string& s : strings)
      EXPECT_EQ(t->encode(s), reference_->encode(s)) << v.name << ": " << s;
  }
}

TEST_F(TokenizerLoad, AddPrefixSpaceAppliesPerSegment) {
  stdfs::path dir = scratchDir("json_prefix");
  writeFile(dir / "tokenizer.json", tokenizerJson(files_, false, byteLevel(true)).dump());
  auto t = load((dir / "tokenizer.json").string(), "gpt_neox");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->encode("hello world"), reference_->encode(" hello world"));
  EXPECT_EQ(t->encode(" hello"), reference_->encode(" hello"));
  std::vector<int64_t> expected = {t->imageId()};
  for (int64_t id : reference_->encode(" a dog")) expected.push_back(id);
  expected.push_back(t->endofchunkId());
  EXPECT_EQ(t->encode("<image>a dog<|endofchunk|>"), expected);

  // tokenizer_config.json's add_prefix_space applies to GPT-2 style files too.
  stdfs::path gpt2 = scratchDir("gpt2_prefix");
  stdfs::copy_file(dir_ + "/vocab.json", gpt2 / "vocab.json");
  stdfs::copy_file(dir_ + "/merges.txt", gpt2 / "merges.txt");
  writeFile(gpt2 / "tokenizer_config.json", json{{"add_prefix_space", true}}.dump());
  auto fromConfig = load(gpt2.string(), "gpt_neox");
  ASSERT_NE(fromConfig, nullptr);
  EXPECT_EQ(fromConfig->encode("<image>a dog<|endofchunk|>"), expected);
}

TEST_F(TokenizerLoad, OptDirectoryTakesSpecialsFromFiles) {
  // OPT's layout: <s>=0 <pad>=1 </s>=2 <unk>=3, then the GPT-2 tokens.
  stdfs::path dir = scratchDir("opt");
  json vocab = {{"<s>", 0}, {"<pad>", 1}, {"</s>", 2}, {"<unk>", 3}};
  for (const auto& [token, id] : files_.vocab.items()) vocab[token] = id.get<int64_t>() + 4;
  writeFile(dir / "vocab.json", vocab.dump());
  std::string merges = "#version: 0.2\n";
  for (const auto& [a, b] : files_.merges) merges += a + " " + b + "\n";
  writeFile(dir / "merges.txt", merges);
  writeFile(dir / "special_tokens_map.json",
            json{{"bos_token", "</s>"},
                 {"eos_token", "</s>"},
                 {"unk_token", "<unk>"},
                 {"pad_token", json{{"content", "<pad>"}, {"lstrip", false}}}}
                .dump());
  auto t = load(dir.string(), "opt");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->bosId(), 2);
  EXPECT_EQ(t->eosId(), 2);
  EXPECT_EQ(t->eosToken(), "</s>");
  EXPECT_EQ(t->padId(), 1);  // OPT has a pad token: no <PAD>
  EXPECT_EQ(t->endofchunkId(), vocab_ + 4);
  EXPECT_EQ(t->imageId(), vocab_ + 5);
  EXPECT_EQ(t->size(), vocab_ + 6);
  EXPECT_FALSE(t->tokenId("<PAD>"));
  for (const std::string& s : variedStrings(200, 5)) {
    std::vector<int64_t> expected = {2};
    for (int64_t id : reference_->encode(s)) expected.push_back(id + 4);
    EXPECT_EQ(t->encode(s), expected) << s;
  }
  // OPT's declared specials are matched whole; <s> is not one of them (as in HF), so it is plain text.
  EXPECT_EQ(t->encode("</s>x<unk><pad>"), (std::vector<int64_t>{2, 2, reference_->encode("x")[0] + 4, 3, 1}));
  EXPECT_NE(t->encode("<s>"), (std::vector<int64_t>{2, 0}));
  // The family alone (no special_tokens_map.json) gives the same answer.
  stdfs::remove(dir / "special_tokens_map.json");
  auto bare = load((dir / "merges.txt").string(), "opt");
  ASSERT_NE(bare, nullptr);
  EXPECT_EQ(bare->specialTokenIds(), t->specialTokenIds());
  EXPECT_EQ(bare->bosId(), 2);
}

// NOTE [Generic tokenizer class] (tokenizer_load.cpp): what PreTrainedTokenizerFast.save_pretrained
// writes runs tokenizer.json as saved in transformers 5: no OPT bos without a template or add_bos_token.
TEST_F(TokenizerLoad, GenericTokenizerClassAddsNoFamilyBos) {
  stdfs::path dir = scratchDir("generic_class");
  writeFile(dir / "tokenizer.json", tokenizerJson(files_, false, byteLevel(false)).dump());
  const std::vector<int64_t> plain = reference_->encode("hello world");
  for (const char* cls : {"TokenizersBackend", "PreTrainedTokenizerFast", "GPT2Tokenizer"}) {
    json config = {{"tokenizer_class", cls}, {"bos_token", "<|endoftext|>"}, {"eos_token", "<|endoftext|>"}};
    writeFile(dir / "tokenizer_config.json", config.dump());
    auto t = load(dir.string(), "opt");
    ASSERT_NE(t, nullptr) << cls;
    const bool generic = std::string(cls) != "GPT2Tokenizer";
    EXPECT_EQ(t->bosId().has_value(), !generic) << cls;
    std::vector<int64_t> expected = plain;
    if (!generic) expected.insert(expected.begin(), *t->bosId());
    EXPECT_EQ(t->encode("hello world"), expected) << cls;
    config["add_bos_token"] = true;  // declared: it wins, as before
    writeFile(dir / "tokenizer_config.json", config.dump());
    auto declared = load(dir.string(), "opt");
    ASSERT_NE(declared, nullptr) << cls;
    EXPECT_TRUE(declared->bosId().has_value()) << cls;
  }
}

TEST_F(TokenizerLoad, ExistingOpenFlamingoTokensAreKept) {
  // A tokenizer saved after OpenFlamingo's additions: nothing is added twice.
  stdfs::path dir = scratchDir("saved");
  json doc = tokenizerJson(files_, false, byteLevel(false));
  doc["added_tokens"].push_back(json{{"id", vocab_}, {"content", "<|endofchunk|>"}, {"special", true}});
  doc["added_tokens"].push_back(json{{"id", vocab_ + 1}, {"content", "<image>"}, {"special", true}});
  doc["added_tokens"].push_back(json{{"id", vocab_ + 2}, {"content", "<PAD>"}, {"special", true}});
  writeFile(dir / "tokenizer.json", doc.dump());
  writeFile(dir / "tokenizer_config.json", json{{"pad_token", "<PAD>"}, {"add_bos_token", false}}.dump());
  auto t = load(dir.string(), "mpt");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->specialTokenIds(), reference_->specialTokenIds());
  EXPECT_EQ(t->size(), vocab_ + 3);
}

}  // namespace
}  // namespace fs::data
