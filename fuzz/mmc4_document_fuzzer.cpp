// Fuzz target: one MMC4 document, the JSON inside an MMC4 shard sample
// (data::parseMmc4Document, simdjson), then the sample rules that run on it
// (planMmc4Sample: similarity threshold, image matching, text assembly).
#include "backend/data/documents/mmc4_document.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fs::data;
  auto doc = parseMmc4Document(fs::fuzz::text(data, size));
  if (!doc.isOk()) {
    fs::fuzz::check(!doc.rejection().message.empty(), "a rejection without a message");
    return 0;
  }
  const auto& d = doc.value();
  fs::fuzz::check(d.similarity.size() == d.images.size() * d.sentences.size(),
                  "similarity is not images x sentences");
  Mmc4Options options;
  options.simThreshold = 0.24;
  options.maxNumImages = 3;
  (void)planMmc4Sample(d, options);
  return 0;
}
