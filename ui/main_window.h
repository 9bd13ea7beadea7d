// MainWindow: wires the views together; holds no logic of its own.
//
//   config form (ConfigForm on the ConfigDocument) | runs (RunsPanel fed by a
//   RunCatalogWorker on its own thread)
//   File: Open..., Save YAML, Save YAML As..., Quit; Runs: Refresh
//   status bar: file, load / save results, error and warning counts
//
// Every file is read and written on worker threads (ConfigDocument's, the
// catalog's); the window only picks paths (QFileDialog) and shows results.
//
// Ownership: does not own the document, which must outlive the window.
// Thread-safety: GUI thread only.
#pragma once

#include <QMainWindow>
#include <memory>

class QLabel;

namespace fs::app {
class ConfigDocument;
class RunCatalogWorker;
template <class Worker>
class WorkerThread;
}  // namespace fs::app

namespace fs::ui {

class ConfigForm;
class RunsPanel;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(app::ConfigDocument* document, QWidget* parent = nullptr);
  ~MainWindow() override;

  ConfigForm* configForm() const { return form_; }
  RunsPanel* runsPanel() const { return runs_; }

 private:
  void createMenus();
  void wireDocument();
  void wireRuns();
  void openConfig();
  void saveConfig();
  void saveConfigAs();
  void updateTitle();
  void updateProblemCount();
  void followRunRoot();

  app::ConfigDocument* document_;
  ConfigForm* form_;
  RunsPanel* runs_;
  QLabel* problemCount_;
  std::unique_ptr<app::WorkerThread<app::RunCatalogWorker>> catalog_;
};

}  // namespace fs::ui
