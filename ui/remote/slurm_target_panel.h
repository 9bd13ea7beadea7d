// SlurmTargetPanel: the "SLURM cluster" part of the launch target page — the
// login host sbatch runs on ("local" when the app runs on a login node), the
// launch.slurm.* fields (bound to the document), the batch script preview and
// Submit.
//
// The preview is makeSlurmScript's output (app/launch/slurm/slurm_script.h) for the
// document's config and the page's run directory and engine, regenerated on
// every change until the user edits it; from then on edits are kept (and
// submitted as they are) until "Reset to generated" (which the page also does
// after a submit: the next job has a run directory of its own).
//
// Submit runs SlurmJobs::submit on the RemoteWorker's thread; submitted()
// brings the job id. Ownership: borrows the document and the worker.
// Thread-safety: GUI thread only.
#pragma once

#include <QWidget>
#include <functional>

#include "app/launch/slurm/slurm_script.h"
#include "ui/remote/remote_worker.h"

class QComboBox;
class QLabel;
class QPlainTextEdit;
class QPushButton;

namespace fs::app {
class ConfigDocument;
}

namespace fs::ui {

class SlurmTargetPanel : public QWidget {
  Q_OBJECT
 public:
  SlurmTargetPanel(app::ConfigDocument* document, RemoteWorker* worker, QWidget* parent = nullptr);

  // Where the run directory and the engine come from (set by the page).
  void setSpecSource(std::function<app::cluster::SlurmJobSpec()> source);
  // Asked by submit() before anything is sent; false cancels the submit (the
  // pipe: command approval, NOTE [Pipe approval]). None set: submit goes ahead.
  void setSubmitGate(std::function<bool()> gate) { submitGate_ = std::move(gate); }
  app::cluster::SlurmJobSpec spec() const;
  // The login host ("local", an ssh config alias or [user@]host[:port]).
  QString loginHost() const;
  void setAliases(const QStringList& aliases);

  QPlainTextEdit* preview() const { return preview_; }
  QString script() const;
  // True once the user edited the preview (until Reset to generated).
  bool isEdited() const { return edited_; }
  QPushButton* submitButton() const { return submit_; }

 public slots:
  // Regenerates the preview unless it was edited.
  void refresh();
  // Back to the generated script.
  void resetToGenerated();
  // Submits the preview's text (as edited) through the login host.
  void submit();

 signals:
  void submitted(const QString& loginHost, const QString& jobId, const QString& runDir);
  void submitFailed(const QString& message);

 private:
  void setPreview(const QString& text);
  void setBusy(bool busy);

  app::ConfigDocument* document_;
  RemoteWorker* worker_;
  std::function<app::cluster::SlurmJobSpec()> specSource_;
  std::function<bool()> submitGate_;
  QComboBox* login_;
  QPlainTextEdit* preview_;
  QLabel* note_;
  QPushButton* reset_;
  QPushButton* submit_;
  bool edited_ = false;
  bool generating_ = false;
  bool busy_ = false;
  bool scriptValid_ = false;
};

}  // namespace fs::ui
