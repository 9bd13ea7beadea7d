// 200 hostile strings — quotes, $(..), backticks, ;, |, &&, newlines, leading
// dashes, globs, ~, non-UTF-8 — used as run names, run-root paths, command
// arguments, config values and host aliases on a real sshd host. Each is used
// verbatim or refused with a clear error; none is ever executed: every injection
// in them would create a canary file, which must never exist.
#include <sys/stat.h>
#include <unistd.h>

#include <QTemporaryDir>
#include <QtTest>
#include <filesystem>

#include "app/cluster/remote_runs.h"
#include "app/launch/run_preparation.h"
#include "app/launch/ssh/ssh_launch.h"
#include "backend/protocol/config/config_yaml.h"
#include "tests/app/cluster/ssh_test_util.h"
#include "tests/fixtures/fixture_unavailable.h"

namespace fs::app::cluster {

namespace {

// 200 strings, each trying to run `touch CANARY` if it ever reached a shell unquoted.
std::vector<std::string> hostileStrings(const std::string& canary) {
  const std::string touch = "touch " + canary;
  const std::vector<std::string> injections = {"$(" + touch + ")",
                                               "`" + touch + "`",
                                               ";" + touch,
                                               "|" + touch,
                                               "&&" + touch,
                                               "||" + touch,
                                               "\n" + touch,
                                               "'; " + touch + "; '",
                                               "\"; " + touch + "; \"",
                                               "$(" + touch + ")'\"",
                                               "&" + touch + "&",
                                               "\r\n" + touch,
                                               "${IFS}" + touch,
                                               "'$(" + touch + ")'",
                                               "\\$(" + touch + ")",
                                               "a\"b'c`" + touch + "`",
                                               "--" + touch,
                                               "-rf;" + touch,
                                               ">" + canary,
                                               "$((1))$(" + touch + ")"};
  const std::vector<std::string> wrappers = {"%s",   "run %s", "-%s",         "--%s",       "%s x",
                                             "*%s?", "~/%s",   "a\xff\xfe%s", "\xc3%s\x80", "%s$HOME"};
  std::vector<std::string> out;
  for (const auto& w : wrappers) {
    for (const auto& inj : injections) {
      std::string s = w;
      s.replace(s.find("%s"), 2, inj);
      out.push_back(s);
    }
  }
  return out;  // 10 x 20 = 200
}

}  // namespace

class HostileStringsTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    hosts_ = std::make_unique<fs::testing::SshHosts>(2);
    if (!hosts_->ok()) FS_QT_FIXTURE_UNAVAILABLE("sshd hosts in network namespaces: " + hosts_->error());
    QVERIFY(dir_.isValid());
    canary_ = dir_.filePath(QStringLiteral("CANARY")).toStdString();
    strings_ = hostileStrings(canary_);
    QCOMPARE(strings_.size(), std::size_t{200});
  }
  void cleanupTestCase() {
    QVERIFY2(::access(canary_.c_str(), F_OK) != 0, "a hostile string was executed: the canary exists");
    hosts_.reset();
    // Qt cannot name the non-UTF-8 directories made above; the file system library can.
    std::error_code ec;
    std::filesystem::remove_all(dir_.path().toStdString() + "/roots", ec);
  }

  // Command arguments: printf '%s' S over SSH prints S, byte for byte.
  void argumentsArriveVerbatim() {
    test::SshOpener opener(*hosts_);
    auto host = opener.open(hosts_->alias(0));
    QVERIFY(host.isOk());
    for (const auto& s : strings_) {
      auto r = host.value()->run({"printf", "%s", s});
      QVERIFY2(r.isOk(), r.isOk() ? "" : r.status().message().c_str());
      QCOMPARE(r->out, s);
    }
    QVERIFY(::access(canary_.c_str(), F_OK) != 0);
  }

  // Run-root paths and run names: the directory is made with exactly that name, or refused.
  void pathsAndRunNamesAreUsedVerbatim() {
    test::SshOpener opener(*hosts_);
    auto host = opener.open(hosts_->alias(0));
    QVERIFY(host.isOk());
    int made = 0;
    for (std::size_t i = 0; i < strings_.size(); ++i) {
      const std::string& s = strings_[i];
      // A path component: '/' would nest, which is fine, but keep one level per string.
      std::string component = s;
      std::replace(component.begin(), component.end(), '/', '_');
      const std::string root = dir_.path().toStdString() + "/roots/" + std::to_string(i) + "-" + component;
      const std::string name = app::sanitizeRunName(QString::fromStdString(s)).toStdString();
      auto dir = createRunDirectory(*host.value(), root, name);
      if (!dir) {
        QVERIFY2(dir.status().message().find(host.value()->name()) != std::string::npos,
                 dir.status().message().c_str());
        continue;
      }
      ++made;
      QCOMPARE(dir.value(), root + "/" + name);
      struct stat st {};
      QVERIFY2(::stat(dir.value().c_str(), &st) == 0 && S_ISDIR(st.st_mode), dir.value().c_str());
    }
    QVERIFY(made > 0);
    QVERIFY(::access(canary_.c_str(), F_OK) != 0);
  }

  // Issue 42 (Low): "~/x" as the run root is x under the login directory, not a
  // directory named '~' (NOTE [A run root under ~]); the runs list reads it the same way.
  void aRunRootUnderTildeIsUnderTheLoginDirectory() {
    test::SshOpener opener(*hosts_);
    auto host = opener.open(hosts_->alias(0));
    QVERIFY(host.isOk());
    auto home = host.value()->run({"sh", "-c", "printf '%s' \"$HOME\""});
    QVERIFY(home.isOk() && home->exit_code == 0 && home->out.starts_with('/'));
    const std::string leaf = "fs-tilde-root-" + std::to_string(::getpid());
    auto dir = createRunDirectory(*host.value(), "~/" + leaf, "r");
    QVERIFY2(dir.isOk(), dir.isOk() ? "" : dir.status().message().c_str());
    QCOMPARE(dir.value(), home->out + "/" + leaf + "/r");
    QVERIFY(!std::filesystem::exists(home->out + "/~"));
    const RemoteRunScan scan = scanRemoteRunRoot(*host.value(), QString::fromStdString("~/" + leaf));
    QVERIFY2(scan.error.isEmpty(), qPrintable(scan.error));
    QCOMPARE(scan.root.toStdString(), home->out + "/" + leaf);
    auto refused = createRunDirectory(*host.value(), "~nobody/" + leaf, "r");
    QVERIFY(!refused.isOk());
    QVERIFY2(refused.status().message().find("~user") != std::string::npos,
             refused.status().message().c_str());
    std::filesystem::remove_all(home->out + "/" + leaf);
  }

  // Config values (the run name, a dataset's shards) survive the upload and the engine reading them.
  void configValuesSurviveTheEngine() {
    test::SshOpener opener(*hosts_);
    auto host = opener.open(hosts_->alias(0));
    QVERIFY(host.isOk());
    const std::string dir = dir_.path().toStdString() + "/configs";
    QVERIFY(host.value()->makeDirs(dir).isOk());
    for (std::size_t i = 0; i < strings_.size(); i += 20) {  // each validate loads LibTorch: one per wrapper
      protocol::RunConfig c = test::tinyConfig();
      c.name = strings_[i];
      const std::string path = dir + "/c" + std::to_string(i) + ".yaml";
      QVERIFY(host.value()->writeFileAtomic(path, protocol::dumpConfigYaml(c)).isOk());
      auto r = host.value()->run({FS_TEST_FLAMINGO_TRAIN, "validate", path});
      QVERIFY(r.isOk());
      // Either valid (the name is free text) or refused naming the field; never a crash.
      QVERIFY2(r->exit_code == 0 || r->err.find("name") != std::string::npos, r->err.c_str());
      auto back = protocol::loadConfigYaml(host.value()->readFile(path, 0, 1u << 20).value(), path);
      if (back.ok())
        QCOMPARE(back.config.name, protocol::loadConfigYaml(protocol::dumpConfigYaml(c), "x").config.name);
    }
    QVERIFY(::access(canary_.c_str(), F_OK) != 0);
  }

  // Host aliases: resolved into a host name used as is, or refused; never run.
  void hostAliasesAreNeverRun() {
    remote::SshConfigOptions options;
    options.user_config = hosts_->configPath();
    options.system_config.clear();
    auto config = remote::SshConfig::load(options);
    QVERIFY(config.isOk());
    for (const auto& s : strings_) {
      auto spec = config->resolve(s);
      if (!spec) {
        QVERIFY(!spec.status().message().empty());
        continue;
      }
      QVERIFY(!spec->hostname.empty());
    }
    QVERIFY(::access(canary_.c_str(), F_OK) != 0);
  }

 private:
  std::unique_ptr<fs::testing::SshHosts> hosts_;
  QTemporaryDir dir_{QStringLiteral("/tmp/fs-hostile-XXXXXX")};
  std::string canary_;
  std::vector<std::string> strings_;
};

}  // namespace fs::app::cluster

QTEST_GUILESS_MAIN(fs::app::cluster::HostileStringsTest)
#include "hostile_strings_test.moc"
