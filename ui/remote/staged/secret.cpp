// Staged until the SSH transport is merged: Secret's two out-of-line members,
// as app/remote/ssh_auth.cpp defines them there. ui/remote/CMakeLists.txt
// compiles this (and puts staged/ on the include path) only while
// app/remote/prompter.h is absent, so the merge needs no edit here; delete
// ui/remote/staged/ afterwards.
#include <openssl/crypto.h>

#include "app/remote/prompter.h"

namespace fs::app::remote {

Secret& Secret::operator=(Secret&& other) noexcept {
  if (this != &other) {
    clear();
    value_ = std::move(other.value_);
    other.clear();
  }
  return *this;
}

void Secret::clear() {
  if (!value_.empty()) OPENSSL_cleanse(value_.data(), value_.size());
  value_.clear();
}

}  // namespace fs::app::remote
