// decodeBase64Lenient against Python's base64.b64decode (validate=False).
#include "backend/data/documents/base64.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "backend/data/rng.h"
#include "tests/backend/data/documents/oracle_util.h"

namespace fs::data {
namespace {

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) out += {digits[b >> 4], digits[b & 15]};
  return out;
}

std::string errorKind(const std::string& message) {
  if (message.find("non-ASCII") != std::string::npos) return "ascii";
  if (message.find("1 more than a multiple of 4") != std::string::npos) return "length";
  if (message.find("incorrect padding") != std::string::npos) return "padding";
  return message;
}

TEST(Base64Test, KnownCases) {
  auto ok = [](std::string_view in) {
    auto r = decodeBase64Lenient(in);
    EXPECT_TRUE(r.isOk()) << in << ": " << r.status().message();
    return r.isOk() ? r.value() : std::string("<error>");
  };
  EXPECT_EQ(ok(""), "");
  EXPECT_EQ(ok("YWJj"), "abc");
  EXPECT_EQ(ok("YW Jj\n"), "abc");  // whitespace skipped
  EXPECT_EQ(ok("Y-W_J*j"), "abc");  // any non-alphabet character skipped
  EXPECT_EQ(ok("YW=Jj"), "abc");    // '=' that cannot be padding yet is skipped
  EXPECT_EQ(ok("YWI="), "ab");
  EXPECT_EQ(ok("YWI=x"), "ab");  // complete padding ends the input
  EXPECT_EQ(ok("YQ==YWJj"), "a");
  EXPECT_EQ(errorKind(decodeBase64Lenient("YWJjZ").status().message()), "length");
  EXPECT_EQ(errorKind(decodeBase64Lenient("YWJjZA=").status().message()), "padding");
  EXPECT_EQ(errorKind(decodeBase64Lenient("YW\xc3\xa9Jj").status().message()), "ascii");
}

TEST(Base64Test, MatchesPythonOnRandomStrings) {
  // Real encodings with noise, and short strings drawn from a hostile alphabet.
  const std::string hostile = "ABab09+/=== \n\t-_.*";
  const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  Rng rng(7);
  std::vector<std::string> inputs = {"\xc3\xa9", "YWJj\xc3\xa9"};
  for (int i = 0; i < 600; ++i) {
    std::string s;
    const int64_t n = rng.range(0, i % 3 == 0 ? 40 : 12);
    for (int64_t k = 0; k < n; ++k) {
      const std::string& from = i % 2 ? hostile : alphabet;
      s += from[rng.below(from.size())];
    }
    if (i % 2 == 0 && rng.coin(0.5)) s += rng.coin(0.5) ? "=" : "==";
    if (i % 4 == 0) s.insert(rng.below(s.size() + 1), rng.coin(0.5) ? "\n" : " ");
    inputs.push_back(s);
  }
  // Long runs of data characters (the decoder's four-at-a-time path) broken
  // by noise and '=' at any offset within a group.
  for (int i = 0; i < 120; ++i) {
    std::string s;
    const int64_t n = rng.range(40, 400);
    for (int64_t k = 0; k < n; ++k) s += alphabet[rng.below(alphabet.size())];
    for (int64_t k = rng.range(0, 6); k > 0; --k) {
      s.insert(rng.below(s.size() + 1), std::string(1, hostile[rng.below(hostile.size())]));
    }
    if (rng.coin(0.3)) s += "==";
    inputs.push_back(s);
  }
  const nlohmann::json answers = test::askPythonOracle("base64_oracle.py", inputs);
  ASSERT_EQ(answers.size(), inputs.size());
  int errors = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto got = decodeBase64Lenient(inputs[i]);
    if (answers[i].contains("error")) {
      ++errors;
      ASSERT_FALSE(got.isOk()) << "'" << inputs[i] << "' decoded, Python: " << answers[i]["error"];
      EXPECT_EQ(errorKind(got.status().message()), answers[i]["error"].get<std::string>())
          << "'" << inputs[i] << "'";
    } else {
      ASSERT_TRUE(got.isOk()) << "'" << inputs[i] << "': " << got.status().message();
      EXPECT_EQ(hex(got.value()), answers[i]["hex"].get<std::string>()) << "'" << inputs[i] << "'";
    }
  }
  EXPECT_GT(errors, 50);
  EXPECT_LT(errors, 600);
}

}  // namespace
}  // namespace fs::data
