// The fit to a cluster as the GUI holds it: what to ask `flamingo-train plan
// --fit --json` (FitCluster: a catalog GPU and overridden figures) and its
// answer (FitResult, schema `fs.fit/1`, docs/planner.md "Fit to a cluster").
// The engine searches and ranks (backend/fsdp_plan/fit.h); this reads.
//
// NOTE [GPU names in the GUI]: fitGpuNames() repeats the engine's catalog
// names (backend/fsdp_plan/cluster.cpp gpuCatalog()) for the dialog's list,
// since the GUI does not link the planner; a name the engine does not know
// comes back as its error listing the catalog. The figures are the engine's:
// the result's cluster says which were used.
//
// Thread-safety: plain values and pure functions; parseFitJson runs on the
// plan worker's thread.
#pragma once

#include <QByteArray>
#include <QList>
#include <QMap>
#include <QMetaType>
#include <QString>
#include <QStringList>

namespace fs::app {

struct FitCluster {
  QString gpu;  // catalog name
  QMap<QString, QString>
      figures;             // CLI flag without dashes -> value, e.g. "nodes" -> "2", "memory-gib" -> "40"
  QStringList precisions;  // empty: the engine's default
};

struct FitRow {
  QString strategy, policy, precision;
  QList<qint64> microBatch;
  qint64 accumulation = 1;
  bool checkpointing = false, cpuOffload = false;
  qint64 deviceBytes = 0, marginBytes = 0;
  double stepSeconds = 0;
  QString reason;
  QStringList exceeds;
  QStringList assignments;  // KEY=VALUE that make the config this choice
  QString label() const;    // "full_shard/transformer_layer mb 4+2 x1 ckpt amp_bf16"
};

struct FitResult {
  QString gpu;
  qint64 nodes = 0, gpusPerNode = 0, memoryPerGpu = 0;
  QList<FitRow> ranked;   // best first
  QList<FitRow> misfits;  // least over first
  QString refusal;        // the engine's message when nothing fits
};

struct FitParse {
  FitResult fit;
  QString error;  // names the JSON field; empty when complete
  bool ok() const { return error.isEmpty(); }
};

FitParse parseFitJson(const QByteArray& json);

// The catalog's names (NOTE [GPU names in the GUI]).
const QStringList& fitGpuNames();
// The cluster figures the dialog offers, as CLI flags without dashes.
const QStringList& fitFigureFlags();
// After `plan --config FILE`: --fit --gpu NAME --FLAG VALUE ... --json.
QStringList fitArguments(const FitCluster& cluster);

}  // namespace fs::app

Q_DECLARE_METATYPE(fs::app::FitResult)
