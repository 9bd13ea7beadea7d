// known_hosts lookups and fingerprints against ssh-keygen as the oracle:
// -l (fingerprints), -H (hashing a file), -F (which line matches a host).
#include "app/remote/known_hosts.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/fixtures/fixture_unavailable.h"

namespace fs::app::remote {
namespace {

namespace fsys = std::filesystem;

std::string runCapture(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  for (std::size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  pclose(p);
  return out;
}

struct Key {
  std::string type, base64, blob, pub_path;
};

class KnownHostsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (system("ssh-keygen -? >/dev/null 2>&1; command -v ssh-keygen >/dev/null") != 0) {
      GTEST_SKIP() << "ssh-keygen is not installed";
    }
    dir_ = fsys::temp_directory_path() / ("fs_known_hosts_" + std::to_string(getpid()));
    fsys::remove_all(dir_);
    fsys::create_directories(dir_);
  }
  void TearDown() override { fsys::remove_all(dir_); }

  Key makeKey(const std::string& name, const std::string& type) {
    const std::string path = (dir_ / name).string();
    const std::string bits = type == "rsa" ? " -b 2048" : type == "ecdsa" ? " -b 256" : "";
    runCapture("ssh-keygen -q -t " + type + bits + " -N '' -C test -f '" + path + "' </dev/null 2>&1");
    std::ifstream in(path + ".pub");
    Key k;
    in >> k.type >> k.base64;
    EXPECT_TRUE(base64Decode(k.base64, &k.blob)) << name;
    k.pub_path = path + ".pub";
    return k;
  }

  std::string write(const std::string& name, const std::string& text) {
    const std::string p = (dir_ / name).string();
    std::ofstream(p) << text;
    return p;
  }

