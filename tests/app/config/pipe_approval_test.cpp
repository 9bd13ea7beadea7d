// Issue 26 item 5: which pipe: commands the GUI asks about before a launch
// (provenance in ConfigDocument, approvals remembered per exact text in
// QSettings), without widgets.
#include "app/config/pipe_approval.h"

#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "app/config/config_document.h"
#include "backend/protocol/config/config_yaml.h"

namespace fs::app {

namespace proto = fs::protocol;
using Texts = std::vector<std::string>;

namespace {

Texts sourcesOf(const std::vector<proto::PipeSource>& sources) {
  Texts out;
  for (const auto& s : sources) out.push_back(s.source);
  return out;
}

proto::RunConfig withPipes() {
  proto::RunConfig c = proto::defaultRunConfig();
  c.data.datasets.at(0).shards = "/d/{0..9}.tar::pipe:curl -s http://h/a.tar";
  c.data.datasets.at(1).shards = "{x.tar,pipe:rm -rf ~}";
  c.data.datasets.at(1).val_shards = "pipe:curl -s http://h/a.tar";  // same text: asked once
  return c;
}

}  // namespace

class PipeApprovalTest : public QObject {
  Q_OBJECT

 private slots:
  void init() {
    dir_.reset(new QTemporaryDir);
    QVERIFY(dir_->isValid());
  }

  void everySourceFromElsewhereIsAskedOnce() {
    QSettings settings(settingsPath(), QSettings::IniFormat);
    PipeApprovals approvals(settings);
    const auto ask = pipeSourcesToApprove(withPipes(), {}, approvals);
    QCOMPARE(sourcesOf(ask), (Texts{"pipe:curl -s http://h/a.tar", "{x.tar,pipe:rm -rf ~}"}));
    QCOMPARE(ask[0].field, std::string("data.datasets[0].shards"));
    QCOMPARE(ask[1].commands, (Texts{"rm -rf ~"}));
    QVERIFY(pipeSourcesToApprove(proto::defaultRunConfig(), {}, approvals).empty());
  }

  void approvalsAreRememberedPerExactTextAcrossSessions() {
    const std::string hostile = "cat 'a b'\\\"c\",d;$(x) `y` =%1 @ # \xc3\xa9\n2";
    {
      QSettings settings(settingsPath(), QSettings::IniFormat);
      PipeApprovals approvals(settings);
      approvals.remember({"pipe:curl -s http://h/a.tar", "pipe:" + hostile});
    }
    QSettings settings(settingsPath(), QSettings::IniFormat);  // a later session
    PipeApprovals approvals(settings);
    QVERIFY(approvals.isApproved("pipe:" + hostile));
    QCOMPARE(sourcesOf(pipeSourcesToApprove(withPipes(), {}, approvals)), (Texts{"{x.tar,pipe:rm -rf ~}"}));
    // A changed command asks again, even by one character.
    proto::RunConfig changed = withPipes();
    changed.data.datasets.at(0).shards = "pipe:curl -s http://h/a.tar ";
    changed.data.datasets.at(1).shards = "/d/x.tar";
    changed.data.datasets.at(1).val_shards = "";
    QCOMPARE(sourcesOf(pipeSourcesToApprove(changed, {}, approvals)),
             (Texts{"pipe:curl -s http://h/a.tar "}));
    approvals.remember({"pipe:curl -s http://h/a.tar"});  // already there: nothing changes
    QCOMPARE(approvals.size(), size_t{2});
  }

  // Issue 42 (Low b): an approved command may hold a credential; the file keeps hashes.
  void approvalsAreKeptAsHashesNeverAsText() {
    const std::string withToken = "pipe:curl -s -H 'Authorization: Bearer tok-s3cret' https://h/a.tar";
    {
      QSettings settings(settingsPath(), QSettings::IniFormat);
      PipeApprovals approvals(settings);
      approvals.remember({withToken});
      PipeApprovals slurm(settings, PipeApprovals::kSlurmArgsKey);
      slurm.remember({"--comment=pw-s3cret"});
    }
    const QByteArray file = readSettingsFile();
    QVERIFY2(!file.contains("s3cret") && !file.contains("curl"), file.constData());
    QVERIFY2(file.contains(PipeApprovals::hashOf(withToken).toLatin1()), file.constData());
    QSettings settings(settingsPath(), QSettings::IniFormat);
    PipeApprovals approvals(settings);
    QVERIFY(approvals.isApproved(withToken));
    QVERIFY(!approvals.isApproved(withToken + " "));  // a changed command asks again
    QVERIFY(PipeApprovals(settings, PipeApprovals::kSlurmArgsKey).isApproved("--comment=pw-s3cret"));
    QVERIFY(!PipeApprovals(settings, PipeApprovals::kSlurmArgsKey).isApproved(withToken));  // apart
  }

