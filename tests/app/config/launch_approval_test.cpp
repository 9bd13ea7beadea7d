// Issue 43 item 3: the one app call before a launch (LaunchApprovals::check)
// returns every source needing approval, pipe: sources and SLURM extra_args,
// each with what and where it is, and which to ask about; approve() stores
// what was checked (hashed), without scanning the config again.
#include "app/config/launch_approval.h"

#include <QSettings>
#include <QTemporaryDir>
#include <QtTest>

#include "app/config/config_document.h"

namespace fs::app {

namespace proto = fs::protocol;
using Kind = ApprovalItem::Kind;
using Scope = LaunchApprovals::Scope;

namespace {

proto::RunConfig withEverything() {
  proto::RunConfig c = proto::defaultRunConfig();
  c.data.datasets.at(0).shards = "/d/{0..9}.tar::pipe:curl -s http://h/a.tar";
  c.data.datasets.at(1).shards = "{x.tar,pipe:rm -rf ~}";
  c.data.datasets.at(1).val_shards = "pipe:curl -s http://h/a.tar";  // same text: listed once
  c.launch.kind = "slurm";
  c.launch.slurm.extra_args = {"--mem=64G", "--export=ALL,BASH_ENV=$(id)", "--mem=64G"};
  return c;
}

struct Row {
  Kind kind;
  std::string text, field;
  bool ask;
  bool operator==(const Row&) const = default;
};

std::vector<Row> rowsOf(const LaunchApprovalCheck& check) {
  std::vector<Row> out;
  for (const auto& i : check.items) out.push_back({i.kind, i.text, i.field, i.ask});
  return out;
}

}  // namespace

class LaunchApprovalTest : public QObject {
  Q_OBJECT

 private slots:
  void init() {
    dir_.reset(new QTemporaryDir);
    QVERIFY(dir_->isValid());
    settings_.reset(new QSettings(dir_->filePath(QStringLiteral("s.ini")), QSettings::IniFormat));
  }

  void everySourceIsReturnedWithWhatAndWhere() {
    LaunchApprovals approvals(*settings_);
    const auto check = approvals.check(withEverything(), {}, {}, Scope::kSlurmSubmit);
    const std::vector<Row> want = {
        {Kind::kPipe, "pipe:curl -s http://h/a.tar", "data.datasets[0].shards", true},
        {Kind::kPipe, "{x.tar,pipe:rm -rf ~}", "data.datasets[1].shards", true},
        {Kind::kSlurmArg, "--mem=64G", "launch.slurm.extra_args[0]", true},
        {Kind::kSlurmArg, "--export=ALL,BASH_ENV=$(id)", "launch.slurm.extra_args[1]", true},
    };
    QVERIFY(rowsOf(check) == want);
    QCOMPARE(check.items[1].pipe.commands, (std::vector<std::string>{"rm -rf ~"}));
    QVERIFY(check.hasPipe());
    QVERIFY(check.needsAnswer());
    QCOMPARE(check.toAsk().size(), std::size_t{4});
    // A plain launch does not take the SLURM items.
    const auto local = approvals.check(withEverything(), {}, {}, Scope::kLaunch);
    QCOMPARE(local.items.size(), std::size_t{2});
    // Nothing to approve: nothing returned, nothing to ask, no --allow-pipe.
    const auto plain = approvals.check(proto::defaultRunConfig(), {}, {}, Scope::kSlurmSubmit);
    QVERIFY(plain.items.empty());
    QVERIFY(!plain.needsAnswer());
    QVERIFY(!plain.hasPipe());
  }

  void approvedAndTypedOnesAreReturnedButNotAsked() {
    {
      LaunchApprovals approvals(*settings_);
      auto check = approvals.check(withEverything(), {}, {}, Scope::kSlurmSubmit);
      check.items.erase(check.items.begin() + 1);  // the user approved all but the rm source
      approvals.approve(check);
    }
    QSettings later(dir_->filePath(QStringLiteral("s.ini")), QSettings::IniFormat);  // a later session
    LaunchApprovals approvals(later);
    auto check = approvals.check(withEverything(), {}, {}, Scope::kSlurmSubmit);
    QCOMPARE(check.items.size(), std::size_t{4});
    QCOMPARE(check.toAsk().size(), std::size_t{1});
    QCOMPARE(check.toAsk()[0].text, std::string("{x.tar,pipe:rm -rf ~}"));
    // Typed into the form: listed (it still needs --allow-pipe) but not asked.
    check = approvals.check(withEverything(), {"{x.tar,pipe:rm -rf ~}"}, {}, Scope::kSlurmSubmit);
    QVERIFY(!check.needsAnswer());
    QVERIFY(check.hasPipe());
    // Typed SLURM items likewise.
    proto::RunConfig c = proto::defaultRunConfig();
    c.launch.slurm.extra_args = {"--time=1:00:00"};
    QVERIFY(!approvals.check(c, {}, {"--time=1:00:00"}, Scope::kSlurmSubmit).needsAnswer());
    QVERIFY(approvals.check(c, {}, {}, Scope::kSlurmSubmit).needsAnswer());
  }

  void approveStoresWhatWasCheckedAsHashesWithoutRescanning() {
    LaunchApprovals approvals(*settings_);
    proto::RunConfig config = withEverything();
    const auto check = approvals.check(config, {}, {}, Scope::kSlurmSubmit);
    // The config changes between the check and the answer: approve() stores the checked
    // texts only (one scan), so the changed text is still asked about.
    config.data.datasets.at(1).shards = "{x.tar,pipe:rm -rf / }";
    approvals.approve(check);
    const auto after = approvals.check(config, {}, {}, Scope::kSlurmSubmit);
    QCOMPARE(after.toAsk().size(), std::size_t{1});
    QCOMPARE(after.toAsk()[0].text, std::string("{x.tar,pipe:rm -rf / }"));
    // Stored as "sha256v1:" hashes, apart per kind; never the text.
    settings_->sync();
    const QStringList pipes = settings_->value(PipeApprovals::kPipeKey).toStringList();
    const QStringList args = settings_->value(PipeApprovals::kSlurmArgsKey).toStringList();
    QCOMPARE(pipes.size(), 2);
    QCOMPARE(args.size(), 2);
    QVERIFY(pipes.contains(PipeApprovals::hashOf("{x.tar,pipe:rm -rf ~}")));
    QVERIFY(args.contains(PipeApprovals::hashOf("--mem=64G")));
    for (const QString& h : pipes + args) QVERIFY2(h.startsWith(QLatin1String("sha256v1:")), qPrintable(h));
    QFile file(dir_->filePath(QStringLiteral("s.ini")));
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QByteArray raw = file.readAll();
    QVERIFY(!raw.contains("rm -rf"));
    QVERIFY(!raw.contains("BASH_ENV"));
    // A SLURM approval never approves a pipe: source of the same text, nor the other way.
    QVERIFY(!PipeApprovals(*settings_).isApproved("--mem=64G"));
  }

 private:
  std::unique_ptr<QTemporaryDir> dir_;
  std::unique_ptr<QSettings> settings_;
};

}  // namespace fs::app

QTEST_MAIN(fs::app::LaunchApprovalTest)
#include "launch_approval_test.moc"
