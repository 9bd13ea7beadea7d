// SentencePiece (LLaMA) through libsentencepiece, loaded in isolation
// (NOTE [SentencePiece isolation] in spm_shim/spm_api.h). Internal to
// fs_tokenizer; users call loadTokenizer().
//
// Thread-safety: SentencePieceProcessor's Encode/Decode are const and safe to
// call concurrently; nothing here mutates after create().
#pragma once

#include <memory>
#include <string>

#include "backend/data/tokenizer/tokenizer.h"

namespace fs::data::spm {
struct Api;
}

namespace fs::data::detail {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  static protocol::StatusOr<std::unique_ptr<SentencePieceTokenizer>> create(const std::string& modelPath);
  ~SentencePieceTokenizer() override;
  // The model's own ids of <s>, </s>, <unk>, <pad>; -1 when the model has none.
  int bosPiece() const, eosPiece() const, unkPiece() const, padPiece() const;
  std::string pieceText(int id) const;

 protected:
  // Text between added tokens is encoded on its own, so each piece gets the
  // dummy-prefix "▁" as HF's slow LlamaTokenizer (legacy mode) does.
  void encodeModel(std::string_view text, bool startsText, std::vector<int64_t>& out) const override;
  void decodeModel(const std::vector<int64_t>& ids, std::string& out) const override;
  int64_t modelSize() const override;
  std::optional<int64_t> modelTokenId(std::string_view token) const override;

 private:
  SentencePieceTokenizer(const spm::Api* api, void* processor);
  const spm::Api* api_;
  void* sp_;  // the shim's SentencePieceProcessor
};

}  // namespace fs::data::detail
