// Bad tokenizer files: each is rejected with a Status whose message names the
// file and the field or line at fault; nothing crashes.
#include "backend/data/tokenizer/json_file.h"
#include "backend/data/tokenizer/tokenizer.h"
#include "tests/backend/data/tokenizer/tokenizer_test_util.h"

namespace fs::data {
namespace {

using namespace fs::data::testing;
using nlohmann::json;
using protocol::Status;

// A complete byte-level vocabulary (the 256 byte tokens of GPT-2's table) plus a few merges' results.
json tinyVocab() {
  json vocab = json::object();
  int id = 0;
  for (int b = 0; b < 256; ++b) {
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    if (printable)
      vocab[b < 0x80 ? std::string(1, char(b))
                     : std::string{char(0xC0 | (b >> 6)), char(0x80 | (b & 0x3F))}] = id++;
  }
  for (int extra = 0; extra < 68; ++extra) {  // the remapped control and space bytes: U+0100..U+0143
    int cp = 256 + extra;
    vocab[std::string{char(0xC0 | (cp >> 6)), char(0x80 | (cp & 0x3F))}] = id++;
  }
  vocab["he"] = id++;
  vocab["<|endoftext|>"] = id++;
  return vocab;
}

json tokenizerJson(json model) {
  return json{{"added_tokens", json::array()},
              {"normalizer", nullptr},
              {"pre_tokenizer", json{{"type", "ByteLevel"}, {"add_prefix_space", false}}},
              {"model", std::move(model)}};
}

json bpeModel() {
  return json{{"type", "BPE"}, {"vocab", tinyVocab()}, {"merges", json::array({"h e"})}};
}

Status loadStatus(const stdfs::path& path, const std::string& family = "gpt_neox") {
  auto t = loadTokenizer(path.string(), family);
  return t.isOk() ? Status::ok() : t.status();
}

#define EXPECT_MESSAGE_HAS(status, ...)                                                             \
  do {                                                                                              \
    Status s_ = (status);                                                                           \
    EXPECT_FALSE(s_.isOk());                                                                        \
    for (const char* part : {__VA_ARGS__})                                                          \
      EXPECT_NE(s_.message().find(part), std::string::npos) << part << " not in: " << s_.message(); \
  } while (0)

TEST(TokenizerErrors, TinyValidFilesLoad) {
  stdfs::path dir = scratchDir("err_valid");
  writeFile(dir / "tokenizer.json", tokenizerJson(bpeModel()).dump());
  auto t = loadTokenizer(dir.string(), "gpt_neox");
  ASSERT_TRUE(t.isOk()) << t.status().toString();
  EXPECT_EQ(t.value()->decode(t.value()->encode("hehe \xff")), "hehe \xff");
}

TEST(TokenizerErrors, MissingFiles) {
  stdfs::path dir = scratchDir("err_missing");
  EXPECT_MESSAGE_HAS(loadStatus(dir / "nowhere"), "nowhere", "no such file");
  EXPECT_MESSAGE_HAS(loadStatus(dir), "err_missing", "no tokenizer files");
  writeFile(dir / "vocab.json", tinyVocab().dump());
  EXPECT_MESSAGE_HAS(loadStatus(dir), "merges.txt", "cannot open");
  EXPECT_EQ(loadStatus(dir).code(), Status::Code::kNotFound);
}

TEST(TokenizerErrors, MalformedJson) {
  stdfs::path dir = scratchDir("err_json");
  writeFile(dir / "vocab.json", "{\"a\": 0, ");
  writeFile(dir / "merges.txt", "#version: 0.2\n");
  EXPECT_MESSAGE_HAS(loadStatus(dir), "vocab.json", "invalid JSON");
  writeFile(dir / "vocab.json", json{{"a", "zero"}}.dump());
  EXPECT_MESSAGE_HAS(loadStatus(dir), "vocab.json", "\"a\"", "not an integer");

  stdfs::path dir2 = scratchDir("err_json2");
  writeFile(dir2 / "tokenizer.json", "[1, 2");
  EXPECT_MESSAGE_HAS(loadStatus(dir2), "tokenizer.json", "invalid JSON");
  json bad = tokenizerJson(bpeModel());
  bad["model"]["vocab"] = json::array();
  writeFile(dir2 / "tokenizer.json", bad.dump());
  EXPECT_MESSAGE_HAS(loadStatus(dir2), "tokenizer.json", "model.vocab");
  bad = tokenizerJson(bpeModel());
  bad["model"]["merges"] = json::array({"h e", "abc"});
  writeFile(dir2 / "tokenizer.json", bad.dump());
  EXPECT_MESSAGE_HAS(loadStatus(dir2), "tokenizer.json", "model.merges[1]", "abc");
  bad = tokenizerJson(bpeModel());
  bad["added_tokens"] = json::array({json{{"content", "<x>"}}});
  writeFile(dir2 / "tokenizer.json", bad.dump());
  EXPECT_MESSAGE_HAS(loadStatus(dir2), "tokenizer.json", "added_tokens[0].id");
  bad = tokenizerJson(bpeModel());
  bad["pre_tokenizer"] = "ByteLevel";  // a string where an object belongs
  writeFile(dir2 / "tokenizer.json", bad.dump());
  EXPECT_MESSAGE_HAS(loadStatus(dir2), "tokenizer.json");

  writeFile(dir2 / "tokenizer.json", tokenizerJson(bpeModel()).dump());
  writeFile(dir2 / "special_tokens_map.json", "{\"eos_token\": ");
  EXPECT_MESSAGE_HAS(loadStatus(dir2), "special_tokens_map.json", "invalid JSON");
  writeFile(dir2 / "special_tokens_map.json", json{{"eos_token", 5}}.dump());
  EXPECT_MESSAGE_HAS(loadStatus(dir2), "special_tokens_map.json", "eos_token");
}

// A sparse file one byte over the limit: refused by its size, before it is read.
void writeOversized(const stdfs::path& path) {
  writeFile(path, "");
  stdfs::resize_file(path, detail::kMaxTokenizerFileBytes + 1);
}

TEST(TokenizerErrors, OversizedFilesAreRefusedNamingTheLimit) {
  const std::string size = std::to_string(detail::kMaxTokenizerFileBytes + 1) + " bytes";
  const std::string limit = "over the limit of " + std::to_string(detail::kMaxTokenizerFileBytes) + " bytes";
  stdfs::path dir = scratchDir("err_oversized_json");
  writeOversized(dir / "tokenizer.json");
  EXPECT_MESSAGE_HAS(loadStatus(dir), "tokenizer.json", size.c_str(), limit.c_str());

  stdfs::path merges = scratchDir("err_oversized_merges");
  writeFile(merges / "vocab.json", tinyVocab().dump());
  writeOversized(merges / "merges.txt");
  EXPECT_MESSAGE_HAS(loadStatus(merges), "merges.txt", size.c_str(), limit.c_str());

  stdfs::path beside = scratchDir("err_oversized_beside");
  writeFile(beside / "tokenizer.json", tokenizerJson(bpeModel()).dump());
  writeOversized(beside / "special_tokens_map.json");
  EXPECT_MESSAGE_HAS(loadStatus(beside), "special_tokens_map.json", size.c_str(), limit.c_str());

  stdfs::path spm = scratchDir("err_oversized_spm");
  writeOversized(spm / "tokenizer.model");
  EXPECT_MESSAGE_HAS(loadStatus(spm, "llama"), "tokenizer.model", size.c_str(), limit.c_str());
}

TEST(TokenizerErrors, DeeplyNestedPreTokenizerSequenceIsRefused) {
  stdfs::path dir = scratchDir("err_nested_sequence");
  json pre = json{{"type", "ByteLevel"}};
  for (int i = 0; i < 9; ++i) pre = json{{"type", "Sequence"}, {"pretokenizers", json::array({pre})}};
  json doc = tokenizerJson(bpeModel());
  doc["pre_tokenizer"] = pre;
  writeFile(dir / "tokenizer.json", doc.dump());
  EXPECT_MESSAGE_HAS(loadStatus(dir), "tokenizer.json", "nested deeper than 8");
  // Eight levels are still read.
  doc["pre_tokenizer"] = pre["pretokenizers"][0];
  writeFile(dir / "tokenizer.json", doc.dump());
  EXPECT_TRUE(loadStatus(dir).isOk()) << loadStatus(dir).toString();
}

TEST(TokenizerErrors, UnsupportedModels) {
  stdfs::path dir = scratchDir("err_unsupported");
  auto check = [&](json doc, std::initializer_list<const char*> parts) {
    writeFile(dir / "tokenizer.json", doc.dump());
    Status s = loadStatus(dir / "tokenizer.json");
    EXPECT_EQ(s.code(), Status::Code::kUnsupported) << s.toString();
    EXPECT_NE(s.message().find("tokenizer.json"), std::string::npos) << s.message();
    for (const char* part : parts)
      EXPECT_NE(s.message().find(part), std::string::npos) << part << ": " << s.message();
  };
  check(tokenizerJson(json{{"type", "WordPiece"}, {"vocab", json::object()}}), {"model.type", "WordPiece"});
  check(tokenizerJson(json{{"type", "Unigram"}, {"vocab", json::array()}}), {"model.type", "Unigram"});
  json model = bpeModel();
  model["byte_fallback"] = true;  // LLaMA-style BPE: GPT-2's byte-level pre-tokenizer makes no sense with it
  check(tokenizerJson(model), {"pre_tokenizer.type", "ByteLevel", "byte-fallback"});
  json doc = tokenizerJson(bpeModel());
  doc["pre_tokenizer"] =
      json{{"type", "Sequence"},
           {"pretokenizers", json::array({json{{"type", "Split"}}, json{{"type", "ByteLevel"}}})}};
  check(doc, {"pre_tokenizer.pretokenizers[0].type", "Split"});
  doc = tokenizerJson(bpeModel());
  doc["normalizer"] = json{{"type", "Lowercase"}};
  check(doc, {"normalizer.type", "Lowercase"});
  EXPECT_MESSAGE_HAS(loadStatus(dir / "tokenizer.json", "bert"), "bert", "opt, gpt_neox, mpt, llama");
}

// LLaMA's layout (NOTE [Metaspace BPE]): each part we do not implement is named.
TEST(TokenizerErrors, MetaspaceVariants) {
  stdfs::path dir = scratchDir("err_metaspace");
  auto status = [&](const json& doc) {
    writeFile(dir / "tokenizer.json", doc.dump());
    return loadStatus(dir / "tokenizer.json", "llama");
  };
  json model = json{{"type", "BPE"},
                    {"byte_fallback", true},
                    {"fuse_unk", true},
                    {"unk_token", "<unk>"},
                    {"vocab", json{{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}, {"h", 3}, {"e", 4}, {"he", 5}}},
                    {"merges", json::array({json::array({"h", "e"})})}};
  json metaspace =
      json{{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "first"}, {"split", false}};
  json doc = json{{"normalizer", nullptr},
                  {"pre_tokenizer", metaspace},
                  {"model", model},
                  {"decoder", json{{"type", "Fuse"}}}};
  EXPECT_TRUE(status(doc).isOk()) << status(doc).toString();

  doc["pre_tokenizer"]["prepend_scheme"] = "sometimes";
  EXPECT_MESSAGE_HAS(status(doc), "tokenizer.json", "pre_tokenizer.prepend_scheme");
  doc["pre_tokenizer"] = metaspace;
  doc["pre_tokenizer"]["replacement"] = "__";  // HF reads one character
  EXPECT_MESSAGE_HAS(status(doc), "tokenizer.json", "pre_tokenizer.replacement", "one character");
  doc["pre_tokenizer"] = json{{"type", 42}};  // a type that is not a string is named as written
  EXPECT_MESSAGE_HAS(status(doc), "tokenizer.json", "pre_tokenizer.type \"42\"");
  doc["pre_tokenizer"] = json{{"type", "Whitespace"}};
  EXPECT_MESSAGE_HAS(status(doc), "tokenizer.json", "pre_tokenizer.type", "Whitespace");
  doc["pre_tokenizer"] = metaspace;
  doc["normalizer"] =
      json{{"type", "Sequence"},
           {"normalizers",
            json::array({json{{"type", "Prepend"}, {"prepend", "▁"}}, json{{"type", "Lowercase"}}})}};
  EXPECT_MESSAGE_HAS(status(doc), "tokenizer.json", "normalizer.normalizers[1].type", "Lowercase");
  json doubling = json::array();  // each step doubles the text: bounded by refusing more than 8
  for (int i = 0; i < 9; ++i)
    doubling.push_back(json{{"type", "Replace"}, {"pattern", json{{"String", "h"}}}, {"content", "hh"}});
  doc["normalizer"] = json{{"type", "Sequence"}, {"normalizers", doubling}};
  EXPECT_MESSAGE_HAS(status(doc), "tokenizer.json", "normalizer.normalizers[8]", "more than 8");
  doc["normalizer"] = json{{"type", "Replace"}, {"pattern", json{{"Regex", " +"}}}, {"content", "▁"}};

  EXPECT_MESSAGE_HAS(status(doc), "tokenizer.json", "normalizer.pattern", "Regex");
  doc["normalizer"] = nullptr;
  doc["decoder"] = json{{"type", "Sequence"}, {"decoders", json::array({json{{"type", "ByteLevel"}}})}};
  EXPECT_MESSAGE_HAS(status(doc), "tokenizer.json", "decoder.decoders[0].type", "ByteLevel");
  doc["decoder"] = json{{"type", "Strip"}, {"content", " "}, {"start", -1}, {"stop", 0}};
  EXPECT_MESSAGE_HAS(status(doc), "tokenizer.json", "decoder.start");
  doc["decoder"] = json{{"type", "Fuse"}};
  auto special = [](const char* id) { return json{{"SpecialToken", json{{"id", id}, {"type_id", 0}}}}; };
  json text = json{{"Sequence", json{{"id", "A"}, {"type_id", 0}}}};
  doc["post_processor"] =
      json{{"type", "TemplateProcessing"}, {"single", json::array({text, special("</s>")})}};
  EXPECT_MESSAGE_HAS(status(doc), "tokenizer.json", "post_processor.single[1]", "</s>", "after the text");
  doc["post_processor"] =
      json{{"type", "TemplateProcessing"}, {"single", json::array({special("<s>"), special("</s>"), text})}};
  EXPECT_MESSAGE_HAS(status(doc), "tokenizer.json", "post_processor.single", "2 special tokens");
  doc["post_processor"] = nullptr;
  doc["model"]["unk_token"] = "<missing>";
  EXPECT_MESSAGE_HAS(status(doc), "tokenizer.json", "model.unk_token", "<missing>");
  doc["model"]["unk_token"] = "<unk>";
  doc["model"]["merges"] = json::array({json::array({"e", "h"})});  // "eh" is not a token
  EXPECT_MESSAGE_HAS(status(doc), "tokenizer.json", "model.merges[0]", "\"eh\"");
}

TEST(TokenizerErrors, VocabularyAndMergesDisagree) {
  stdfs::path dir = scratchDir("err_merges");
  writeFile(dir / "vocab.json", tinyVocab().dump());
  writeFile(dir / "merges.txt", "#version: 0.2\nh e\nhe llo\n");
  EXPECT_MESSAGE_HAS(loadStatus(dir), "merges.txt line 3", "\"llo\"", "vocab.json");
  writeFile(dir / "merges.txt", "h e\nx y\n");  // no header; "xy" is not a token
  EXPECT_MESSAGE_HAS(loadStatus(dir), "merges.txt line 2", "\"xy\"");
  writeFile(dir / "merges.txt", "h e\nthree parts here\n");
  EXPECT_MESSAGE_HAS(loadStatus(dir), "merges.txt line 2", "three parts here");

  json vocab = tinyVocab();
  vocab.erase("A");
  writeFile(dir / "vocab.json", vocab.dump());
  writeFile(dir / "merges.txt", "h e\n");
  EXPECT_MESSAGE_HAS(loadStatus(dir), "vocab.json", "byte 0x41");
  vocab = tinyVocab();
  vocab["dup"] = 0;
  writeFile(dir / "vocab.json", vocab.dump());
  EXPECT_MESSAGE_HAS(loadStatus(dir), "vocab.json", "id 0");
  vocab = tinyVocab();
  vocab.erase("<|endoftext|>");  // gpt_neox needs it as eos
  writeFile(dir / "vocab.json", vocab.dump());
  EXPECT_MESSAGE_HAS(loadStatus(dir), "vocab.json", "eos", "<|endoftext|>");
}

TEST(TokenizerErrors, BadSentencePieceModel) {
  stdfs::path dir = scratchDir("err_sp");
  writeFile(dir / "tokenizer.model", "not a protobuf at all");
  EXPECT_MESSAGE_HAS(loadStatus(dir, "llama"), "tokenizer.model", "SentencePiece");
}

}  // namespace
}  // namespace fs::data
