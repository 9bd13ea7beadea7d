// toNfc (the NFC normalizer of GPT-NeoX's and MPT's tokenizer.json) against
// Python's unicodedata.normalize("NFC", ...): every code point that decomposes
// or combines, alone and after a base, Hangul, and random mixes of bases and
// combining marks. Without the project's Python the test skips, and fails under
// CI=true.
#include "backend/data/tokenizer/nfc.h"

#include <sys/wait.h>

#include "tests/backend/data/tokenizer/tokenizer_test_util.h"
#include "tests/fixtures/fixture_unavailable.h"

namespace fs::data {
namespace {

using namespace fs::data::testing;
using nlohmann::json;

// argv: out.json. Writes {"unicode": version, "in": [...], "nfc": [...]}.
constexpr const char* kScript = R"(import json, random, sys, unicodedata
cps = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF and
       (unicodedata.combining(chr(c)) or (unicodedata.decomposition(chr(c)) and
                                          not unicodedata.decomposition(chr(c)).startswith('<')))]
marks = [c for c in cps if unicodedata.combining(chr(c))]
strings = [chr(c) for c in cps] + ['a' + chr(c) for c in cps] + [chr(c) + '\u0301\u0327' for c in cps]
strings += ['\u1100\u1161', '\u1100\u1161\u11a8', '\uac00\u11a8', '\u1100\u1161\u0301\u11a8', '\ud4db\u11af', 'x\u11a8']
rng = random.Random(41)
bases = [c for c in cps if not unicodedata.combining(chr(c))] + [ord(ch) for ch in 'aeiouAEIOUnNcCsz ']
for _ in range(3000):
    s = ''.join(chr(rng.choice(bases if rng.random() < 0.4 else marks)) for _ in range(rng.randint(1, 8)))
    strings.append(s)
with open(sys.argv[1], 'w', encoding='utf-8') as f:
    json.dump({'unicode': unicodedata.unidata_version, 'in': strings,
               'nfc': [unicodedata.normalize('NFC', s) for s in strings]}, f)
)";

TEST(Nfc, MatchesPythonUnicodedata) {
  stdfs::path dir = scratchDir("nfc");
  writeFile(dir / "oracle.py", kScript);
  int rc = 0;
  std::string out = runCommand(quoted(FS_PYTHON) + " " + quoted((dir / "oracle.py").string()) + " " +
                                   quoted((dir / "out.json").string()) + " 2>&1",
                               rc);
  if (rc != 0 && !stdfs::exists(FS_PYTHON))
    FS_FIXTURE_UNAVAILABLE(std::string(FS_PYTHON) + " is missing" + kOracleHint);
  ASSERT_EQ(rc, 0) << out;
  json oracle = json::parse(readFile(dir / "out.json"));
  EXPECT_EQ(oracle["unicode"].get<std::string>(), detail::nfcUnicodeVersion())
      << "regenerate nfc_tables.inc with gen_nfc_tables.py";
  const auto in = oracle["in"].get<std::vector<std::string>>();
  const auto nfc = oracle["nfc"].get<std::vector<std::string>>();
  ASSERT_EQ(in.size(), nfc.size());
  ASSERT_GT(in.size(), 9000u);
  size_t bad = 0;
  for (size_t i = 0; i < in.size(); ++i)
    if (detail::toNfc(in[i]) != nfc[i] && ++bad <= 20)
      ADD_FAILURE() << json(in[i]).dump() << ": " << json(detail::toNfc(in[i])).dump()
                    << " != " << json(nfc[i]).dump();
  EXPECT_EQ(bad, 0u);
}

TEST(Nfc, KeepsBytesThatAreNotUtf8) {
  EXPECT_EQ(detail::toNfc("plain ASCII and caf\xC3\xA9"), "plain ASCII and caf\xC3\xA9");
  EXPECT_EQ(detail::toNfc("e\xCC\x81"), "\xC3\xA9");  // e + U+0301 -> é
  EXPECT_EQ(detail::toNfc(std::string("\xFF"
                                      "e\xCC\x81\xC3",
                                      5)),
            std::string("\xFF\xC3\xA9\xC3", 4));
  EXPECT_EQ(detail::toNfc(std::string("e\xFF\xCC\x81", 4)),
            std::string("e\xFF\xCC\x81", 4));  // blocked by the byte
  EXPECT_EQ(detail::toNfc("\xED\xA0\x80\xCC\x81"),
            "\xED\xA0\x80\xCC\x81");  // an encoded surrogate stays bytes
}

}  // namespace
}  // namespace fs::data
