// Fuzz target: a WebDataset tar shard (data::TarSampleReader, libarchive with
// our grouping rules), read from memory in uneven pieces so headers and members
// straddle reads. Small member and sample limits so the limits are exercised.
#include <algorithm>
#include <cstring>
#include <memory>

#include "backend/data/shards/tar_samples.h"
#include "fuzz/fuzz_util.h"

namespace {

// The fuzz input as a shard stream; the first byte sets the most a read returns.
class MemoryStream final : public fs::data::ShardStream {
 public:
  MemoryStream(std::string_view bytes, std::size_t chunk) : bytes_(bytes), chunk_(chunk) {}
  fs::protocol::StatusOr<std::size_t> read(void* buf, std::size_t size) override {
    const std::size_t n = std::min({size, chunk_, bytes_.size() - at_});
    std::memcpy(buf, bytes_.data() + at_, n);
    at_ += n;
    return n;
  }
  void close() override {}
  const std::string& url() const override { return url_; }

 private:
  std::string_view bytes_;
  std::size_t chunk_;
  std::size_t at_ = 0;
  std::string url_ = "fuzz.tar";
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fs::data;
  if (size == 0) return 0;
  const std::size_t chunk = data[0] < 128 ? std::size_t{1} << 20 : 1 + data[0] % 64;
  TarReaderOptions options;
  options.maxMemberBytes = 4096;
  options.maxSampleBytes = 8192;
  options.maxProblemMessages = 4;
  auto reader = TarSampleReader::fromStream(
      std::make_unique<MemoryStream>(fs::fuzz::text(data + 1, size - 1), chunk), std::move(options));
  for (int i = 0; i < 10000; ++i) {
    auto sample = reader.next();
    if (!sample.isOk() || !sample.value()) break;
    std::uint64_t total = 0;
    for (const auto& [ext, bytes] : sample.value()->fields) {
      fs::fuzz::check(bytes.size() <= 4096, "a member over maxMemberBytes was delivered");
      total += bytes.size();
    }
    fs::fuzz::check(total <= 8192, "a sample over maxSampleBytes was delivered");
  }
  (void)reader.drops().toString();
  return 0;
}
