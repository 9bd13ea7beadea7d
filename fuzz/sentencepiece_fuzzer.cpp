// Fuzz target: a SentencePiece tokenizer.model (data::loadTokenizer with the
// llama family: the model is parsed by libsentencepiece in the fs_spm_shim
// module, NOTE [SentencePiece isolation]). libsentencepiece is Debian's build,
// not instrumented: this finds crashes and memory errors ASan sees from the
// shim and our wrapper, with coverage feedback from our side only.
#include "backend/data/tokenizer/tokenizer.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fs::data;
  const std::string path = fs::fuzz::writeScratch("tokenizer.model", fs::fuzz::text(data, size));
  auto tokenizer = loadTokenizer(path, "llama");
  if (!tokenizer) return 0;
  const auto ids = tokenizer.value()->encode("Hi <image>a cat<|endofchunk|> \xc3\xbcn  1234\n\t!");
  (void)tokenizer.value()->decode(ids);
  return 0;
}
