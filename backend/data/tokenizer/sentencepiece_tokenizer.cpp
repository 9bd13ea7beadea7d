#include "backend/data/tokenizer/sentencepiece_tokenizer.h"

#include <filesystem>

#include "backend/data/tokenizer/json_file.h"
#include "backend/data/tokenizer/spm_loader.h"

namespace fs::data::detail {

using protocol::Status;

SentencePieceTokenizer::SentencePieceTokenizer(const spm::Api* api, void* processor)
    : api_(api), sp_(processor) {}
SentencePieceTokenizer::~SentencePieceTokenizer() {
  if (sp_) api_->destroy(sp_);
}

protocol::StatusOr<std::unique_ptr<SentencePieceTokenizer>> SentencePieceTokenizer::create(
    const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return Status::notFound(path + ": no such SentencePiece model file");
  if (Status size = detail::checkTokenizerFileSize(path); !size.isOk()) return size;
  auto api = spm::loadApi();
  if (!api) return Status::notFound(path + ": " + api.status().message());
  std::string error;
  void* processor = api.value()->load(path, &error);
  if (!processor) return Status::corruption(path + ": not a SentencePiece model (" + error + ")");
  std::unique_ptr<SentencePieceTokenizer> t(new SentencePieceTokenizer(api.value(), processor));
  if (t->modelSize() <= 0) return Status::corruption(path + ": the SentencePiece model has no pieces");
  return t;
}

int SentencePieceTokenizer::bosPiece() const {
  return api_->specialId(sp_, 0);
}
int SentencePieceTokenizer::eosPiece() const {
  return api_->specialId(sp_, 1);
}
int SentencePieceTokenizer::unkPiece() const {
  return api_->specialId(sp_, 2);
}
int SentencePieceTokenizer::padPiece() const {
  return api_->specialId(sp_, 3);
}

std::string SentencePieceTokenizer::pieceText(int id) const {
  std::string piece;
  api_->idToPiece(sp_, id, &piece);
  return piece;
}

void SentencePieceTokenizer::encodeModel(std::string_view text, bool /*startsText*/,
                                         std::vector<int64_t>& out) const {
  std::vector<int> ids;
  if (!api_->encode(sp_, text, &ids)) {
    // Encode only fails on an unusable model, which Load rejected; keep the sequence non-empty anyway.
    out.push_back(unkPiece());
    return;
  }
  out.insert(out.end(), ids.begin(), ids.end());
}

void SentencePieceTokenizer::decodeModel(const std::vector<int64_t>& ids, std::string& out) const {
  std::vector<int> pieces(ids.begin(), ids.end());
  std::string text;
  if (api_->decode(sp_, pieces, &text)) out += text;
}

int64_t SentencePieceTokenizer::modelSize() const {
  return api_->pieceSize(sp_);
}

std::optional<int64_t> SentencePieceTokenizer::modelTokenId(std::string_view token) const {
  const int id = api_->pieceToId(sp_, token);
  // PieceToId answers unk_id for unknown pieces: check the round trip.
  if (id < 0 || id >= modelSize() || pieceText(id) != token) return std::nullopt;
  return id;
}

}  // namespace fs::data::detail
