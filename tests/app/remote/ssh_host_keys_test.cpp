// Host keys against real sshd servers (tests/fixtures/ssh_hosts), issue 42:
// which key type a server with several keys shows (item 3), a host known with
// another key type (item 3), StrictHostKeyChecking yes after "accept once",
// UserKnownHostsFile none (item 4), and warnings about ignored keywords.
// Its own fixture: "accept once" is remembered for the whole process.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "app/remote/known_hosts.h"
#include "app/remote/ssh_host.h"
#include "tests/fixtures/fixture_unavailable.h"
#include "tests/fixtures/ssh_hosts.h"

namespace fs::app::remote {
namespace {

namespace fsys = std::filesystem;
using fs::testing::SshHosts;
using protocol::Status;

class ScriptedPrompter : public Prompter {
 public:
  HostKeyAnswer hostKey(const HostKeyQuestion& q) override {
    questions.push_back(q);
    return answer;
  }
  std::optional<Secret> passphrase(const std::string&, int) override { return std::nullopt; }
  bool asksAbout(HostKeyQuestion::Kind kind) const override {
    return kind == HostKeyQuestion::Kind::kUnknown || asks_other_type;
  }
  void warning(const std::string& text) override { warnings.push_back(text); }
  HostKeyAnswer answer = HostKeyAnswer::kReject;
  bool asks_other_type = true;
  std::vector<HostKeyQuestion> questions;
  std::vector<std::string> warnings;
};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// "TYPE BASE64" of a public key file.
std::string publicKeyText(const std::string& pub) {
  std::ifstream in(pub);
  std::string type, key;
  in >> type >> key;
  return type + " " + key;
}

class SshHostKeysTest : public ::testing::Test {
 protected:
  // One set of servers for both suites (starting them takes seconds); freed at exit.
  static void SetUpTestSuite() {
    if (hosts_ == nullptr) hosts_ = std::make_unique<SshHosts>();
  }
  void SetUp() override {
    if (!hosts_->ok()) FS_FIXTURE_UNAVAILABLE(hosts_->error());
    dir_ = fsys::path(hosts_->dir()) / ("keys" + std::to_string(++counter_));
    fsys::create_directories(dir_);
  }

  // The fixture's ssh_config with `prefix` before it (first value wins).
  std::unique_ptr<SshHost> open(const std::string& alias, const std::shared_ptr<Prompter>& prompter,
                                const std::string& prefix) {
    const std::string path = (dir_ / "ssh_config").string();
    std::ofstream(path) << prefix << "\nHost *\nInclude " << hosts_->configPath() << "\n";
    SshConfigOptions options;
    options.user_config = path;
    options.system_config = "";
    auto config = SshConfig::load(options);
    EXPECT_TRUE(config.isOk()) << config.status().message();
    if (!config.isOk()) return nullptr;
    auto host = SshHost::open(alias, *config, prompter);
    EXPECT_TRUE(host.isOk()) << host.status().message();
    return host.isOk() ? std::move(*host) : nullptr;
  }

  std::string knownHostsLine(int i, const std::string& key_text) const {
    return "[" + hosts_->hostAddress(i) + "]:" + std::to_string(SshHosts::kSshPort) + " " + key_text + "\n";
  }

