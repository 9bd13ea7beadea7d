// Readers of byte-level BPE files: GPT-2's vocab.json + merges.txt and Hugging
// Face's tokenizer.json. They only parse and check the structure; token-level
// checks (merges against the vocab) are BpeTokenizer::create's.
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "backend/data/tokenizer/bpe_tokenizer.h"
#include "backend/data/tokenizer/json_file.h"

namespace fs::data::detail {
namespace {

using nlohmann::json;
using protocol::Status;

Status readVocabObject(const json& vocab, const std::string& where, BpeSpec& spec) {
  if (!vocab.is_object()) return Status::corruption(where + ": expected an object of token -> id");
  spec.vocab.reserve(vocab.size());
  for (const auto& [token, id] : vocab.items()) {
    if (!id.is_number_integer())
      return Status::corruption(where + ": the id of token \"" + token + "\" is not an integer");
    spec.vocab.emplace_back(token, id.get<int64_t>());
  }
  return Status::ok();
}

// "a b" (split at the one space; GPT-2 tokens hold no space) or ["a", "b"].
Status readMergesArray(const json& merges, const std::string& where, BpeSpec& spec) {
  if (!merges.is_array()) return Status::corruption(where + ": expected an array");
  spec.merges.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const json& m = merges[i];
    std::string at = "model.merges[" + std::to_string(i) + "]";
    if (m.is_string()) {
      const std::string& s = m.get_ref<const std::string&>();
      size_t space = s.find(' ');
      if (space == std::string::npos || space == 0 || space + 1 == s.size() ||
          s.find(' ', space + 1) != s.npos)
        return Status::corruption(where + "[" + std::to_string(i) + "]: \"" + s +
                                  "\" is not two tokens \"a b\"");
      spec.merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      spec.merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      return Status::corruption(where + "[" + std::to_string(i) + "]: expected \"a b\" or [\"a\", \"b\"]");
    }
    spec.mergeWhere.push_back(at);
  }
  return Status::ok();
}

// Sequences inside sequences, at most (real files nest none); deeper is refused
// rather than recursed into.
constexpr int kMaxPreTokenizerDepth = 8;

// Accepts ByteLevel alone or inside a Sequence of ByteLevels; names anything else.
Status readPreTokenizer(const json& pre, const std::string& where, BpeSpec& spec, int depth = 0) {
  if (!pre.is_object()) return Status::corruption(where + ": expected an object");
  std::string type = pre.value("type", std::string());
  if (type == "Sequence" && depth >= kMaxPreTokenizerDepth)
    return Status::corruption(where + ": Sequence nested deeper than " +
                              std::to_string(kMaxPreTokenizerDepth));
  if (type == "Sequence") {
    const json& list = pre.contains("pretokenizers") ? pre["pretokenizers"] : json();
    if (!list.is_array() || list.empty())
      return Status::corruption(where + ".pretokenizers: expected a non-empty array");
    for (size_t i = 0; i < list.size(); ++i) {
      Status s =
          readPreTokenizer(list[i], where + ".pretokenizers[" + std::to_string(i) + "]", spec, depth + 1);
      if (!s.isOk()) return s;
    }
    return Status::ok();
  }
  if (type != "ByteLevel")
    return Status::unsupported(where + ".type \"" + type +
                               "\" is not supported (only ByteLevel: GPT-2's regex)");
  if (pre.contains("use_regex") && pre["use_regex"].is_boolean() && !pre["use_regex"].get<bool>())
    return Status::unsupported(where + ".use_regex false (a custom split) is not supported");
  if (pre.contains("add_prefix_space") && pre["add_prefix_space"].is_boolean())
    spec.addPrefixSpace = spec.addPrefixSpace || pre["add_prefix_space"].get<bool>();
  return Status::ok();
}

Status readModel(const json& model, BpeSpec& spec) {
  if (!model.is_object()) return Status::corruption("model: expected an object");
  if (!model.contains("type") || !model["type"].is_string()) return Status::corruption("model.type: missing");
  std::string type = model["type"].get<std::string>();
  if (type != "BPE")
    return Status::unsupported("model.type \"" + type + "\" is not supported (only byte-level BPE; " +
                               "LLaMA-style models load from tokenizer.model)");
  if (model.value("byte_fallback", false))
    return Status::unsupported(
        "model.byte_fallback true (SentencePiece-style BPE) is not supported; "
        "load the tokenizer.model instead");
  if (model.value("ignore_merges", false))
    return Status::unsupported("model.ignore_merges true is not supported");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (model.contains(key) && model[key].is_string() && !model[key].get<std::string>().empty())
      return Status::unsupported(std::string("model.") + key + " is not supported");
  if (model.contains("dropout") && model["dropout"].is_number() && model["dropout"].get<double>() > 0)
    return Status::unsupported("model.dropout > 0 (random merges) is not supported");
  if (!model.contains("vocab")) return Status::corruption("model.vocab: missing");
  if (!model.contains("merges")) return Status::corruption("model.merges: missing");
  Status s = readVocabObject(model["vocab"], "model.vocab", spec);
  return s.isOk() ? readMergesArray(model["merges"], "model.merges", spec) : s;
}

Status readAddedTokens(const json& added, BpeSpec& spec) {
  if (added.is_null()) return Status::ok();
  if (!added.is_array()) return Status::corruption("added_tokens: expected an array");
  for (size_t i = 0; i < added.size(); ++i) {
    const json& a = added[i];
    std::string at = "added_tokens[" + std::to_string(i) + "]";
    if (!a.is_object() || !a.contains("content") || !a["content"].is_string())
      return Status::corruption(at + ".content: missing or not a string");
    if (!a.contains("id") || !a["id"].is_number_integer() || a["id"].get<int64_t>() < 0)
      return Status::corruption(at + ".id: missing or not a non-negative integer");
    spec.added.push_back({a["content"].get<std::string>(), a["id"].get<int64_t>()});
  }
  return Status::ok();
}

}  // namespace

