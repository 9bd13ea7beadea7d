#include "ui/main_window.h"

#include <QAction>
#include <QApplication>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QKeySequence>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QSplitter>
#include <QStatusBar>

#include "app/common/worker_thread.h"
#include "app/config/config_document.h"
#include "app/runs/run_catalog.h"
#include "ui/config/config_form.h"
#include "ui/config/problem_label.h"
#include "ui/runs/runs_panel.h"

namespace fs::ui {
namespace {

const QString kYamlFilter = QObject::tr("Run configs (*.yaml *.yml);;All files (*)");
constexpr int kStatusMs = 8000;

}  // namespace

MainWindow::MainWindow(app::ConfigDocument* document, QWidget* parent)
    : QMainWindow(parent),
      document_(document),
      form_(new ConfigForm(document)),
      runs_(new RunsPanel),
      problemCount_(new QLabel),
      catalog_(std::make_unique<app::WorkerThread<app::RunCatalogWorker>>(new app::RunCatalogWorker,
                                                                          QStringLiteral("run-catalog"))) {
  setObjectName(QStringLiteral("mainWindow"));
  auto* splitter = new QSplitter(Qt::Horizontal);
  splitter->addWidget(form_);
  splitter->addWidget(runs_);
  splitter->setStretchFactor(0, 3);
  splitter->setStretchFactor(1, 2);
  splitter->setSizes({760, 520});
  setCentralWidget(splitter);
  statusBar()->addPermanentWidget(problemCount_);
  resize(1280, 820);

  createMenus();
  wireDocument();
  wireRuns();
  updateTitle();
  updateProblemCount();
  followRunRoot();
}

MainWindow::~MainWindow() {
  catalog_->worker()->cancel();  // so the thread's stop does not wait for a long scan
}

void MainWindow::createMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("&Open\u2026"), QKeySequence::Open, this, &MainWindow::openConfig);
  file->addAction(tr("&Save YAML"), QKeySequence::Save, this, &MainWindow::saveConfig);
  file->addAction(tr("Save YAML &As\u2026"), QKeySequence::SaveAs, this, &MainWindow::saveConfigAs);
  file->addSeparator();
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);
  QMenu* runs = menuBar()->addMenu(tr("&Runs"));
  runs->addAction(tr("&Refresh"), QKeySequence::Refresh, runs_, &RunsPanel::refresh);
}

void MainWindow::wireDocument() {
  using app::ConfigDocument;
  connect(document_, &ConfigDocument::problemsChanged, this, &MainWindow::updateProblemCount);
  connect(document_, &ConfigDocument::modifiedChanged, this, &MainWindow::updateTitle);
  connect(document_, &ConfigDocument::filePathChanged, this, &MainWindow::updateTitle);
  connect(document_, &ConfigDocument::configReset, this, &MainWindow::followRunRoot);
  connect(document_, &ConfigDocument::fieldChanged, this, [this](const QString& path) {
    if (path == QLatin1String("run_root")) followRunRoot();
  });
  connect(document_, &ConfigDocument::loaded, this,
          [this](const QString& path) { statusBar()->showMessage(tr("Opened %1").arg(path), kStatusMs); });
  connect(document_, &ConfigDocument::saved, this,
          [this](const QString& path) { statusBar()->showMessage(tr("Saved %1").arg(path), kStatusMs); });
  auto showError = [this](const QString& title, const QString& message) {
    statusBar()->showMessage(title, kStatusMs);
    auto* box = new QMessageBox(QMessageBox::Warning, title, message, QMessageBox::Ok, this);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open();  // window-modal, does not block the event loop
  };
  connect(document_, &ConfigDocument::loadFailed, this,
          [showError](const QString& path, const QString& message) {
            showError(QObject::tr("Could not open %1").arg(path), message);
          });
  connect(document_, &ConfigDocument::saveFailed, this,
          [showError](const QString& path, const QString& message) {
            showError(QObject::tr("Could not save %1").arg(path), message);
          });
}

void MainWindow::wireRuns() {
  // Cross-thread: the request is queued to the worker, the result queued back.
  connect(runs_, &RunsPanel::scanRequested, catalog_->worker(), &app::RunCatalogWorker::scan);
  connect(catalog_->worker(), &app::RunCatalogWorker::scanned, runs_, &RunsPanel::setScan);
}

void MainWindow::openConfig() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Open run config"),
                                                    QFileInfo(document_->filePath()).path(), kYamlFilter);
  if (!path.isEmpty()) document_->loadFile(path);
}

void MainWindow::saveConfig() {
  if (document_->filePath().isEmpty())
    saveConfigAs();
  else
    document_->saveFile(document_->filePath());
}

void MainWindow::saveConfigAs() {
  const QString path =
      QFileDialog::getSaveFileName(this, tr("Save run config"), document_->filePath(), kYamlFilter);
  if (!path.isEmpty()) document_->saveFile(path);
}

void MainWindow::updateTitle() {
  const QString file =
      document_->filePath().isEmpty() ? tr("untitled") : QFileInfo(document_->filePath()).fileName();
  setWindowTitle(QStringLiteral("%1%2 \u2014 Flamingo Studio").arg(file, document_->isModified() ? "*" : ""));
}

void MainWindow::updateProblemCount() {
  const int errors = document_->errorCount();
  const int warnings = document_->warningCount();
  if (errors == 0 && warnings == 0) {
    problemCount_->setText(tr("Config valid"));
    return;
  }
  problemCount_->setText(
      tr("<span style=\"color:%1\">%2 error(s)</span>, <span style=\"color:%3\">%4 warning(s)</span>")
          .arg(QLatin1String(kErrorColor))
          .arg(errors)
          .arg(QLatin1String(kWarningColor))
          .arg(warnings));
}

void MainWindow::followRunRoot() {
  // Relative run roots are relative to the working directory, as for flamingo-train.
  runs_->setRoot(QDir::cleanPath(
      QDir::current().absoluteFilePath(QString::fromStdString(document_->config().run_root))));
}

}  // namespace fs::ui