  fsys::path dir_;
};

TEST_F(KnownHostsTest, FingerprintsEqualSshKeygen) {
  for (const char* type : {"ed25519", "ecdsa", "rsa"}) {
    const Key k = makeKey(std::string("fp_") + type, type);
    std::istringstream out(runCapture("ssh-keygen -lf '" + k.pub_path + "'"));
    std::string bits, fp;
    out >> bits >> fp;
    EXPECT_EQ(fingerprintSha256(k.blob), fp) << type;
    EXPECT_EQ(keyBlobType(k.blob), k.type);
  }
}

TEST_F(KnownHostsTest, Base64RoundTrips) {
  for (std::string s : {"", "a", "ab", "abc", "abcd", "\xff\x00\x10"}) {
    std::string back;
    ASSERT_TRUE(base64Decode(base64Encode(s), &back));
    EXPECT_EQ(back, s);
  }
  std::string junk;
  EXPECT_FALSE(base64Decode("ab$c", &junk));
}

TEST_F(KnownHostsTest, MatchesLikeSshKeygenF) {
  const Key a = makeKey("a", "ed25519");
  const Key b = makeKey("b", "ed25519");
  const Key r = makeKey("r", "ecdsa");
  const std::string kh =
      write("known_hosts",
            "# comment line\n"
            "\n"
            "alpha.example " +
                a.type + " " + a.base64 + "\n" + "beta,gamma,10.0.0.5 " + b.type + " " + b.base64 +
                " some comment\n" + "[alpha.example]:2222 " + b.type + " " + b.base64 + "\n" +
                "*.wild.example,!no.wild.example " + a.type + " " + a.base64 + "\n" + "node?? " + r.type +
                " " + r.base64 + "\n" + "@cert-authority *.ca.example " + a.type + " " + a.base64 + "\n" +
                "garbage line\n");
  struct Case {
    std::string host;
    int port;
    const Key* key;
    KnownHostResult::Kind kind;
  };
  const std::vector<Case> cases = {
      {"alpha.example", 22, &a, KnownHostResult::Kind::kKnown},
      {"ALPHA.example", 22, &a, KnownHostResult::Kind::kKnown},
      {"alpha.example", 22, &b, KnownHostResult::Kind::kChanged},
      {"alpha.example", 2222, &b, KnownHostResult::Kind::kKnown},
      {"alpha.example", 2222, &a, KnownHostResult::Kind::kChanged},
      {"alpha.example", 2223, &a, KnownHostResult::Kind::kUnknown},
      {"gamma", 22, &b, KnownHostResult::Kind::kKnown},
      {"10.0.0.5", 22, &b, KnownHostResult::Kind::kKnown},
      {"x.wild.example", 22, &a, KnownHostResult::Kind::kKnown},
      {"no.wild.example", 22, &a, KnownHostResult::Kind::kUnknown},
      {"node42", 22, &r, KnownHostResult::Kind::kKnown},
      // Only another key type is stored: the host is known with another type (issue 42 item 3).
      {"node42", 22, &a, KnownHostResult::Kind::kOtherType},
      {"x.ca.example", 22, &a, KnownHostResult::Kind::kUnknown},
      {"delta", 22, &a, KnownHostResult::Kind::kUnknown},
  };
  for (int hashed = 0; hashed < 2; ++hashed) {
    if (hashed == 1) {
      // ssh-keygen -H hashes the plain names (in place, keeping the line numbers
      // of entries with one name; lists become one line per name).
      runCapture("ssh-keygen -H -f '" + kh + "' 2>&1");
    }
    for (const Case& c : cases) {
      SCOPED_TRACE((hashed ? "hashed " : "plain ") + c.host + ":" + std::to_string(c.port));
      auto result = checkKnownHost({dir_ / "missing", kh}, c.host, c.port, c.key->blob);
      ASSERT_TRUE(result.isOk()) << result.status().message();
      EXPECT_EQ(result->kind, c.kind);
      if (result->kind == KnownHostResult::Kind::kKnown || result->kind == KnownHostResult::Kind::kChanged) {
        EXPECT_EQ(result->file, kh);
        // ssh-keygen -F lists the lines stored for this name.
        const std::string name = knownHostsName(c.host, c.port);
        const std::string oracle = runCapture("ssh-keygen -F '" + name + "' -f '" + kh + "' 2>/dev/null");
        EXPECT_NE(oracle.find("found: line " + std::to_string(result->line) + " "), std::string::npos)
            << oracle;
      }
      if (result->kind == KnownHostResult::Kind::kOtherType) {
        // Every stored key named with its file:line, the lines ssh-keygen -F finds.
        ASSERT_EQ(result->other_keys.size(), 1u);
        const StoredHostKey& k = result->other_keys[0];
        EXPECT_EQ(k.type, r.type);
        EXPECT_EQ(k.fingerprint, fingerprintSha256(r.blob));
        EXPECT_EQ(k.file, kh);
        const std::string oracle =
            runCapture("ssh-keygen -F '" + knownHostsName(c.host, c.port) + "' -f '" + kh + "' 2>/dev/null");
        EXPECT_NE(oracle.find("found: line " + std::to_string(k.line) + " "), std::string::npos) << oracle;
      }
      if (result->kind == KnownHostResult::Kind::kChanged) {
        EXPECT_EQ(result->stored_key_type, c.key->type);
        EXPECT_EQ(result->stored_fingerprint, fingerprintSha256(c.key == &a ? b.blob : a.blob));
      }
    }
  }
}

// Issue 42 item 3: a host stored with an ecdsa and an rsa key, offering ed25519.
TEST_F(KnownHostsTest, HostKnownWithOtherKeyTypesListsThemAll) {
  const Key e = makeKey("e", "ecdsa");
  const Key r = makeKey("r", "rsa");
  const Key d = makeKey("d", "ed25519");
  const std::string kh = write("kh", "other " + d.type + " " + d.base64 + "\n[box]:2200 " + e.type + " " +
                                         e.base64 + "\n[box]:2200 " + r.type + " " + r.base64 + "\n");
  auto result = checkKnownHost({kh}, "box", 2200, d.blob);
  ASSERT_TRUE(result.isOk());
  EXPECT_EQ(result->kind, KnownHostResult::Kind::kOtherType);
  ASSERT_EQ(result->other_keys.size(), 2u);
  EXPECT_EQ(result->other_keys[0].type, "ecdsa-sha2-nistp256");
  EXPECT_EQ(result->other_keys[0].line, 2);
  EXPECT_EQ(result->other_keys[1].type, "ssh-rsa");
  EXPECT_EQ(result->other_keys[1].line, 3);
  auto stored = storedHostKeys({dir_ / "missing", kh}, "box", 2200);
  ASSERT_TRUE(stored.isOk());
  EXPECT_EQ(stored->size(), 2u);
  // The algorithms that verify the stored types come first, the rest after.
  EXPECT_EQ(hostKeyAlgorithmsPreferring(*stored),
            "ecdsa-sha2-nistp256,rsa-sha2-512,rsa-sha2-256,ssh-ed25519,ecdsa-sha2-nistp521,"
            "ecdsa-sha2-nistp384,sk-ssh-ed25519@openssh.com,sk-ecdsa-sha2-nistp256@openssh.com");
  EXPECT_EQ(hostKeyAlgorithmsPreferring({}),
            "ssh-ed25519,ecdsa-sha2-nistp521,ecdsa-sha2-nistp384,ecdsa-sha2-nistp256,"
            "sk-ssh-ed25519@openssh.com,sk-ecdsa-sha2-nistp256@openssh.com,rsa-sha2-512,rsa-sha2-256");
}

TEST_F(KnownHostsTest, RevokedKeysAreRevokedForEveryHost) {
  const Key a = makeKey("a", "ed25519");
  const std::string kh =
      write("kh", "host1 " + a.type + " " + a.base64 + "\n@revoked * " + a.type + " " + a.base64 + "\n");
  auto result = checkKnownHost({kh}, "host1", 22, a.blob);
  ASSERT_TRUE(result.isOk());
  EXPECT_EQ(result->kind, KnownHostResult::Kind::kRevoked);
  EXPECT_EQ(result->line, 2);
}

TEST_F(KnownHostsTest, AppendWritesALineSshKeygenFinds) {
  const Key a = makeKey("a", "ed25519");
  const std::string file = (dir_ / "home" / ".ssh" / "known_hosts").string();
  ASSERT_TRUE(appendKnownHost(file, "Host.Example", 2222, a.blob).isOk());
  ASSERT_TRUE(appendKnownHost(file, "other", 22, a.blob).isOk());
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((dir_ / "home" / ".ssh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_NE(runCapture("ssh-keygen -F '[host.example]:2222' -f '" + file + "'").find("found: line 1"),
            std::string::npos);
  EXPECT_NE(runCapture("ssh-keygen -F other -f '" + file + "'").find("found: line 2"), std::string::npos);
  auto result = checkKnownHost({file}, "host.example", 2222, a.blob);
  ASSERT_TRUE(result.isOk());
  EXPECT_EQ(result->kind, KnownHostResult::Kind::kKnown);
}

// NOTE [Linear glob] in app/remote/ssh_patterns.h: a host field of 40 stars
// before an 'x' ran for minutes (fuzz/regressions/known_hosts/).
TEST(KnownHostsPatterns, ManyStarsMatchWithoutBacktracking) {
  const std::string blob = std::string("\0\0\0\x0bssh-ed25519\0\0\0\x20", 19) + std::string(32, '\x11');
  const fsys::path file = fsys::temp_directory_path() / ("fs_known_hosts_stars_" + std::to_string(getpid()));
  std::ofstream(file) << std::string(40, '*') << "x,a?c " << keyBlobType(blob) << " " << base64Encode(blob)
                      << "\n";
  const std::vector<std::string> files = {file.string()};
  EXPECT_TRUE(storedHostKeys(files, std::string(30, 'a'), 22).value().empty());
  EXPECT_EQ(storedHostKeys(files, std::string(30, 'a') + "x", 22).value().size(), 1u);
  EXPECT_EQ(storedHostKeys(files, "abc", 22).value().size(), 1u);
  EXPECT_TRUE(storedHostKeys(files, "ac", 22).value().empty());
  EXPECT_EQ(checkKnownHost(files, "x", 22, blob).value().kind, KnownHostResult::Kind::kKnown);
  fsys::remove(file);
}

}  // namespace
}  // namespace fs::app::remote
