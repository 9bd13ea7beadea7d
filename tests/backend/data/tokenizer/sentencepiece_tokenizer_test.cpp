// SentencePiece against python3-sentencepiece (the oracle): a small model is
// trained at run time (bpe with byte fallback as LLaMA, and unigram), then the
// same strings are encoded by Python and by us.
#include <thread>

#include "backend/data/tokenizer/tokenizer.h"
#include "tests/backend/data/tokenizer/tokenizer_test_util.h"

namespace fs::data {
namespace {

using namespace fs::data::testing;
using nlohmann::json;

// argv: corpus, model prefix, model type, strings.json, out.json. LLaMA's ids: unk 0, bos 1, eos 2, no pad.
constexpr const char* kScript = R"(import json, sys
import sentencepiece as spm
corpus, prefix, kind, strings, out = sys.argv[1:6]
spm.SentencePieceTrainer.train(input=corpus, model_prefix=prefix, vocab_size=800, model_type=kind, hard_vocab_limit=False,
    character_coverage=1.0, byte_fallback=(kind == 'bpe'), unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
    num_threads=1, minloglevel=2)
sp = spm.SentencePieceProcessor(model_file=prefix + '.model')
with open(strings, encoding='utf-8') as f:
    texts = json.load(f)
with open(out, 'w') as f:
    json.dump({'ids': [sp.encode(t) for t in texts], 'pieces': sp.get_piece_size()}, f)
)";

struct Oracle {
  std::string modelPath;
  std::vector<std::vector<int64_t>> ids;
  int64_t pieces = 0;
};

Oracle trainAndEncode(const std::string& kind, const std::vector<std::string>& strings) {
  stdfs::path dir = scratchDir("sp_" + kind);
  std::string corpus;
  for (const std::string& s : variedStrings(4000, 11))
    corpus += s.empty() || s.find('\n') != s.npos ? "" : s + "\n";
  writeFile(dir / "corpus.txt", corpus);
  writeFile(dir / "oracle.py", kScript);
  writeFile(dir / "strings.json", json(strings).dump());
  int rc = 0;
  std::string out =
      runCommand(std::string(FS_PYTHON) + " " + (dir / "oracle.py").string() + " " +
                     (dir / "corpus.txt").string() + " " + (dir / "sp").string() + " " + kind + " " +
                     (dir / "strings.json").string() + " " + (dir / "out.json").string() + " 2>&1",
                 rc);
  EXPECT_EQ(rc, 0) << FS_PYTHON << " with sentencepiece failed (run scripts/install-deps.sh): " << out;
  if (rc != 0) return {};
  json result = json::parse(readFile(dir / "out.json"));
  return {(dir / "sp.model").string(), result["ids"].get<std::vector<std::vector<int64_t>>>(),
          result["pieces"].get<int64_t>()};
}

class SentencePiece : public ::testing::TestWithParam<std::string> {};

TEST_P(SentencePiece, MatchesPythonSentencePiece) {
  std::vector<std::string> strings = variedStrings(300, 424242);
  strings.push_back("hello world");
  strings.push_back(
      "</s>");  // python: plain text; ours: the parts around specials are checked separately below
  strings.push_back("<image>");
  Oracle oracle = trainAndEncode(GetParam(), strings);
  ASSERT_EQ(oracle.ids.size(), strings.size());
  auto loaded = loadTokenizer(oracle.modelPath, "llama");
  ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
  const Tokenizer& t = *loaded.value();
  const int64_t n = oracle.pieces;

  for (size_t i = 0; i + 2 < strings.size(); ++i) {
    std::vector<int64_t> expected = {1};  // LLaMA prepends <s>
    expected.insert(expected.end(), oracle.ids[i].begin(), oracle.ids[i].end());
    EXPECT_EQ(t.encode(strings[i]), expected) << "#" << i << ": " << json(strings[i]).dump();
  }
  EXPECT_EQ(t.bosId(), 1);
  EXPECT_EQ(t.eosId(), 2);
  EXPECT_EQ(t.eosToken(), "</s>");
  EXPECT_EQ(t.endofchunkId(), n);
  EXPECT_EQ(t.imageId(), n + 1);
  EXPECT_EQ(t.padId(), n + 2);  // LLaMA has no pad: <PAD> is added
  EXPECT_EQ(t.size(), n + 3);

  // Specials split the text first; each part is encoded on its own, as HF's LlamaTokenizer does.
  const auto& hello = oracle.ids[strings.size() - 3];
  std::vector<int64_t> expected = {1, n + 1};
  expected.insert(expected.end(), hello.begin(), hello.end());
  expected.insert(expected.end(), {n, 2});
  EXPECT_EQ(t.encode("<image>hello world<|endofchunk|></s>"), expected);
  EXPECT_EQ(t.decode(std::vector<int64_t>(expected.begin() + 1, expected.end())),
            "<image>hello world<|endofchunk|></s>");
  EXPECT_EQ(t.decode(t.encode("a dog on the beach")), "<s>a dog on the beach");
  EXPECT_EQ(t.tokenId("<unk>"), 0);
  EXPECT_FALSE(t.tokenId("no such piece"));

  // Concurrent encodes agree with the serial ones.
  std::vector<int> bad(4, 0);
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&, k] {
      for (size_t i = k; i + 2 < strings.size(); i += 2)
        if (t.encode(strings[i]).size() != oracle.ids[i].size() + 1) ++bad[k];
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad, std::vector<int>(4, 0));

  // Invalid UTF-8 must not crash (SentencePiece's normalizer replaces it).
  EXPECT_FALSE(t.encode(std::string("\xff\xfe\x80 ok \xc3", 9)).empty());
}

INSTANTIATE_TEST_SUITE_P(Models, SentencePiece, ::testing::Values("bpe", "unigram"));

// A unigram model with a zero-length piece: libsentencepiece throws from its
// trie builder; the shim turns that into an error naming the file (the input
// the sentencepiece fuzzer found).
TEST(SentencePieceErrors, ModelThatMakesSentencePieceThrowIsAnError) {
  const std::string path =
      std::string(FS_SOURCE_DIR) + "/fuzz/regressions/sentencepiece/unigram_empty_piece.model";
  auto loaded = loadTokenizer(path, "llama");
  ASSERT_FALSE(loaded.isOk());
  EXPECT_NE(loaded.status().message().find(path), std::string::npos) << loaded.status().message();
  EXPECT_NE(loaded.status().message().find("not a SentencePiece model"), std::string::npos)
      << loaded.status().message();
}

}  // namespace
}  // namespace fs::data
