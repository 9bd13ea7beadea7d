// Fuzz target: GPT-2's vocab.json + merges.txt (data::loadTokenizer on the
// pair). One input holds both files, split at the first "\n#merges\n".
#include <filesystem>

#include "backend/data/tokenizer/tokenizer.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fs::data;
  const auto [vocab, merges] = fs::fuzz::splitAt(fs::fuzz::text(data, size), "\n#merges\n");
  const std::string vocabPath = fs::fuzz::writeScratch("vocab.json", vocab);
  (void)fs::fuzz::writeScratch("merges.txt", merges);
  auto tokenizer = loadTokenizer(vocabPath, "opt");
  if (!tokenizer) return 0;
  const auto ids = tokenizer.value()->encode("Hi <image>a cat<|endofchunk|> \xc3\xbcn  1234\n\t!");
  (void)tokenizer.value()->decode(ids);
  return 0;
}
