// Fuzz target: a known_hosts file (app::remote::checkKnownHost and
// storedHostKeys: plain and [host]:port names, comma lists with * ? and !,
// hashed |1| names, @revoked and @cert-authority markers), looked up for a few
// fixed hosts with two fixed keys (the seeds hold lines for them). Also the
// base64 codec on the raw input. The parser is app code (fs_app_remote, which
// is Qt-free); this target compiles its file directly.
// Checked: kUnknown means no key is stored for the host; kOtherType lists
// exactly the stored keys; kKnown and kChanged point at a line holding a key
// for the host; every default host-key algorithm stays on offer;
// base64Decode(base64Encode(x)) == x.
#include <array>

#include "app/remote/known_hosts.h"
#include "fuzz/fuzz_util.h"

namespace {

namespace remote = fs::app::remote;
using Kind = remote::KnownHostResult::Kind;

std::string blob(const std::string& type, const std::string& key) {
  std::string out;
  for (const std::string* part : {&type, &key}) {
    const auto n = static_cast<std::uint32_t>(part->size());
    out += static_cast<char>(n >> 24);
    out += static_cast<char>(n >> 16);
    out += static_cast<char>(n >> 8);
    out += static_cast<char>(n);
    out += *part;
  }
  return out;
}

bool sameKeys(const std::vector<remote::StoredHostKey>& a, const std::vector<remote::StoredHostKey>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].type != b[i].type || a[i].fingerprint != b[i].fingerprint || a[i].file != b[i].file ||
        a[i].line != b[i].line)
      return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input = fs::fuzz::text(data, size);
  std::string decoded;
  fs::fuzz::check(remote::base64Decode(remote::base64Encode(input), &decoded) && decoded == input,
                  "base64Decode(base64Encode(x)) != x");

  // The keys of the seeds (fuzz/corpus/known_hosts): ed25519 and ecdsa-sha2-nistp256 blobs.
  static const std::array<std::string, 2> kKeys = {
      blob("ssh-ed25519", std::string(32, '\x11')),
      blob("ecdsa-sha2-nistp256", "nistp256" + std::string(65, '\x04'))};
  const std::vector<std::string> files = {fs::fuzz::writeScratch("known_hosts", input)};
  const std::pair<const char*, int> hosts[] = {{"github.com", 22}, {"gpu-node01", 2222}, {"10.0.0.1", 22}};
  for (const auto& [host, port] : hosts) {
    auto stored = remote::storedHostKeys(files, host, port);
    fs::fuzz::check(stored.isOk(), "storedHostKeys failed on a readable file: " + stored.status().message());
    const std::string offered = remote::hostKeyAlgorithmsPreferring(stored.value());
    for (const char* algorithm : {"ssh-ed25519", "ecdsa-sha2-nistp256", "rsa-sha2-512", "rsa-sha2-256"}) {
      fs::fuzz::check(offered.find(algorithm) != std::string::npos,
                      std::string("an algorithm fell off the offer: ") + algorithm + " in " + offered);
    }
    for (const std::string& key : kKeys) {
      auto result = remote::checkKnownHost(files, host, port, key);
      fs::fuzz::check(result.isOk(),
                      "checkKnownHost failed on a readable file: " + result.status().message());
      const remote::KnownHostResult& r = result.value();
      const std::string where = std::string(host) + ":" + std::to_string(port);
      switch (r.kind) {
        case Kind::kUnknown:
          fs::fuzz::check(stored->empty(), "kUnknown for " + where + " which has stored keys");
          break;
        case Kind::kOtherType:
          fs::fuzz::check(sameKeys(r.other_keys, stored.value()),
                          "kOtherType for " + where + " does not list its stored keys");
          break;
        case Kind::kKnown:
        case Kind::kChanged: {
          bool found = false;
          for (const auto& k : stored.value()) found = found || k.line == r.line;
          fs::fuzz::check(found && r.file == files[0], "the line of a known/changed key for " + where +
                                                           " holds no key for it: line " +
                                                           std::to_string(r.line));
          break;
        }
        case Kind::kRevoked:
          fs::fuzz::check(r.line > 0 && r.file == files[0], "kRevoked without its line");
          break;
      }
    }
  }
  return 0;
}