  void plainTextApprovalsOfOlderBuildsBecomeHashes() {
    const std::string old = "pipe:aws s3 cp s3://b/x.tar - --secret tok-s3cret";
    {
      QSettings settings(settingsPath(), QSettings::IniFormat);  // what an older build wrote
      settings.setValue(QStringLiteral("pipe_approvals/sources"), QStringList{QString::fromStdString(old)});
      settings.setValue(QStringLiteral("slurm_arg_approvals/args"),
                        QStringList{QStringLiteral("--x=s3cret")});
    }
    QVERIFY(readSettingsFile().contains("s3cret"));
    {
      QSettings settings(settingsPath(), QSettings::IniFormat);
      PipeApprovals approvals(settings);
      QVERIFY(approvals.isApproved(old));
      QCOMPARE(approvals.size(), size_t{1});
      PipeApprovals slurm(settings, PipeApprovals::kSlurmArgsKey);
      QVERIFY(slurm.isApproved("--x=s3cret"));
      QVERIFY(!settings.contains(QStringLiteral("pipe_approvals/sources")));
    }
    const QByteArray file = readSettingsFile();
    QVERIFY2(!file.contains("s3cret"), file.constData());
  }

  void typedInTheFormCountsAsApproved() {
    ConfigDocument doc;
    QVERIFY(doc.setField("data.datasets[1].shards", "/d/a.tar::pipe:cat /d/{0..3}.tar").isOk());
    QCOMPARE(doc.typedPipeSources(), (std::set<std::string>{"pipe:cat /d/{0..3}.tar"}));
    QSettings settings(settingsPath(), QSettings::IniFormat);
    PipeApprovals approvals(settings);
    QVERIFY(pipeSourcesToApprove(doc.config(), doc.typedPipeSources(), approvals).empty());
  }

  void loadedImportedOrResetConfigsAreNotTyped() {
    ConfigDocument doc;
    QVERIFY(doc.setField("data.datasets[0].shards", "pipe:cat /mine.tar").isOk());
    doc.setConfig(withPipes());  // a preset, an import, a History config
    QVERIFY(doc.typedPipeSources().empty());
    // Loading a file goes through the same reset.
    const QString file = dir_->filePath(QStringLiteral("theirs.yaml"));
    QVERIFY(doc.setField("data.datasets[0].shards", "pipe:cat /mine.tar").isOk());
    QVERIFY(proto::saveConfigFile(withPipes(), file.toStdString()).isOk());
    QSignalSpy loaded(&doc, &ConfigDocument::loaded);
    doc.loadFile(file);
    QVERIFY(loaded.wait(5000));
    QVERIFY(doc.typedPipeSources().empty());
    QSettings settings(settingsPath(), QSettings::IniFormat);
    PipeApprovals approvals(settings);
    QCOMPARE(pipeSourcesToApprove(doc.config(), doc.typedPipeSources(), approvals).size(), size_t{2});
  }

  void editingAroundALoadedPipeDoesNotApproveIt() {
    ConfigDocument doc;
    doc.setConfig(withPipes());
    // Appending a plain shard keeps the loaded pipe untyped ...
    QVERIFY(doc.setField("data.datasets[1].shards", "{x.tar,pipe:rm -rf ~}::/d/more.tar").isOk());
    QVERIFY(doc.typedPipeSources().empty());
    // ... changing the command makes the new text the user's own.
    QVERIFY(doc.setField("data.datasets[1].shards", "{x.tar,pipe:rm -rf /tmp/x}::/d/more.tar").isOk());
    QCOMPARE(doc.typedPipeSources(), (std::set<std::string>{"{x.tar,pipe:rm -rf /tmp/x}"}));
    QSettings settings(settingsPath(), QSettings::IniFormat);
    PipeApprovals approvals(settings);
    QCOMPARE(sourcesOf(pipeSourcesToApprove(doc.config(), doc.typedPipeSources(), approvals)),
             (Texts{"pipe:curl -s http://h/a.tar"}));
  }

 private:
  QString settingsPath() const { return dir_->filePath(QStringLiteral("settings.ini")); }
  QByteArray readSettingsFile() const {
    QFile f(settingsPath());
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray("(unreadable)");
  }

  std::unique_ptr<QTemporaryDir> dir_;
};

}  // namespace fs::app

QTEST_GUILESS_MAIN(fs::app::PipeApprovalTest)
#include "pipe_approval_test.moc"
