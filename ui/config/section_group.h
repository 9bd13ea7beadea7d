// SectionGroup: one config section as a group of rows, built from its
// SectionSpec alone: a FieldRow per field, a nested SectionGroup per
// sub-section, a DatasetListEditor per list, in declaration order.
//
// Every row and problem label registers in the form's FormRegistry under its
// path (`prefix` + key); every editor's edits go to the ConfigDocument.
//
// Ownership: Qt parent/child. `document` and `registry` outlive the group.
// Thread-safety: GUI thread only.
#pragma once

#include <QGroupBox>
#include <QString>

#include "backend/protocol/config/schema.h"

class QFormLayout;

namespace fs::app {
class ConfigDocument;
}

namespace fs::ui {

class FormRegistry;

class SectionGroup : public QGroupBox {
  Q_OBJECT
 public:
  enum class Contents { kAll, kFieldsOnly };

  // `prefix`: the section's path ("" for the root, "model.lm", "data.datasets[0]").
  SectionGroup(const protocol::SectionSpec& spec, const QString& prefix, const QString& title,
               Contents contents, app::ConfigDocument* document, FormRegistry* registry,
               QWidget* parent = nullptr);

  QString prefix() const { return prefix_; }

 private:
  void addField(const protocol::EntrySpec& entry, const QString& path);

  QString prefix_;
  app::ConfigDocument* document_;
  FormRegistry* registry_;
  QFormLayout* form_;
};

}  // namespace fs::ui
