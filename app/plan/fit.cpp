#include "app/plan/fit.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace fs::app {
namespace {

// Reads one choice; on a missing field, names it in `error`.
FitRow readRow(const QJsonObject& o, const QString& path, QString* error) {
  FitRow r;
  for (const char* key :
       {"strategy", "wrap_policy", "precision", "reason", "set", "device_bytes", "step_s"}) {
    if (!o.contains(QLatin1String(key)) && error->isEmpty())
      *error = QStringLiteral("the fit's JSON: %1.%2: missing").arg(path, QLatin1String(key));
  }
  r.strategy = o.value(QStringLiteral("strategy")).toString();
  r.policy = o.value(QStringLiteral("wrap_policy")).toString();
  r.precision = o.value(QStringLiteral("precision")).toString();
  for (const auto v : o.value(QStringLiteral("micro_batch")).toArray()) r.microBatch << v.toInteger();
  r.accumulation = o.value(QStringLiteral("grad_accum_steps")).toInteger(1);
  r.checkpointing = o.value(QStringLiteral("gradient_checkpointing")).toBool();
  r.cpuOffload = o.value(QStringLiteral("cpu_offload")).toBool();
  r.deviceBytes = o.value(QStringLiteral("device_bytes")).toInteger();
  r.marginBytes = o.value(QStringLiteral("margin_bytes")).toInteger();
  r.stepSeconds = o.value(QStringLiteral("step_s")).toDouble();
  r.reason = o.value(QStringLiteral("reason")).toString();
  for (const auto v : o.value(QStringLiteral("exceeds")).toArray()) r.exceeds << v.toString();
  for (const auto v : o.value(QStringLiteral("set")).toArray()) r.assignments << v.toString();
  return r;
}

}  // namespace

QString FitRow::label() const {
  QStringList mb;
  for (const auto b : microBatch) mb << QString::number(b);
  QString s = strategy + (policy.isEmpty() ? QString() : QStringLiteral("/") + policy) +
              QStringLiteral(" mb ") + mb.join(QLatin1Char('+')) + QStringLiteral(" x") +
              QString::number(accumulation);
  if (checkpointing) s += QStringLiteral(" ckpt");
  s += QLatin1Char(' ') + precision;
  if (cpuOffload) s += QStringLiteral(" offload");
  return s;
}

FitParse parseFitJson(const QByteArray& json) {
  FitParse p;
  QJsonParseError err;
  const auto doc = QJsonDocument::fromJson(json, &err);
  if (!doc.isObject()) {
    p.error = QStringLiteral("the fit's JSON does not parse: %1").arg(err.errorString());
    return p;
  }
  const QJsonObject o = doc.object();
  const QString schema = o.value(QStringLiteral("schema")).toString();
  if (!schema.startsWith(QStringLiteral("fs.fit/1"))) {
    p.error = QStringLiteral("the fit's JSON: schema: '%1', expected fs.fit/1").arg(schema);
    return p;
  }
  if (!o.value(QStringLiteral("cluster")).isObject() || !o.value(QStringLiteral("ranked")).isArray() ||
      !o.value(QStringLiteral("misfits")).isArray()) {
    p.error = QStringLiteral("the fit's JSON: cluster, ranked or misfits: missing");
    return p;
  }
  const QJsonObject c = o.value(QStringLiteral("cluster")).toObject();
  p.fit.gpu = c.value(QStringLiteral("gpu")).toString();
  p.fit.nodes = c.value(QStringLiteral("nodes")).toInteger();
  p.fit.gpusPerNode = c.value(QStringLiteral("gpus_per_node")).toInteger();
  p.fit.memoryPerGpu = c.value(QStringLiteral("memory_per_gpu")).toInteger();
  const auto ranked = o.value(QStringLiteral("ranked")).toArray();
  for (qsizetype i = 0; i < ranked.size(); ++i)
    p.fit.ranked << readRow(ranked[i].toObject(), QStringLiteral("ranked[%1]").arg(i), &p.error);
  const auto misfits = o.value(QStringLiteral("misfits")).toArray();
  for (qsizetype i = 0; i < misfits.size(); ++i)
    p.fit.misfits << readRow(misfits[i].toObject(), QStringLiteral("misfits[%1]").arg(i), &p.error);
  return p;
}

const QStringList& fitGpuNames() {
  static const QStringList names = {QStringLiteral("A100-SXM-40GB"), QStringLiteral("A100-SXM-80GB"),
                                    QStringLiteral("H100-SXM-80GB"), QStringLiteral("H200-SXM-141GB"),
                                    QStringLiteral("L40S-48GB"),     QStringLiteral("RTX4090-24GB")};
  return names;
}

const QStringList& fitFigureFlags() {
  static const QStringList flags = {QStringLiteral("nodes"),          QStringLiteral("gpus-per-node"),
                                    QStringLiteral("memory-gib"),     QStringLiteral("host-memory-gib"),
                                    QStringLiteral("intra-node-gbs"), QStringLiteral("inter-node-gbs"),
                                    QStringLiteral("host-gbs"),       QStringLiteral("peak-tflops-fp32"),
                                    QStringLiteral("peak-tflops-16"), QStringLiteral("efficiency")};
  return flags;
}

QStringList fitArguments(const FitCluster& cluster) {
  QStringList args{QStringLiteral("--fit")};
  if (!cluster.gpu.isEmpty()) args << QStringLiteral("--gpu") << cluster.gpu;
  for (auto it = cluster.figures.begin(); it != cluster.figures.end(); ++it) {
    if (!it.value().isEmpty()) args << QStringLiteral("--") + it.key() << it.value();
  }
  if (!cluster.precisions.isEmpty())
    args << QStringLiteral("--precisions") << cluster.precisions.join(QLatin1Char(','));
  args << QStringLiteral("--json");
  return args;
}

}  // namespace fs::app
