// fs_spm_shim: libsentencepiece behind spm_api.h's table (NOTE [SentencePiece
// isolation]). Nothing else belongs here.
#include <sentencepiece_processor.h>

#include <exception>
#include <memory>

#include "backend/data/tokenizer/spm_shim/spm_api.h"

namespace {

using Processor = sentencepiece::SentencePieceProcessor;

const Processor& P(const void* p) {
  return *static_cast<const Processor*>(p);
}

// libsentencepiece throws on some malformed models (a unigram piece of zero
// length: Darts' "failed to insert key"); nothing may cross the table but a
// status (found by fuzz/sentencepiece_fuzzer.cpp).
void* load(const std::string& path, std::string* error) {
  auto p = std::make_unique<Processor>();
  try {
    const auto status = p->Load(path);
    if (!status.ok()) {
      *error = std::string(status.message());
      return nullptr;
    }
  } catch (const std::exception& e) {
    *error = std::string("libsentencepiece: ") + e.what();
    return nullptr;
  }
  return p.release();
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
  try {
    return P(p).Encode(text, ids).ok();
  } catch (const std::exception&) {
    return false;
  }
}
bool decode(const void* p, const std::vector<int>& ids, std::string* text) {
  try {
    return P(p).Decode(ids, text).ok();
  } catch (const std::exception&) {
    return false;
  }
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
