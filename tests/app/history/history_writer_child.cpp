// history_writer_child <database> <run id prefix>: records runs through HistoryStore in an
// endless loop, each with three checkpoints in the same transaction, and
// prints "committed <run id>" after each commit returned OK. The crash test
// SIGKILLs it mid-loop and checks the database (history_crash_test.cpp).
#include <QCoreApplication>
#include <QStringList>
#include <cstdio>

#include "app/history/history_store.h"

int main(int argc, char** argv) {
  QCoreApplication app(argc, argv);
  const QStringList args = app.arguments();
  if (args.size() != 3) {
    std::fprintf(stderr, "usage: history_writer_child <database> <run id prefix>\n");
    return 2;
  }
  fs::app::HistoryStore store;
  if (fs::protocol::Status s = store.open(args[1]); !s) {
    std::fprintf(stderr, "history_writer_child: %s\n", s.message().c_str());
    return 1;
  }
  // A config big enough that a write takes a while, so the kill lands inside one.
  const QString config = QStringLiteral("# filler\n").repeated(2000);
  for (qint64 i = 0;; ++i) {
    fs::app::RunRecord r;
    r.runId = QStringLiteral("%1-%2").arg(args[2]).arg(i);
    r.name = r.runId;
    r.runDir = QStringLiteral("/runs/") + r.runId;
    r.status = QStringLiteral("finished");
    r.configYaml = config + QString::number(i);
    r.startedMs = 1000 + i;
    r.endedMs = 2000 + i;
    r.lastStep = i;
    r.finalLosses = {{QStringLiteral("laion"), 1.0 / (i + 1)}};
    for (int c = 0; c < 3; ++c)
      r.checkpoints.append(
          {QStringLiteral("checkpoint_step%1.pt").arg(c), c, 0, QStringLiteral("step"), c, i});
    if (fs::protocol::Status s = store.upsert(r); !s) {
      std::fprintf(stderr, "history_writer_child: %s\n", s.message().c_str());
      return 1;
    }
    std::printf("committed %s\n", qPrintable(r.runId));
    std::fflush(stdout);
  }
}
