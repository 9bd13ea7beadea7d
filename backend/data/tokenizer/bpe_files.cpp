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

// An object's "type" for messages and dispatch: the string, or the JSON of a value that is
// not one (so the message names it), or "" when absent.
bool isTrueField(const json& obj, const char* key) {
  return obj.is_object() && obj.contains(key) && obj[key].is_boolean() && obj[key].get<bool>();
}

std::string typeOf(const json& obj) {
  if (!obj.is_object() || !obj.contains("type")) return std::string();
  const json& t = obj["type"];
  return t.is_string() ? t.get<std::string>() : t.dump();
}

// Sequences inside sequences, at most (real files nest none); deeper is refused
// rather than recursed into.
constexpr int kMaxPreTokenizerDepth = 8;

// Accepts ByteLevel alone or inside a Sequence of ByteLevels; names anything else.
Status readPreTokenizer(const json& pre, const std::string& where, BpeSpec& spec, int depth = 0) {
  if (!pre.is_object()) return Status::corruption(where + ": expected an object");
  std::string type = typeOf(pre);
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
    return Status::unsupported("model.type \"" + type + "\" is not supported (only BPE: byte-level, " +
                               "or with byte_fallback as LLaMA's)");
  if (model.contains("byte_fallback") && !model["byte_fallback"].is_null() &&
      !model["byte_fallback"].is_boolean())
    return Status::corruption("model.byte_fallback: expected true or false");
  if (model.contains("fuse_unk") && !model["fuse_unk"].is_null() && !model["fuse_unk"].is_boolean())
    return Status::corruption("model.fuse_unk: expected true or false");
  if (model.contains("unk_token") && !model["unk_token"].is_null() && !model["unk_token"].is_string())
    return Status::corruption("model.unk_token: expected a string or null");
  if (isTrueField(model, "ignore_merges"))
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

// Normalizers and decoders, each at most (real files have 2 and 4): a Replace may lengthen
// the text, so this bounds what a file can make of it.
constexpr size_t kMaxPipelineSteps = 8;

// HF reads Metaspace's replacement and Strip's content as one character (Rust's char).
bool oneCharacter(const std::string& s) {
  if (s.empty()) return false;
  const auto b = uint8_t(s[0]);
  size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
  if (n != s.size()) return false;
  for (size_t k = 1; k < n; ++k)
    if ((uint8_t(s[k]) & 0xC0) != 0x80) return false;
  return true;
}

// "always" | "first" | "never" at `where`, or the legacy add_prefix_space (true: always).
Status readPrependScheme(const json& obj, const std::string& where, MetaspaceSpec::Prepend& out) {
  out = MetaspaceSpec::Prepend::kAlways;
  if (obj.contains("prepend_scheme") && !obj["prepend_scheme"].is_null()) {
    const json& p = obj["prepend_scheme"];
    std::string v = p.is_string() ? p.get<std::string>() : std::string();
    if (v == "always")
      out = MetaspaceSpec::Prepend::kAlways;
    else if (v == "first")
      out = MetaspaceSpec::Prepend::kFirst;
    else if (v == "never")
      out = MetaspaceSpec::Prepend::kNever;
    else
      return Status::corruption(where + ".prepend_scheme: expected \"always\", \"first\" or \"never\"");
  }
  if (obj.contains("add_prefix_space") && obj["add_prefix_space"].is_boolean() &&
      !obj["add_prefix_space"].get<bool>()) {
    if (out != MetaspaceSpec::Prepend::kNever && obj.contains("prepend_scheme") &&
        !obj["prepend_scheme"].is_null())
      return Status::corruption(where + ".add_prefix_space false contradicts prepend_scheme");
    out = MetaspaceSpec::Prepend::kNever;
  }
  return Status::ok();
}

Status readString(const json& obj, const char* key, const std::string& where, std::string& out) {
  if (!obj.contains(key) || !obj[key].is_string())
    return Status::corruption(where + "." + key + ": expected a string");
  out = obj[key].get<std::string>();
  return Status::ok();
}

// Replace's pattern: {"String": "..."}; a {"Regex": ...} pattern is refused by name.
Status readReplacePattern(const json& obj, const std::string& where, std::string& out) {
  const json& p = obj.contains("pattern") ? obj["pattern"] : json();
  if (p.is_object() && p.contains("Regex"))
    return Status::unsupported(where + ".pattern: a Regex pattern is not supported (only {\"String\": ...})");
  if (!p.is_object() || !p.contains("String") || !p["String"].is_string() ||
      p["String"].get<std::string>().empty())
    return Status::corruption(where + ".pattern: expected {\"String\": \"...\"}");
  out = p["String"].get<std::string>();
  return Status::ok();
}

Status readMetaspaceNormalizer(const json& n, const std::string& where, MetaspaceSpec& out, int depth = 0) {
  if (n.is_null()) return Status::ok();
  if (!n.is_object()) return Status::corruption(where + ": expected an object or null");
  std::string type = typeOf(n);
  if (type == "Sequence") {
    if (depth >= kMaxPreTokenizerDepth)
      return Status::corruption(where + ": Sequence nested deeper than " +
                                std::to_string(kMaxPreTokenizerDepth));
    const json& list = n.contains("normalizers") ? n["normalizers"] : json();
    if (!list.is_array()) return Status::corruption(where + ".normalizers: expected an array");
    for (size_t i = 0; i < list.size(); ++i) {
      Status s =
          readMetaspaceNormalizer(list[i], where + ".normalizers[" + std::to_string(i) + "]", out, depth + 1);
      if (!s.isOk()) return s;
    }
    return Status::ok();
  }
  MetaspaceSpec::Normalizer step;
  if (type == "Prepend") {
    step.prepend = true;
    if (Status s = readString(n, "prepend", where, step.content); !s.isOk()) return s;
  } else if (type == "Replace") {
    if (Status s = readReplacePattern(n, where, step.pattern); !s.isOk()) return s;
    if (Status s = readString(n, "content", where, step.content); !s.isOk()) return s;
  } else {
    return Status::unsupported(
        where + ".type \"" + type +
        "\" is not supported with byte-fallback BPE (only Prepend, Replace, Sequence)");
  }
  if (out.normalizers.size() >= kMaxPipelineSteps)
    return Status::unsupported(where + ": more than " + std::to_string(kMaxPipelineSteps) + " normalizers");
  out.normalizers.push_back(std::move(step));
  return Status::ok();
}

Status readMetaspaceDecoder(const json& d, const std::string& where, std::vector<MetaspaceSpec::Decoder>& out,
                            int depth = 0) {
  using Kind = MetaspaceSpec::Decoder::Kind;
  if (!d.is_object()) return Status::corruption(where + ": expected an object");
  std::string type = typeOf(d);
  MetaspaceSpec::Decoder step;
  if (type == "Sequence") {
    if (depth >= kMaxPreTokenizerDepth)
      return Status::corruption(where + ": Sequence nested deeper than " +
                                std::to_string(kMaxPreTokenizerDepth));
    const json& list = d.contains("decoders") ? d["decoders"] : json();
    if (!list.is_array()) return Status::corruption(where + ".decoders: expected an array");
    for (size_t i = 0; i < list.size(); ++i) {
      Status s =
          readMetaspaceDecoder(list[i], where + ".decoders[" + std::to_string(i) + "]", out, depth + 1);
      if (!s.isOk()) return s;
    }
    return Status::ok();
  } else if (type == "Replace") {
    step.kind = Kind::kReplace;
    if (Status s = readReplacePattern(d, where, step.pattern); !s.isOk()) return s;
    if (Status s = readString(d, "content", where, step.content); !s.isOk()) return s;
  } else if (type == "ByteFallback") {
    step.kind = Kind::kByteFallback;
  } else if (type == "Fuse") {
    step.kind = Kind::kFuse;
  } else if (type == "Strip") {
    step.kind = Kind::kStrip;
    if (Status s = readString(d, "content", where, step.content); !s.isOk()) return s;
    for (auto [key, field] : {std::pair{"start", &step.start}, {"stop", &step.stop}}) {
      if (!d.contains(key) || !d[key].is_number_unsigned() || d[key].get<uint64_t>() > 1024)
        return Status::corruption(where + "." + key + ": expected a count from 0 to 1024");
      *field = int(d[key].get<uint64_t>());
    }
  } else if (type == "Metaspace") {
    step.kind = Kind::kMetaspace;
    if (Status s = readString(d, "replacement", where, step.content); !s.isOk()) return s;
    if (Status s = readPrependScheme(d, where, step.prepend); !s.isOk()) return s;
  } else {
    return Status::unsupported(
        where + ".type \"" + type +
        "\" is not supported with byte-fallback BPE (only Replace, ByteFallback, Fuse, "
        "Strip, Metaspace, Sequence)");
  }
  if ((step.kind == Kind::kStrip || step.kind == Kind::kMetaspace) && !oneCharacter(step.content))
    return Status::corruption(where + "." + (step.kind == Kind::kStrip ? "content" : "replacement") +
                              ": expected one character, not \"" + step.content + "\"");
  if (out.size() >= kMaxPipelineSteps)
    return Status::unsupported(where + ": more than " + std::to_string(kMaxPipelineSteps) + " decoders");
  out.push_back(std::move(step));
  return Status::ok();
}

// model (byte_fallback, unk_token, fuse_unk), normalizer, Metaspace pre_tokenizer and decoder of LLaMA's
// layout.
Status readMetaspacePipeline(const json& root, BpeSpec& spec) {
  MetaspaceSpec sp;
  const json& model = root["model"];
  sp.byteFallback = isTrueField(model, "byte_fallback");
  sp.fuseUnk = isTrueField(model, "fuse_unk");
  if (model.contains("unk_token") && model["unk_token"].is_string())
    sp.unkToken = model["unk_token"].get<std::string>();
  if (root.contains("normalizer"))
    if (Status s = readMetaspaceNormalizer(root["normalizer"], "normalizer", sp); !s.isOk()) return s;
  const json& pre = root.contains("pre_tokenizer") ? root["pre_tokenizer"] : json();
  if (!pre.is_null()) {
    std::string type = typeOf(pre);
    if (type != "Metaspace")
      return Status::unsupported(
          "pre_tokenizer.type \"" + type +
          "\" is not supported with byte-fallback BPE (LLaMA's layout: only Metaspace or none)");
    MetaspaceSpec::PreTokenizer m;
    if (Status s = readString(pre, "replacement", "pre_tokenizer", m.replacement); !s.isOk()) return s;
    if (!oneCharacter(m.replacement))
      return Status::corruption("pre_tokenizer.replacement: expected one character, not \"" + m.replacement +
                                "\"");
    if (Status s = readPrependScheme(pre, "pre_tokenizer", m.prepend); !s.isOk()) return s;
    if (pre.contains("split") && !pre["split"].is_null()) {
      if (!pre["split"].is_boolean())
        return Status::corruption("pre_tokenizer.split: expected true or false");
      m.split = pre["split"].get<bool>();
    }
    sp.preTokenizer = m;
  }
  const json& dec = root.contains("decoder") ? root["decoder"] : json();
  if (!dec.is_null()) {
    sp.decoders.emplace();
    if (Status s = readMetaspaceDecoder(dec, "decoder", *sp.decoders); !s.isOk()) return s;
  }
  spec.metaspace = std::move(sp);
  return Status::ok();
}

// TemplateProcessing (alone or in a Sequence): the special tokens of `single` before $A.
Status readPostProcessor(const json& post, BpeSpec& spec, const std::string& where = "post_processor",
                         int depth = 0) {
  if (post.is_null()) return Status::ok();
  if (!post.is_object()) return Status::corruption(where + ": expected an object or null");
  std::string type = typeOf(post);
  if (type == "Sequence") {
    if (depth >= kMaxPreTokenizerDepth)
      return Status::corruption(where + ": Sequence nested deeper than " +
                                std::to_string(kMaxPreTokenizerDepth));
    const json& list = post.contains("processors") ? post["processors"] : json();
    if (!list.is_array()) return Status::corruption(where + ".processors: expected an array");
    for (size_t i = 0; i < list.size(); ++i) {
      Status s =
          readPostProcessor(list[i], spec, where + ".processors[" + std::to_string(i) + "]", depth + 1);
      if (!s.isOk()) return s;
    }
    return Status::ok();
  }
  if (type != "TemplateProcessing")
    return Status::ok();  // ByteLevel, RobertaProcessing...: nothing before the text
  const json& single = post.contains("single") ? post["single"] : json();
  if (!single.is_array()) return Status::corruption(where + ".single: expected an array");
  std::vector<std::string> prefix;
  bool sawText = false;
  for (size_t i = 0; i < single.size(); ++i) {
    const json& item = single[i];
    std::string at = where + ".single[" + std::to_string(i) + "]";
    if (item.is_object() && item.contains("Sequence")) {
      sawText = true;
    } else if (item.is_object() && item.contains("SpecialToken") && item["SpecialToken"].is_object() &&
               item["SpecialToken"].contains("id") && item["SpecialToken"]["id"].is_string()) {
      if (sawText)
        return Status::unsupported(at + ": a special token after the text (\"" +
                                   item["SpecialToken"]["id"].get<std::string>() +
                                   "\", add_eos_token) is not supported; the data pipeline appends eos");
      prefix.push_back(item["SpecialToken"]["id"].get<std::string>());
    } else {
      return Status::corruption(at + ": expected {\"Sequence\": ...} or {\"SpecialToken\": {\"id\": ...}}");
    }
  }
  if (prefix.size() > 1)
    return Status::unsupported(where + ".single: " + std::to_string(prefix.size()) +
                               " special tokens before the text; only one (a bos token) is supported");
  spec.templatePrefix = prefix;
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
  const json& model = root["model"];
  const json& pre = root.contains("pre_tokenizer") ? root["pre_tokenizer"] : json();
  const json& norm = root.contains("normalizer") ? root["normalizer"] : json();
  if (!norm.is_null() && !norm.is_object())
    return fail(Status::corruption("normalizer: expected an object or null"));
  // LLaMA's layout (NOTE [Metaspace BPE]): byte fallback, a Metaspace pre-tokenizer, or the
  // Prepend/Replace normalizer transformers 4 wrote; anything else is GPT-2's byte-level scheme.
  const bool metaspace = isTrueField(model, "byte_fallback") ||
                         (pre.is_object() && typeOf(pre) == "Metaspace") ||
                         (pre.is_null() && !norm.is_null() && typeOf(norm) != "NFC");
  if (metaspace) {
    s = readMetaspacePipeline(root, spec);
  } else {
    // GPT-NeoX and MPT declare NFC (nfc.h).
    if (!norm.is_null()) {
      std::string type = typeOf(norm);
      if (type != "NFC")
        return fail(Status::unsupported("normalizer.type \"" + type +
                                        "\" is not supported with a ByteLevel pre_tokenizer (only NFC)"));
      spec.nfc = true;
    }
    if (pre.is_null())
      return fail(
          Status::unsupported("pre_tokenizer: missing; byte-level BPE needs ByteLevel (and LLaMA-style BPE "
                              "sets model.byte_fallback)"));
    s = readPreTokenizer(pre, "pre_tokenizer", spec);
  }
  if (s.isOk() && root.contains("post_processor")) s = readPostProcessor(root["post_processor"], spec);
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
