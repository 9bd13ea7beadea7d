// Finds and loads fs_spm_shim (NOTE [SentencePiece isolation] in
// spm_shim/spm_api.h) once per process.
//
// Search order: $FS_SPM_SHIM; the build tree's copy; the installed copy
// (<CMAKE_INSTALL_PREFIX>/lib/flamingo-train); ../lib/flamingo-train from the
// running executable (the .deb installs under /usr whatever the build's
// prefix); next to the running executable.
// Thread-safety: safe from any thread; the first call loads.
#pragma once

#include "backend/data/tokenizer/spm_shim/spm_api.h"
#include "backend/protocol/status.h"

namespace fs::data::spm {

protocol::StatusOr<const Api*> loadApi();

}  // namespace fs::data::spm
