// Pictures of the checkpoint inspector (QWidget::grab, 1200x750) for the docs:
//   inspector_screenshots OUT_DIR A.pt B.pt
// writes OUT_DIR/inspector-tree.png (A's module tree, hashes verified, the
// largest model tensor selected with its statistics), inspector-stats.png
// (statistics of A's largest top-level module, log counts) and
// inspector-diff.png (A against B) and inspector-state.png (B's Training
// state tab, the parameters sorted by |exp_avg|). Without arguments (the
// ctest), it uses make_checkpoints.py's fixtures (the training state of
// openflamingo_train.pt) and writes into <build>/tests/screenshots.
// Exits 1 naming what did not happen.
#include <QApplication>
#include <QCheckBox>
#include <QDir>
#include <QElapsedTimer>
#include <QHeaderView>
#include <QPushButton>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QTreeView>
#include <cstdio>
#include <functional>

#include "tests/app/checkpoints/checkpoint_fixtures.h"
#include "ui/checkpoints/checkpoint_inspector.h"
#include "ui/checkpoints/diff_view.h"
#include "ui/checkpoints/module_tree_model.h"
#include "ui/checkpoints/stats_panel.h"
#include "ui/checkpoints/training_state_view.h"

namespace {

using fs::ui::CheckpointInspector;
using fs::ui::ModuleTreeModel;

// Runs the event loop until `done` (at most two minutes).
bool waitUntil(const std::function<bool()>& done) {
  QElapsedTimer timer;
  timer.start();
  while (!done() && timer.elapsed() < 120000) QApplication::processEvents(QEventLoop::AllEvents, 20);
  return done();
}

bool save(QWidget* w, const QString& dir, const QString& name) {
  for (int i = 0; i < 5; ++i) QApplication::processEvents();  // posted layouts, as before a paint
  const QString path = QDir(dir).filePath(name);
  if (!w->grab().save(path)) {
    std::fprintf(stderr, "cannot write %s\n", qPrintable(path));
    return false;
  }
  std::printf("wrote %s\n", qPrintable(path));
  return true;
}

// The model-section node below `parent` with the most bytes (a tensor when `leaf`).
QModelIndex largest(const ModuleTreeModel* model, const QModelIndex& parent, bool leaf) {
  QModelIndex best;
  std::uint64_t bestBytes = 0;
  std::function<void(const QModelIndex&)> walk = [&](const QModelIndex& at) {
    for (int r = 0; r < model->rowCount(at); ++r) {
      const QModelIndex child = model->index(r, 0, at);
      const fs::app::StatsTarget t = model->targetAt(child);
      const auto& ckpt = *model->checkpoint();
      const std::uint64_t bytes = t.tensor ? ckpt.tensors[*t.tensor].bytes
                                           : ckpt.trees.front().second.find(t.nodePath.toStdString())->bytes;
      if (t.tensor.has_value() == leaf && bytes > bestBytes) bestBytes = bytes, best = child;
      if (leaf) walk(child);
    }
  };
  walk(parent);
  return best;
}

int fail(const char* what) {
  std::fprintf(stderr, "inspector_screenshots: %s\n", what);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QString out, a, b, state;
  std::unique_ptr<fs::test::CheckpointFixtures> fixtures;
  if (argc >= 4) {
    out = QString::fromLocal8Bit(argv[1]);
    a = QString::fromLocal8Bit(argv[2]);
    b = QString::fromLocal8Bit(argv[3]);
    state = b;
  } else {
    fixtures = std::make_unique<fs::test::CheckpointFixtures>();
    if (!fixtures->ok()) return fail(qPrintable(fixtures->error()));
    out = QStringLiteral(FS_BINARY_DIR "/tests/screenshots");
    a = fixtures->path(QStringLiteral("ours.pt"));
    b = fixtures->path(QStringLiteral("openflamingo.pt"));
    state = fixtures->path(QStringLiteral("openflamingo_train.pt"));
  }
  if (!QDir().mkpath(out)) return fail("cannot create the output directory");

  CheckpointInspector inspector;
  inspector.resize(1200, 750);
  inspector.show();
  inspector.openPath(a);
  if (!waitUntil([&] { return inspector.checkpoint() != nullptr; })) return fail("A did not open");
  ModuleTreeModel* model = inspector.treeModel();
  QTreeView* tree = inspector.tree();

  // Tree: hashes checked, expanded to the largest tensor, which is selected.
  if (inspector.hashButton()->isEnabled()) {
    inspector.verifyHashes();
    if (!waitUntil([&] { return inspector.hashButton()->text().startsWith(QLatin1String("Hashes")); })) {
      return fail("the hash check did not finish");
    }
  }
  tree->collapseAll();
  const QModelIndex section = model->index(0, 0);
  tree->expand(section);
  const QModelIndex tensor = largest(model, section, true);
  if (!tensor.isValid()) return fail("no tensor in A's model section");
  for (QModelIndex p = tensor.parent(); p.isValid(); p = p.parent()) tree->expand(p);
  tree->setCurrentIndex(tensor);
  tree->scrollTo(tensor);
  for (int c = 0; c < ModuleTreeModel::kColumnCount; ++c) tree->resizeColumnToContents(c);
  if (!waitUntil([&] { return inspector.lastStats().has_value(); }))
    return fail("the tensor's statistics did not come");
  if (auto* split = inspector.findChild<QSplitter*>()) split->setSizes({760, 440});
  if (!save(&inspector, out, QStringLiteral("inspector-tree.png"))) return 1;

  // Statistics of the largest top-level module, counts on a log scale.
  tree->collapseAll();
  tree->expand(section);
  const QModelIndex module = largest(model, section, false);
  if (!module.isValid()) return fail("no module in A's model section");
  tree->setCurrentIndex(module);
  inspector.computeStats();
  if (!waitUntil(
          [&] { return inspector.lastStats() && inspector.lastStats()->target.nodePath.size() > 0; })) {
    return fail("the module's statistics did not come");
  }
  inspector.statsPanel()->setLogCounts(true);
  if (auto* split = inspector.findChild<QSplitter*>()) split->setSizes({520, 680});
  if (!save(&inspector, out, QStringLiteral("inspector-stats.png"))) return 1;

  // Diff against B.
  inspector.compareWith(b);
  if (!waitUntil([&] { return inspector.diffView()->model()->rowCount() > 0; }))
    return fail("the diff did not come");
  // The embedding's row (OpenFlamingo trains only the added tokens' rows) in view and selected.
  QTableView* table = inspector.diffView()->table();
  for (int r = 0; r < table->model()->rowCount(); ++r) {
    if (table->model()->index(r, 0).data().toString().contains(QLatin1String("embed_tokens"))) {
      table->selectRow(r);
      table->scrollTo(table->model()->index(r, 0), QAbstractItemView::PositionAtCenter);
    }
  }
  if (!save(&inspector, out, QStringLiteral("inspector-diff.png"))) return 1;

  // The training state of B (read when its tab is shown).
  inspector.openPath(state);
  if (!waitUntil([&] { return inspector.checkpoint() && inspector.checkpoint()->path == state; }))
    return fail("B did not open");
  fs::ui::TrainingStateView* view = inspector.trainingStateView();
  inspector.tabs()->setCurrentWidget(view);
  if (!waitUntil([&] { return view->hasResult(); })) return fail("the training state did not come");
  view->paramsView()->sortByColumn(fs::ui::TrainingStateView::kExpAvg, Qt::DescendingOrder);
  if (auto* split = view->findChild<QSplitter*>()) split->setSizes({470, 730});
  if (!save(&inspector, out, QStringLiteral("inspector-state.png"))) return 1;
  return 0;
}
