#include "app/remote/remote_host.h"

namespace fs::app::remote {

// One readFile per range: hosts with nothing better (a local file is read at once).
protocol::StatusOr<std::vector<std::string>> Host::readRanges(const std::string& path,
                                                              const std::vector<ByteRange>& ranges) {
  std::vector<std::string> out;
  out.reserve(ranges.size());
  for (const ByteRange& r : ranges) {
    auto bytes = readFile(path, r.offset, static_cast<std::size_t>(r.length));
    if (!bytes.isOk()) return bytes.status();
    out.push_back(std::move(bytes.value()));
  }
  return out;
}

}  // namespace fs::app::remote
