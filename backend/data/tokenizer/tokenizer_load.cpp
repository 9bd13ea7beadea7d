// loadTokenizer: finds the files, builds the model, then settles the special
// tokens (files first, family defaults second) and OpenFlamingo's additions.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "backend/data/tokenizer/bpe_tokenizer.h"
#include "backend/data/tokenizer/json_file.h"
#include "backend/data/tokenizer/metaspace_bpe_tokenizer.h"
#include "backend/data/tokenizer/sentencepiece_tokenizer.h"
#include "backend/data/tokenizer/tokenizer.h"

namespace fs::data {
namespace detail {

using nlohmann::json;
using protocol::Status;
namespace stdfs = std::filesystem;

Status checkTokenizerFileSize(const std::string& path) {
  std::error_code ec;
  const auto bytes = stdfs::file_size(path, ec);
  if (ec) return Status::notFound(path + ": cannot open");
  if (bytes > kMaxTokenizerFileBytes)
    return Status::corruption(path + ": " + std::to_string(bytes) + " bytes is over the limit of " +
                              std::to_string(kMaxTokenizerFileBytes) + " bytes for a tokenizer file");
  return Status::ok();
}

protocol::StatusOr<std::string> readTokenizerFile(const std::string& path) {
  if (Status s = checkTokenizerFileSize(path); !s.isOk()) return s;
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::notFound(path + ": cannot open");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

protocol::StatusOr<json> readJsonFile(const std::string& path) {
  auto text = readTokenizerFile(path);
  if (!text.isOk()) return text.status();
  try {  // the exception carries the byte position of the error for the message
    return json::parse(text.value());
  } catch (const json::exception& e) {
    return Status::corruption(path + ": invalid JSON: " + e.what());
  }
}

std::optional<std::string> specialTokenText(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.contains("content") && value["content"].is_string())
    return value["content"].get<std::string>();
  return std::nullopt;
}

namespace {

// A special-token role: absent (the family decides), null (none), or a text.
struct Declared {
  bool declared = false;
  std::optional<std::string> text;
};

struct Specials {
  Declared bos, eos, unk, pad;
  std::vector<std::string> additional;
  std::optional<bool> addBos;
  std::optional<std::string> tokenizerClass;  // tokenizer_config.json's tokenizer_class
  std::optional<bool> addPrefixSpace;  // overrides the files' pre-tokenizer, as HF's from_pretrained does
  std::vector<AddedTokenSpec> added;   // added_tokens.json
};

struct Family {
  bool addBos;
  std::string bos, eos;
  std::optional<std::string> unk, pad;
};

std::optional<Family> familyDefaults(const std::string& family) {
  if (family == "opt") return Family{true, "</s>", "</s>", "<unk>", "<pad>"};  // OPT's bos is </s> (id 2)
  if (family == "llama") return Family{true, "<s>", "</s>", "<unk>", std::nullopt};
  if (family == "gpt_neox" || family == "mpt")
    return Family{false, "<|endoftext|>", "<|endoftext|>", "<|endoftext|>", std::nullopt};
  return std::nullopt;
}

// tokenizer_config.json first, special_tokens_map.json over it (the order HF applies them).
Status readSpecials(const stdfs::path& dir, Specials& out) {
  for (const char* name : {"tokenizer_config.json", "special_tokens_map.json"}) {
    stdfs::path file = dir / name;
    std::error_code ec;
    if (!stdfs::is_regular_file(file, ec)) continue;
    auto doc = readJsonFile(file.string());
    if (!doc.isOk()) return doc.status();
    const json& j = doc.value();
    if (!j.is_object()) return Status::corruption(file.string() + ": expected a JSON object");
    for (auto [key, role] : {std::pair{"bos_token", &out.bos},
                             {"eos_token", &out.eos},
                             {"unk_token", &out.unk},
                             {"pad_token", &out.pad}}) {
      if (!j.contains(key)) continue;
      auto text = specialTokenText(j[key]);
      if (!text && !j[key].is_null())
        return Status::corruption(file.string() + ": " + key +
                                  ": expected a string, {\"content\": ...} or null");
      *role = Declared{true, text};
    }
    // transformers 5 writes extra_special_tokens (a list, or an object name -> token) where 4 wrote
    // additional_special_tokens.
    for (const char* key : {"additional_special_tokens", "extra_special_tokens"}) {
      if (!j.contains(key) || !(j[key].is_array() || j[key].is_object())) continue;
      out.additional.clear();
      for (const json& a : j[key])
        if (auto text = specialTokenText(a)) out.additional.push_back(*text);
    }
    if (j.contains("add_bos_token") && j["add_bos_token"].is_boolean())
      out.addBos = j["add_bos_token"].get<bool>();
    if (j.contains("tokenizer_class") && j["tokenizer_class"].is_string())
      out.tokenizerClass = j["tokenizer_class"].get<std::string>();
    if (j.contains("add_prefix_space") && j["add_prefix_space"].is_boolean())
      out.addPrefixSpace = j["add_prefix_space"].get<bool>();
  }
  stdfs::path addedFile = dir / "added_tokens.json";
  std::error_code ec;
  if (stdfs::is_regular_file(addedFile, ec)) {
    auto doc = readJsonFile(addedFile.string());
    if (!doc.isOk()) return doc.status();
    if (!doc.value().is_object())
      return Status::corruption(addedFile.string() + ": expected an object token -> id");
    for (const auto& [token, id] : doc.value().items()) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0)
        return Status::corruption(addedFile.string() + ": the id of \"" + token +
                                  "\" is not a non-negative integer");
      out.added.push_back({token, id.get<int64_t>()});
    }
  }
  return Status::ok();
}

}  // namespace

