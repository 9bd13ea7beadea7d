// The function table of fs_spm_shim, a small shared module that wraps
// libsentencepiece and is loaded with dlopen(RTLD_LOCAL | RTLD_DEEPBIND).
//
// NOTE [SentencePiece isolation]: Debian's libsentencepiece.so.0 carries its
// own copy of protobuf-lite and exports those symbols; LibTorch loads the
// system libprotobuf.so.32. Linked into one process, libprotobuf's static
// initialisers bind to sentencepiece's copies and crash before main(). Loaded
// locally with deep binding, sentencepiece resolves protobuf to its own copy
// and libprotobuf never sees it. Both sides share one libstdc++, so the table
// passes C++ types.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace fs::data::spm {

struct Api {
  int version;  // kApiVersion
  // Returns a processor or nullptr with `error` set.
  void* (*load)(const std::string& path, std::string* error);
  void (*destroy)(void* processor);
  int (*pieceSize)(const void* processor);
  // which: 0 bos, 1 eos, 2 unk, 3 pad; -1 when the model has none.
  int (*specialId)(const void* processor, int which);
  bool (*encode)(const void* processor, std::string_view text, std::vector<int>* ids);
  bool (*decode)(const void* processor, const std::vector<int>& ids, std::string* text);
  void (*idToPiece)(const void* processor, int id, std::string* piece);
  int (*pieceToId)(const void* processor, std::string_view piece);
};

inline constexpr int kApiVersion = 1;
inline constexpr const char* kEntryPoint = "fs_spm_api";

}  // namespace fs::data::spm
