// CmdlineDialog: paste an OpenFlamingo command line (torchrun / python
// train.py / srun ... with its flags), see what it becomes before applying it:
// every problem with the flag it names, the unknown and the ignored words.
// Apply replaces the document's config with the imported one.
//
// The import is pure computation on the pasted text (backend/protocol's
// importer), run as the text changes; nothing is read from disk.
//
// Thread-safety: GUI thread only.
#pragma once

#include <QDialog>

#include "backend/protocol/cmdline/cmdline.h"

class QDialogButtonBox;
class QLabel;
class QPlainTextEdit;

namespace fs::app {
class ConfigDocument;
}

namespace fs::ui {

class CmdlineDialog : public QDialog {
  Q_OBJECT
 public:
  CmdlineDialog(app::ConfigDocument* document, QWidget* parent = nullptr);

  QPlainTextEdit* input() const { return input_; }
  // What the pasted line imports as, shown under it.
  QString reportText() const;
  // Replaces the document's config with the import (when it has no error).
  bool apply();

 private:
  void reimport();

  app::ConfigDocument* document_;
  QPlainTextEdit* input_;
  QLabel* report_;
  QDialogButtonBox* buttons_;
  protocol::CmdlineImport last_;
};

// The config as an OpenFlamingo torchrun line, and what it cannot carry (one
// line per problem; empty when everything is expressible).
struct CmdlineCopy {
  QString line;
  QString notExpressible;
};
CmdlineCopy commandLineFor(const protocol::RunConfig& config);

}  // namespace fs::ui
