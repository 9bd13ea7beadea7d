// ConfigDiff: which config fields differ among N runs, and each run's value.
//
// Fields are found by the schema reflection (protocol::forEachField), so a
// field added to the schema is compared with no change here. Lists of
// sections (data.datasets) are compared element by element at the same
// index: data.datasets[1].batch_size of one run against the same path of the
// others; a run with fewer elements has no value there ("absent"), which
// counts as a difference. Values are the schema's text form (valueToText),
// the same text YAML and --set use.
//
// Thread-safety: pure functions.
#pragma once

#include <QList>
#include <QMetaType>
#include <QString>
#include <QStringList>
#include <optional>
#include <span>

#include "backend/protocol/config/config_types.h"

namespace fs::app {

struct ConfigDiffField {
  QString path;                          // canonical, e.g. data.datasets[1].batch_size
  QList<std::optional<QString>> values;  // one per config, in input order; nullopt: absent
};

// The differing fields in schema declaration order (list elements in index
// order). Empty when fewer than two configs are given or all are equal.
QList<ConfigDiffField> diffConfigs(std::span<const protocol::RunConfig> configs);

// The diff of the configs of a set of runs, as HistoryWorker reports it.
struct RunConfigDiff {
  quint64 requestId = 0;  // as asked
  QStringList runIds;     // the runs compared, in the order asked
  QStringList labels;     // their names, for column headers
  QList<ConfigDiffField> fields;
  QString error;  // a run was not found or its config did not parse; fields then empty
};

}  // namespace fs::app

Q_DECLARE_METATYPE(fs::app::RunConfigDiff)