class TokenizerSetup {
 public:
  static Status finish(Tokenizer& t, const std::vector<AddedTokenSpec>& fileAdded, const Specials& files,
                       const Family& family, const std::string& where) {
    for (const auto& a : fileAdded) t.added_.add(a.content, a.id);
    for (const auto& a : files.added) t.added_.add(a.content, a.id);
    // Existing token, or a new id at the end; either way it is matched whole in text from now on.
    auto idOf = [&](const std::string& text) {
      int64_t id = t.tokenId(text).value_or(t.size());
      t.added_.add(text, id);
      return id;
    };
    auto resolve = [&](const Declared& d, const std::optional<std::string>& fallback, const char* role,
                       bool required) -> protocol::StatusOr<std::optional<int64_t>> {
      if (d.declared)
        return d.text ? std::optional<int64_t>(idOf(*d.text)) : std::nullopt;  // the files add it
      if (!fallback) return std::optional<int64_t>();
      if (auto id = t.tokenId(*fallback)) return std::optional<int64_t>(idOf(*fallback));
      if (!required) return std::optional<int64_t>();
      return Status::invalidArgument(where + ": has no " + role + " token \"" + *fallback +
                                     "\" (the family default); declare " + role +
                                     "_token in special_tokens_map.json or pick the right family");
    };
    bool addBos = files.addBos.value_or(family.addBos);
    auto bos = resolve(files.bos, family.bos, "bos", addBos);
    if (!bos.isOk()) return bos.status();
    auto eos = resolve(files.eos, family.eos, "eos", true);
    if (!eos.isOk()) return eos.status();
    if (!eos.value())
      return Status::invalidArgument(where + ": eos_token is null; training needs an eos token");
    auto unk = resolve(files.unk, family.unk, "unk", false);
    if (!unk.isOk()) return unk.status();
    auto pad = resolve(files.pad, family.pad, "pad", false);
    if (!pad.isOk()) return pad.status();
    for (const auto& a : files.additional) idOf(a);
    if (addBos && !bos.value())
      return Status::invalidArgument(where + ": add_bos_token is set but bos_token is null");

    t.bosId_ = addBos ? bos.value() : std::nullopt;
    t.eosId_ = *eos.value();
    t.eosToken_ = files.eos.declared ? *files.eos.text : family.eos;
    // OpenFlamingo: <|endofchunk|> then <image> (N, N+1), then <PAD> only without a pad token.
    t.endofchunkId_ = idOf("<|endofchunk|>");
    t.imageId_ = idOf("<image>");
    t.padId_ = pad.value() ? *pad.value() : idOf("<PAD>");
    return Status::ok();
  }
};

}  // namespace detail