  static std::unique_ptr<SshHosts> hosts_;
  static int counter_;
  fsys::path dir_;
};

std::unique_ptr<SshHosts> SshHostKeysTest::hosts_;
int SshHostKeysTest::counter_ = 0;

// Item 3: h0 offers ed25519 and ecdsa; known_hosts holds only its ecdsa key.
// libssh's own order asks for ed25519 first; we ask for the stored type.
TEST_F(SshHostKeysTest, ServerWithSeveralKeysShowsTheStoredType) {
  ASSERT_TRUE(hosts_->addHostKey(0, "ecdsa")) << hosts_->error();
  const std::string kh = (dir_ / "known_hosts").string();
  std::ofstream(kh) << knownHostsLine(0, publicKeyText(hosts_->hostPublicKeyFile(0, "ecdsa")));
  auto prompter = std::make_shared<ScriptedPrompter>();
  auto host = open("h0", prompter, "Host *\n  UserKnownHostsFile " + kh + "\n  StrictHostKeyChecking yes\n");
  ASSERT_NE(host, nullptr);
  Status status = host->connect();
  EXPECT_TRUE(status.isOk()) << status.message();
  EXPECT_TRUE(prompter->questions.empty());
  // The same with the ed25519 key stored: both orders work.
  std::ofstream(kh) << knownHostsLine(0, publicKeyText(hosts_->hostPublicKeyFile(0)));
  auto again = open("h0", prompter, "Host *\n  UserKnownHostsFile " + kh + "\n  StrictHostKeyChecking yes\n");
  ASSERT_NE(again, nullptr);
  status = again->connect();
  EXPECT_TRUE(status.isOk()) << status.message();
}

// Item 3: h1 offers only ed25519; kh_ holds an ecdsa key for it (line 2).
class OtherKeyType : public SshHostKeysTest {
 protected:
  void SetUp() override {
    SshHostKeysTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    kh_ = (dir_ / "known_hosts").string();
    ASSERT_EQ(std::system(("ssh-keygen -q -t ecdsa -b 256 -N '' -C other -f '" + (dir_ / "ecdsa").string() +
                           "' </dev/null >/dev/null 2>&1")
                              .c_str()),
              0);
    const std::string stored = publicKeyText((dir_ / "ecdsa.pub").string());
    std::ofstream(kh_) << "other.example " << publicKeyText(hosts_->hostPublicKeyFile(0)) << "\n"
                       << knownHostsLine(1, stored);
    std::string blob;
    ASSERT_TRUE(base64Decode(stored.substr(stored.find(' ') + 1), &blob));
    stored_fingerprint_ = fingerprintSha256(blob);
  }
  std::string config(const std::string& strict) const {
    return "Host *\n  UserKnownHostsFile " + kh_ + "\n  StrictHostKeyChecking " + strict + "\n";
  }
  std::string kh_, stored_fingerprint_;
};

TEST_F(OtherKeyType, IsAskedAsAKnownHostWithAnotherKeyType) {
  auto prompter = std::make_shared<ScriptedPrompter>();
  auto host = open("h1", prompter, config("ask"));
  ASSERT_NE(host, nullptr);
  EXPECT_FALSE(host->connect().isOk());
  ASSERT_EQ(prompter->questions.size(), 1u);
  const HostKeyQuestion& q = prompter->questions[0];
  EXPECT_EQ(q.kind, HostKeyQuestion::Kind::kOtherType);
  EXPECT_EQ(q.key_type, "ssh-ed25519");
  ASSERT_EQ(q.known_keys.size(), 1u);
  EXPECT_EQ(q.known_keys[0].type, "ecdsa-sha2-nistp256");
  EXPECT_EQ(q.known_keys[0].fingerprint, stored_fingerprint_);
  EXPECT_EQ(q.known_keys[0].file, kh_);
  EXPECT_EQ(q.known_keys[0].line, 2);
  const std::string text = hostKeyQuestionText(q);
  EXPECT_TRUE(contains(text, "keys of other types are known for this host")) << text;
  EXPECT_TRUE(contains(text, "ecdsa-sha2-nistp256 " + stored_fingerprint_ + " in " + kh_ + ":2")) << text;
  EXPECT_TRUE(contains(text, q.fingerprint_sha256)) << text;
}

TEST_F(OtherKeyType, StrictHostKeyCheckingYesRefusesNamingTheStoredKey) {
  auto prompter = std::make_shared<ScriptedPrompter>();
  auto host = open("h1", prompter, config("yes"));
  ASSERT_NE(host, nullptr);
  Status status = host->connect();
  ASSERT_FALSE(status.isOk());
  EXPECT_TRUE(contains(status.message(), "known with another key type")) << status.message();
  EXPECT_TRUE(contains(status.message(), kh_ + ":2")) << status.message();
  EXPECT_TRUE(prompter->questions.empty());
}

TEST_F(OtherKeyType, APrompterThatOnlyKnowsUnknownKeysIsNotAsked) {
  auto prompter = std::make_shared<ScriptedPrompter>();
  prompter->asks_other_type = false;
  prompter->answer = HostKeyAnswer::kAcceptOnce;
  auto host = open("h1", prompter, config("ask"));
  ASSERT_NE(host, nullptr);
  Status status = host->connect();
  ASSERT_FALSE(status.isOk());
  EXPECT_TRUE(contains(status.message(), "ecdsa-sha2-nistp256 " + stored_fingerprint_ + " (" + kh_ + ":2)"))
      << status.message();
  EXPECT_TRUE(prompter->questions.empty());
}

// Low: a key accepted once is not accepted when StrictHostKeyChecking is yes.
TEST_F(SshHostKeysTest, AcceptedOnceDoesNotPassStrictHostKeyCheckingYes) {
  // h0: "accept once" lasts for the process, and OtherKeyType needs h1 never accepted.
  const std::string kh = (dir_ / "empty_known_hosts").string();
  auto prompter = std::make_shared<ScriptedPrompter>();
  prompter->answer = HostKeyAnswer::kAcceptOnce;
  auto ask = open("h0", prompter, "Host *\n  UserKnownHostsFile " + kh + "\n  StrictHostKeyChecking ask\n");
  ASSERT_NE(ask, nullptr);
  ASSERT_TRUE(ask->connect().isOk());
  ASSERT_EQ(prompter->questions.size(), 1u);
  auto strict =
      open("h0", prompter, "Host *\n  UserKnownHostsFile " + kh + "\n  StrictHostKeyChecking yes\n");
  ASSERT_NE(strict, nullptr);
  Status status = strict->connect();
  ASSERT_FALSE(status.isOk());
  EXPECT_TRUE(contains(status.message(), "StrictHostKeyChecking is yes")) << status.message();
  EXPECT_EQ(prompter->questions.size(), 1u);
  // Under "ask" the key accepted once still connects without a second question.
  auto again = open("h0", prompter, "Host *\n  UserKnownHostsFile " + kh + "\n  StrictHostKeyChecking ask\n");
  ASSERT_NE(again, nullptr);
  EXPECT_TRUE(again->connect().isOk());
  EXPECT_EQ(prompter->questions.size(), 1u);
}

// Item 4: "UserKnownHostsFile none" is no file, not ./none (which here holds
// the right key, so reading it would connect).
TEST_F(SshHostKeysTest, UserKnownHostsFileNoneIsNoFile) {
  const fsys::path cwd = fsys::current_path();
  fsys::current_path(dir_);
  std::ofstream("none") << knownHostsLine(0, publicKeyText(hosts_->hostPublicKeyFile(0)));
  auto prompter = std::make_shared<ScriptedPrompter>();
  auto host = open("h0", prompter,
                   "Host *\n  UserKnownHostsFile none\n  GlobalKnownHostsFile none\n"
                   "  StrictHostKeyChecking yes\n");
  Status status = host != nullptr ? host->connect() : Status::ok();
  fsys::current_path(cwd);
  ASSERT_NE(host, nullptr);
  EXPECT_TRUE(host->spec().user_known_hosts_files.empty());
  EXPECT_TRUE(host->spec().global_known_hosts_files.empty());
  ASSERT_FALSE(status.isOk());
  EXPECT_TRUE(contains(status.message(), "StrictHostKeyChecking is yes")) << status.message();
}

// Low: keywords we ignore are named with file:line once per connection.
TEST_F(SshHostKeysTest, IgnoredKeywordsAreWarnedAboutWithFileAndLine) {
  auto prompter = std::make_shared<ScriptedPrompter>();
  auto host = open("h0", prompter, "Host h0\n  HostKeyAlias real-name\n  HashKnownHosts yes\n");
  ASSERT_NE(host, nullptr);
  ASSERT_TRUE(host->connect().isOk());
  const std::string config = (dir_ / "ssh_config").string();
  ASSERT_EQ(prompter->warnings.size(), 2u);
  EXPECT_TRUE(contains(prompter->warnings[0], config + ":2: HostKeyAlias")) << prompter->warnings[0];
  EXPECT_TRUE(contains(prompter->warnings[1], config + ":3: HashKnownHosts")) << prompter->warnings[1];
  host->disconnect();
  ASSERT_TRUE(host->connect().isOk());
  EXPECT_EQ(prompter->warnings.size(), 2u);  // not again on a reconnect
}

}  // namespace
}  // namespace fs::app::remote
