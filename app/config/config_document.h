// ConfigDocument: the run config being edited, its validation problems, and
// its file.
//
// Every edit goes through the schema (backend/protocol/config/schema.h): a field is
// named by its path ("optim.lr", "data.datasets[1].batch_size"), parsed with
// valueFromText or given as a typed Value, and the whole config is
// revalidated (validateConfig) after each change. A value that parses but is
// not allowed (out of range, not a choice: checkValue, which validateConfig
// applies to every field) is kept, so the document always holds what the
// editor shows, and is reported as a problem at its path.
//
// Files are read and written on a worker thread owned by the document; the
// results come back as signals (loaded / loadFailed, saved / saveFailed).
// Nothing here opens a dialog: the UI decides how to show errors.
//
// Thread-safety: a QObject of the GUI thread; use it from that thread only.
#pragma once

#include <QHash>
#include <QObject>
#include <QString>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backend/protocol/config/config_types.h"
#include "backend/protocol/config/schema.h"
#include "backend/protocol/problem.h"
#include "backend/protocol/status.h"

namespace fs::protocol {
struct ConfigLoad;
}  // namespace fs::protocol

namespace fs::app {

class ConfigFileWorker;
template <class Worker>
class WorkerThread;

// One field whose value differs from the schema default. A side is nullopt
// when the field does not exist there (a list element only one side has).
struct FieldDiff {
  std::string path;
  std::optional<std::string> defaultText;
  std::optional<std::string> currentText;
  bool operator==(const FieldDiff&) const = default;
};

class ConfigDocument : public QObject {
  Q_OBJECT
 public:
  // Starts with defaultRunConfig().
  explicit ConfigDocument(QObject* parent = nullptr);
  // Waits for the loads and saves already asked for (a save is never dropped).
  ~ConfigDocument() override;

  const protocol::RunConfig& config() const { return config_; }
  // From the last validation; always up to date with config().
  const std::vector<protocol::Problem>& problems() const { return problems_; }
  int errorCount() const;
  int warningCount() const;
  // The file last loaded or saved; empty for a new document.
  QString filePath() const { return filePath_; }
  // Changed since the last load, save or setConfig.
  bool isModified() const { return modified_; }

  // Replaces the whole config (not modified afterwards); emits configReset.
  void setConfig(const protocol::RunConfig& config, const QString& filePath = {});

  // Parses `text` as the field's type and sets it. Not applied (and an
  // InvalidArgument naming the path returned) when the path names no field or
  // the text does not parse; applied otherwise, even when checkValue rejects
  // the value (see the header comment). Emits fieldChanged when the value changed.
  protocol::Status setField(const std::string& path, const std::string& text);
  // Same with a typed value. REQUIRES: the alternative matching the field's
  // type (bool, int64_t, double, string for strings and choices, vector<string>);
  // a mismatch is an InvalidArgument and nothing changes.
  protocol::Status setFieldValue(const std::string& path, const protocol::Value& value);
  // The field's current value, or why the path names no field.
  protocol::StatusOr<protocol::Value> fieldValue(const std::string& path) const;
  // The field's spec, or nullptr when the path names no field.
  const protocol::EntrySpec* fieldSpec(const std::string& path) const;
  // "" when the value parsed from `text` is allowed, else why not (a parse
  // error or checkValue's message). Changes nothing: for live editor hints.
  std::string checkFieldText(const std::string& path, const std::string& text) const;
  // False when the field has an appliesWhen condition its sibling does not
  // meet (an mmc4-only field of a laion dataset); true otherwise.
  bool fieldApplies(const std::string& path) const;

  // Elements of the list at `listPath` ("data.datasets"); 0 when the path
  // names no list.
  int listSize(const std::string& listPath) const;

  // Appends a dataset with the schema defaults, the given type and a name not
  // used yet (the type, then type-2, ...). Returns its index. Emits datasetsChanged.
  int addDataset(const std::string& type);
  // Removes data.datasets[index]; false (nothing changes) when out of range.
  bool removeDataset(int index);

  // The pipe: shard sources (NOTE [Pipe approval]) typed into this document
  // by setField / setFieldValue since the last setConfig or load: those count
  // as the user's own and are not asked about before a launch. See NOTE
  // [Pipe provenance] in the .cpp for what counts as typed.
  const std::set<std::string>& typedPipeSources() const { return typedPipeSources_; }
  // The launch.slurm.extra_args items typed into this form since the last
  // setConfig (NOTE [SLURM extra args] in app/launch/slurm/slurm_script.h); an
  // item counts as typed when an edit of the list brought it in.
  const std::set<std::string>& typedSlurmArgs() const { return typedSlurmArgs_; }

  // Every field whose current text differs from the default config's, in
  // schema order; list elements are compared by index.
  std::vector<FieldDiff> diffAgainstDefaults() const;

 public slots:
  // Reads the file on the worker thread; then loaded() or loadFailed().
  void loadFile(const QString& path);
  // Writes a snapshot of the config now (YAML with help comments) atomically
  // on the worker thread; then saved() or saveFailed().
  void saveFile(const QString& path);

 signals:
  void fieldChanged(const QString& path);  // one field's value changed
  void datasetsChanged();                  // datasets added or removed: element paths may have moved
  void configReset();                      // the whole config was replaced: re-read every field
  void problemsChanged();
  void modifiedChanged(bool modified);
  void filePathChanged(const QString& path);
  void loaded(const QString& path);
  void loadFailed(const QString& path, const QString& message);
  void saved(const QString& path);
  void saveFailed(const QString& path, const QString& message);

 private:
  void onLoadFinished(quint64 ticket, const QString& path, const protocol::ConfigLoad& result);
  void onSaveFinished(quint64 ticket, const QString& path, const QString& error);
  WorkerThread<ConfigFileWorker>& files();
  // Validates config_ into problems_; true when they changed. Callers emit
  // problemsChanged() after their own signal, so that handlers of
  // fieldChanged / datasetsChanged / configReset already see current problems.
  bool revalidate();
  void markModified();
  void setModified(bool modified);
  void setFilePath(const QString& path);
  void notePipeSourcesTyped(const std::string& path, const protocol::Value& before,
                            const protocol::Value& after);
  void noteSlurmArgsTyped(const std::string& path, const protocol::Value& before,
                          const protocol::Value& after);

  protocol::RunConfig config_;
  std::vector<protocol::Problem> problems_;
  QString filePath_;
  std::set<std::string> typedPipeSources_;
  std::set<std::string> typedSlurmArgs_;
  bool modified_ = false;
  quint64 editGeneration_ = 0;  // bumped by every change; a save clears `modified` only if none came after it
  quint64 nextTicket_ = 1;
  QHash<quint64, quint64> saveGenerations_;  // save ticket -> editGeneration_ of its snapshot
  std::unique_ptr<WorkerThread<ConfigFileWorker>> files_;
};

}  // namespace fs::app