namespace {

enum class Kind { kTokenizerJson, kVocabMerges, kSentencePiece };

struct ModelFiles {
  Kind kind;
  std::filesystem::path dir, first, second;  // second: merges, for kVocabMerges
};

// Which files `path` names; a directory is searched in the order README.md gives.
protocol::StatusOr<ModelFiles> locateFiles(const std::string& path, const std::string& family) {
  using protocol::Status;
  namespace stdfs = std::filesystem;
  std::error_code ec;
  stdfs::path p(path);
  if (stdfs::is_directory(p, ec)) {
    auto has = [&](const char* name) { return stdfs::is_regular_file(p / name, ec); };
    if (family == "llama" && has("tokenizer.model"))
      return ModelFiles{Kind::kSentencePiece, p, p / "tokenizer.model"};
    if (has("tokenizer.json")) return ModelFiles{Kind::kTokenizerJson, p, p / "tokenizer.json"};
    if (has("vocab.json")) return ModelFiles{Kind::kVocabMerges, p, p / "vocab.json", p / "merges.txt"};
    if (has("encoder.json")) return ModelFiles{Kind::kVocabMerges, p, p / "encoder.json", p / "vocab.bpe"};
    if (has("tokenizer.model")) return ModelFiles{Kind::kSentencePiece, p, p / "tokenizer.model"};
    return Status::notFound(
        path + ": no tokenizer files (tokenizer.json, vocab.json + merges.txt, or tokenizer.model)");
  }
  if (!stdfs::is_regular_file(p, ec)) return Status::notFound(path + ": no such file or directory");
  stdfs::path dir = p.parent_path();
  std::string name = p.filename().string();
  if (name == "vocab.json" || name == "merges.txt")
    return ModelFiles{Kind::kVocabMerges, dir, dir / "vocab.json", dir / "merges.txt"};
  if (name == "encoder.json" || name == "vocab.bpe")
    return ModelFiles{Kind::kVocabMerges, dir, dir / "encoder.json", dir / "vocab.bpe"};
  if (p.extension() == ".model") return ModelFiles{Kind::kSentencePiece, dir, p};
  if (p.extension() == ".json") return ModelFiles{Kind::kTokenizerJson, dir, p};
  return Status::unsupported(
      path + ": unknown tokenizer file (expected tokenizer.json, vocab.json, merges.txt or *.model)");
}

}  // namespace

protocol::StatusOr<std::unique_ptr<Tokenizer>> loadTokenizer(const std::string& path,
                                                             const std::string& family) {
  using protocol::Status;
  auto defaults = detail::familyDefaults(family);
  if (!defaults)
    return Status::invalidArgument("tokenizer family \"" + family +
                                   "\" is not one of opt, gpt_neox, mpt, llama");
  auto located = locateFiles(path, family);
  if (!located.isOk()) return located.status();
  const auto& [kind, dir, first, second] = located.value();

  detail::Specials specials;
  Status s = detail::readSpecials(dir, specials);
  if (!s.isOk()) return s;

  std::unique_ptr<Tokenizer> tokenizer;
  std::vector<detail::AddedTokenSpec> fileAdded;
  if (kind == Kind::kSentencePiece) {
    auto sp = detail::SentencePieceTokenizer::create(first.string());
    if (!sp.isOk()) return sp.status();
    tokenizer = std::move(sp).value();
  } else {
    auto spec = kind == Kind::kTokenizerJson ? detail::readTokenizerJson(first.string())
                                             : detail::readVocabAndMerges(first.string(), second.string());
    if (!spec.isOk()) return spec.status();
    if (specials.addPrefixSpace) spec.value().addPrefixSpace = *specials.addPrefixSpace;
    // The post-processor's template says whether a bos goes first, unless add_bos_token is declared
    // (transformers 5 writes no add_bos_token and keeps the template; with one it rebuilds the template).
    // The template's token is the one prepended, whatever bos_token the config names.
    if (const auto& prefix = spec.value().templatePrefix; prefix && !specials.addBos) {
      specials.addBos = !prefix->empty();
      if (!prefix->empty()) specials.bos = detail::Declared{true, prefix->front()};
    }
    // NOTE [Generic tokenizer class]: transformers 5 loads a tokenizer_config.json naming
    // TokenizersBackend (what PreTrainedTokenizerFast.save_pretrained writes) or
    // PreTrainedTokenizerFast as tokenizer.json's pipeline alone: without a template in the
    // post-processor and without add_bos_token, nothing goes first, whatever the family's own
    // tokenizer class would add (OPT's and LLaMA's prepend bos).
    if (!specials.addBos && kind == Kind::kTokenizerJson &&
        (specials.tokenizerClass == "TokenizersBackend" ||
         specials.tokenizerClass == "PreTrainedTokenizerFast"))
      specials.addBos = false;
    if (spec.value().metaspace) {
      auto bpe = detail::MetaspaceBpeTokenizer::create(spec.value());
      if (!bpe.isOk()) return bpe.status();
      fileAdded = bpe.value()->fileAddedTokens();
      tokenizer = std::move(bpe).value();
    } else {
      auto bpe = detail::BpeTokenizer::create(spec.value());
      if (!bpe.isOk()) return bpe.status();
      fileAdded = bpe.value()->fileAddedTokens();
      tokenizer = std::move(bpe).value();
    }
  }
  s = detail::TokenizerSetup::finish(*tokenizer, fileAdded, specials, *defaults, first.string());
  if (!s.isOk()) return s;
  return tokenizer;
}

}  // namespace fs::data