protocol::StatusOr<BpeSpec> readVocabAndMerges(const std::string& vocabPath, const std::string& mergesPath) {
  BpeSpec spec;
  spec.vocabSource = vocabPath;
  spec.mergesSource = mergesPath;
  auto vocab = readJsonFile(vocabPath);
  if (!vocab.isOk()) return vocab.status();
  Status s = readVocabObject(vocab.value(), vocabPath, spec);
  if (!s.isOk()) return s;

  if (Status size = checkTokenizerFileSize(mergesPath); size.code() == Status::Code::kCorruption) return size;
  std::ifstream in(mergesPath, std::ios::binary);
  if (!in) return Status::notFound(mergesPath + ": cannot open the BPE merges file");
  std::string line;
  for (int lineNo = 1; std::getline(in, line); ++lineNo) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (lineNo == 1 && line.rfind("#version", 0) == 0)) continue;
    size_t space = line.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != line.npos)
      return Status::corruption(mergesPath + " line " + std::to_string(lineNo) + ": \"" + line +
                                "\" is not two tokens \"a b\"");
    spec.merges.emplace_back(line.substr(0, space), line.substr(space + 1));
    spec.mergeWhere.push_back("line " + std::to_string(lineNo));
  }
  return spec;
}

static protocol::StatusOr<BpeSpec> readTokenizerJsonUnchecked(const std::string& path) {
  auto doc = readJsonFile(path);
  if (!doc.isOk()) return doc.status();
  const json& root = doc.value();
  BpeSpec spec;
  spec.vocabSource = path + " model.vocab";
  spec.mergesSource = path;
  auto fail = [&](const Status& s) {
    return s.code() == Status::Code::kUnsupported ? Status::unsupported(path + ": " + s.message())
                                                  : Status::corruption(path + ": " + s.message());
  };
  if (!root.is_object()) return Status::corruption(path + ": expected a JSON object");
  if (!root.contains("model")) return Status::corruption(path + ": model: missing");
  Status s = readModel(root["model"], spec);
  if (!s.isOk()) return fail(s);
  // GPT-NeoX declares NFC; it is not applied here (see README.md "Limits").
  if (root.contains("normalizer") && !root["normalizer"].is_null()) {
    if (!root["normalizer"].is_object())
      return fail(Status::corruption("normalizer: expected an object or null"));
    std::string type = root["normalizer"].value("type", std::string());
    if (type != "NFC") return fail(Status::unsupported("normalizer.type \"" + type + "\" is not supported"));
  }
  if (!root.contains("pre_tokenizer") || root["pre_tokenizer"].is_null())
    return fail(Status::unsupported("pre_tokenizer: missing; byte-level BPE needs ByteLevel"));
  s = readPreTokenizer(root["pre_tokenizer"], "pre_tokenizer", spec);
  if (s.isOk() && root.contains("added_tokens")) s = readAddedTokens(root["added_tokens"], spec);
  if (!s.isOk()) return fail(s);
  return spec;
}

protocol::StatusOr<BpeSpec> readTokenizerJson(const std::string& path) {
  try {  // the checks above test types before use; this only backs them up
    return readTokenizerJsonUnchecked(path);
  } catch (const nlohmann::json::exception& e) {
    return Status::corruption(path + ": unexpected JSON structure: " + e.what());
  }
}

}  // namespace fs::data::detail
