#include "backend/distributed/store_wire.h"

namespace fs::distributed::store_wire {
namespace {

void putLe(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t getLe(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

}  // namespace

Writer& Writer::u8(uint8_t v) {
  body_.push_back(static_cast<char>(v));
  return *this;
}

Writer& Writer::i64(int64_t v) {
  putLe(&body_, static_cast<uint64_t>(v), 8);
  return *this;
}

Writer& Writer::bytes(std::string_view v) {
  putLe(&body_, v.size(), 4);
  body_.append(v);
  return *this;
}

Writer& Writer::list(const std::vector<std::string>& v) {
  putLe(&body_, v.size(), 4);
  for (const auto& s : v) bytes(s);
  return *this;
}

std::string Writer::frame() {
  const uint64_t n = body_.size() - kHeaderBytes;
  for (size_t i = 0; i < kHeaderBytes; ++i) body_[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return std::move(body_);
}

bool Reader::u8(uint8_t* v) {
  if (in_.size() - pos_ < 1) return false;
  *v = static_cast<uint8_t>(in_[pos_++]);
  return true;
}

bool Reader::i64(int64_t* v) {
  if (in_.size() - pos_ < 8) return false;
  *v = static_cast<int64_t>(getLe(in_.data() + pos_, 8));
  pos_ += 8;
  return true;
}

bool Reader::bytes(std::string* v, size_t limit) {
  if (in_.size() - pos_ < 4) return false;
  const uint64_t n = getLe(in_.data() + pos_, 4);
  if (n > limit || n > in_.size() - pos_ - 4) return false;
  v->assign(in_.data() + pos_ + 4, n);
  pos_ += 4 + n;
  return true;
}

bool Reader::list(std::vector<std::string>* v, size_t itemLimit) {
  if (in_.size() - pos_ < 4) return false;
  const uint64_t n = getLe(in_.data() + pos_, 4);
  pos_ += 4;
  // Each item takes at least its 4-byte length: a count the body cannot hold is refused before any
  // allocation.
  if (n > (in_.size() - pos_) / 4) return false;
  v->clear();
  v->reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    std::string s;
    if (!bytes(&s, itemLimit)) return false;
    v->push_back(std::move(s));
  }
  return true;
}

uint32_t bodyLength(const char* header) {
  return static_cast<uint32_t>(getLe(header, kHeaderBytes));
}

AddressList resolveTcp(const std::string& host, int port, std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res); rc != 0 || !res) {
    *error = rc != 0 ? ::gai_strerror(rc) : "no address";
    return AddressList(nullptr, ::freeaddrinfo);
  }
  return AddressList(res, ::freeaddrinfo);
}

}  // namespace fs::distributed::store_wire
