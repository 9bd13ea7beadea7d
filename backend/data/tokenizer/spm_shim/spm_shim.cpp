// fs_spm_shim: libsentencepiece behind spm_api.h's table (NOTE [SentencePiece
// isolation]). Nothing else belongs here.
#include <sentencepiece_processor.h>

#include "backend/data/tokenizer/spm_shim/spm_api.h"

namespace {

using Processor = sentencepiece::SentencePieceProcessor;

const Processor& P(const void* p) {
  return *static_cast<const Processor*>(p);
}

void* load(const std::string& path, std::string* error) {
  auto* p = new Processor();
  const auto status = p->Load(path);
  if (!status.ok()) {
    *error = std::string(status.message());
    delete p;
    return nullptr;
  }
  return p;
}

void destroy(void* p) {
  delete static_cast<Processor*>(p);
}
int pieceSize(const void* p) {
  return P(p).GetPieceSize();
}

int specialId(const void* p, int which) {
  switch (which) {
    case 0:
      return P(p).bos_id();
    case 1:
      return P(p).eos_id();
    case 2:
      return P(p).unk_id();
    default:
      return P(p).pad_id();
  }
}

bool encode(const void* p, std::string_view text, std::vector<int>* ids) {
  return P(p).Encode(text, ids).ok();
}
bool decode(const void* p, const std::vector<int>& ids, std::string* text) {
  return P(p).Decode(ids, text).ok();
}
void idToPiece(const void* p, int id, std::string* piece) {
  *piece = P(p).IdToPiece(id);
}
int pieceToId(const void* p, std::string_view piece) {
  return P(p).PieceToId(piece);
}

const fs::data::spm::Api kApi = {
    fs::data::spm::kApiVersion, load, destroy, pieceSize, specialId, encode, decode, idToPiece, pieceToId};

}  // namespace

extern "C" __attribute__((visibility("default"))) const fs::data::spm::Api* fs_spm_api() {
  return &kApi;
}
