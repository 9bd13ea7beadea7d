#include "app/monitor/byte_source.h"

namespace fs::app {

protocol::StatusOr<std::string> readWhole(ByteSource& source, std::size_t max) {
  auto st = source.stat();
  if (!st) return st.status();
  if (st->size > max) {
    return protocol::Status::invalidArgument(source.describe() + " is " + std::to_string(st->size) +
                                             " bytes, more than the " + std::to_string(max) + " expected");
  }
  std::string text(static_cast<std::size_t>(st->size), '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    auto n = source.read(got, text.data() + got, text.size() - got);
    if (!n) return n.status();
    if (*n == 0) break;  // shorter now than stat() said
    got += *n;
  }
  text.resize(got);
  return text;
}

}  // namespace fs::app
