// Issue 42 item 2: launch.slurm.extra_args from a config the user did not type
// are shown before a SLURM submit (NOTE [SLURM extra args] in
// app/launch/slurm/slurm_script.h): provenance in ConfigDocument, approvals
// remembered per exact item in QSettings apart from the pipe: approvals.
#include <QSettings>
#include <QTemporaryDir>
#include <QtTest>

#include "app/config/config_document.h"
#include "app/config/pipe_approval.h"

namespace fs::app {

namespace proto = fs::protocol;
using Texts = std::vector<std::string>;

class SlurmArgsApprovalTest : public QObject {
  Q_OBJECT

 private slots:
  void init() {
    dir_.reset(new QTemporaryDir);
    QVERIFY(dir_->isValid());
  }

  void itemsFromElsewhereAreAskedOnceEach() {
    QSettings settings(settingsPath(), QSettings::IniFormat);
    PipeApprovals approvals(settings, PipeApprovals::kSlurmArgsKey);
    proto::RunConfig c = proto::defaultRunConfig();
    c.launch.slurm.extra_args = {"--mem=64G", "--export=ALL,BASH_ENV=$(id)", "--mem=64G"};
    QCOMPARE(slurmArgsToApprove(c, {}, approvals), (Texts{"--mem=64G", "--export=ALL,BASH_ENV=$(id)"}));
    approvals.remember({"--mem=64G"});
    QSettings later(settingsPath(), QSettings::IniFormat);  // a later session
    PipeApprovals again(later, PipeApprovals::kSlurmArgsKey);
    QCOMPARE(slurmArgsToApprove(c, {}, again), (Texts{"--export=ALL,BASH_ENV=$(id)"}));
    // Kept apart from the pipe: approvals: approving one never approves the other.
    PipeApprovals pipes(later);
    QVERIFY(!pipes.isApproved("--mem=64G"));
    QVERIFY(slurmArgsToApprove(proto::defaultRunConfig(), {}, again).empty());
  }

  void typedItemsAreTheUsersLoadedOnesAreNot() {
    ConfigDocument doc;
    proto::RunConfig loaded = proto::defaultRunConfig();
    loaded.launch.slurm.extra_args = {"--export=ALL,BASH_ENV=$(id)"};
    doc.setConfig(loaded);  // a file, a preset, an import, a History config
    QVERIFY(doc.typedSlurmArgs().empty());
    // Adding an item in the form makes that item (only) the user's own.
    QVERIFY(doc.setFieldValue("launch.slurm.extra_args", Texts{"--export=ALL,BASH_ENV=$(id)", "--mem=8G"})
                .isOk());
    QCOMPARE(doc.typedSlurmArgs(), (std::set<std::string>{"--mem=8G"}));
    QSettings settings(settingsPath(), QSettings::IniFormat);
    PipeApprovals approvals(settings, PipeApprovals::kSlurmArgsKey);
    QCOMPARE(slurmArgsToApprove(doc.config(), doc.typedSlurmArgs(), approvals),
             (Texts{"--export=ALL,BASH_ENV=$(id)"}));
    doc.setConfig(loaded);
    QVERIFY(doc.typedSlurmArgs().empty());
  }

 private:
  QString settingsPath() const { return dir_->filePath(QStringLiteral("settings.ini")); }

  std::unique_ptr<QTemporaryDir> dir_;
};

}  // namespace fs::app

QTEST_GUILESS_MAIN(fs::app::SlurmArgsApprovalTest)
#include "slurm_args_approval_test.moc"
