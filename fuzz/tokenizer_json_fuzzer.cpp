// Fuzz target: a Hugging Face tokenizer.json (data::loadTokenizer on the file:
// model vocab and merges, pre-tokenizer, normalizer, added tokens, then
// OpenFlamingo's special tokens), then an encode / decode of a fixed text.
#include "backend/data/tokenizer/tokenizer.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fs::data;
  const std::string path = fs::fuzz::writeScratch("tokenizer.json", fs::fuzz::text(data, size));
  auto tokenizer = loadTokenizer(path, "gpt_neox");
  if (!tokenizer) {
    fs::fuzz::check(tokenizer.status().message().find(path) != std::string::npos,
                    "an error that does not name the file: " + tokenizer.status().message());
    return 0;
  }
  const auto ids = tokenizer.value()->encode("Hi <image>a cat<|endofchunk|> \xc3\xbcn  1234\n\t!");
  (void)tokenizer.value()->decode(ids);
  return 0;
}
