// The SLURM queue panel: rows as squeue prints them (parseSqueue of a realistic
// output), and the panel polling this machine (LocalHost) through a SlurmPoller
// on its worker thread, with squeue and scancel stand-ins on PATH that answer as
// a cluster's do; Cancel job asks first and runs scancel only when confirmed.
// Writes <build>/tests/screenshots/slurm_queue_panel.png.
#include "ui/remote/slurm_queue_panel.h"

#include <QDir>
#include <QFile>
#include <QLabel>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>
#include <cstdlib>

#include "app/launch/slurm/slurm_jobs.h"
#include "ui/remote/host_opener_service.h"

namespace fs::ui {
namespace {

// squeue --format="%i\x1f%j\x1f%T\x1f%r\x1f%M\x1f%D\x1f%N" of a busy afternoon.
const char* const kSqueue =
    "48213\x1f"
    "flamingo-9b-mmc4\x1f"
    "RUNNING\x1f"
    "None\x1f"
    "1-02:13:55\x1f"
    "4\x1f"
    "gpu[012-015]\n"
    "48214\x1f"
    "flamingo-9b-mmc4-eval\x1f"
    "PENDING\x1f"
    "Dependency\x1f"
    "0:00\x1f"
    "1\x1f"
    "\n"
    "48220_3\x1f"
    "sweep-lr-3e-4\x1f"
    "PENDING\x1f"
    "Priority\x1f"
    "0:00\x1f"
    "2\x1f"
    "\n"
    "48199\x1f"
    "flamingo-3b-laion\x1f"
    "COMPLETING\x1f"
    "None\x1f"
    "6:41:02\x1f"
    "2\x1f"
    "gpu[003-004]\n";

void save(QWidget* w, const QString& name) {
  QTest::qWait(50);
  const QString dir = QStringLiteral(FS_BINARY_DIR "/tests/screenshots");
  QVERIFY(QDir().mkpath(dir));
  QVERIFY(w->grab().save(dir + QLatin1Char('/') + name));
}

void writeScript(const QString& path, const QByteArray& body) {
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write("#!/bin/sh\n" + body);
  f.close();
  QVERIFY(f.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner));
}

}  // namespace

class SlurmQueuePanelTest : public QObject {
  Q_OBJECT

 private slots:
  void showsSqueueRows() {
    auto rows = app::cluster::parseSqueue(kSqueue);
    QVERIFY2(rows.isOk(), rows.status().message().c_str());
    SlurmQueuePanel panel(HostOpenerService::create());
    panel.resize(900, 300);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    panel.setRows(QList<app::cluster::SlurmJobRow>(rows->begin(), rows->end()));
    QTableWidget* t = panel.table();
    QCOMPARE(t->rowCount(), 4);
    QCOMPARE(t->item(0, SlurmQueuePanel::kId)->text(), QStringLiteral("48213"));
    QCOMPARE(t->item(0, SlurmQueuePanel::kState)->text(), QStringLiteral("RUNNING"));
    QCOMPARE(t->item(1, SlurmQueuePanel::kReason)->text(), QStringLiteral("Dependency"));
    QCOMPARE(t->item(2, SlurmQueuePanel::kId)->text(), QStringLiteral("48220_3"));
    QCOMPARE(t->item(3, SlurmQueuePanel::kNodeList)->text(), QStringLiteral("gpu[003-004]"));
    QVERIFY(panel.intervalText().contains(QStringLiteral("every 10 s")));
    save(&panel, QStringLiteral("slurm_queue_panel.png"));
  }

  void pollsAndCancelsThroughTheLoginHost() {
    QTemporaryDir bin;
    QVERIFY(bin.isValid());
    const QString log = bin.filePath(QStringLiteral("scancel.log"));
    QByteArray squeue = "printf '";
    for (char c : QByteArray(kSqueue)) {
      if (c == '\x1f')
        squeue += "\\037";
      else if (c == '\n')
        squeue += "\\n";
      else
        squeue += c;
    }
    squeue += "'\n";
    writeScript(bin.filePath(QStringLiteral("squeue")), squeue);
    writeScript(bin.filePath(QStringLiteral("scancel")), "echo \"$@\" >> '" + log.toUtf8() + "'\n");
    const QByteArray oldPath = qgetenv("PATH");
    qputenv("PATH", bin.path().toUtf8() + ':' + oldPath);

    {
      SlurmQueuePanel panel(HostOpenerService::create());
      panel.show();
      panel.watch(QStringLiteral("local"), QStringLiteral("48213"));
      panel.watch(QStringLiteral("local"), QStringLiteral("48199"));
      QTRY_VERIFY_WITH_TIMEOUT(panel.table()->rowCount() > 0, 20000);
      QCOMPARE(panel.loginHost(), QStringLiteral("local"));
      QCOMPARE(panel.jobIds(), (QStringList{QStringLiteral("48213"), QStringLiteral("48199")}));

      panel.table()->selectRow(0);
      const QString id = panel.table()->item(0, SlurmQueuePanel::kId)->text();
      QString asked;
      panel.setConfirm([&asked](const QString& q) {
        asked = q;
        return false;
      });
      panel.cancelSelected();
      QVERIFY(asked.contains(id));
      QTest::qWait(200);
      QVERIFY(!QFile::exists(log));  // declined: no scancel

      panel.setConfirm([](const QString&) { return true; });
      panel.cancelSelected();
      // The shell creates the log when it opens it for `>>`, before echo writes
      // a byte, so wait for the line itself, not for the file.
      const auto logText = [&log] {
        QFile f(log);
        return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
      };
      QTRY_VERIFY_WITH_TIMEOUT(logText().endsWith('\n'), 20000);
      QCOMPARE(logText(), id.toUtf8() + '\n');
    }
    qputenv("PATH", oldPath);
  }
};

}  // namespace fs::ui

QTEST_MAIN(fs::ui::SlurmQueuePanelTest)
#include "slurm_queue_panel_test.moc"
