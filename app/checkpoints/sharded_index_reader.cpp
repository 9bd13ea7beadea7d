#include "app/checkpoints/sharded_index_reader.h"

#include <QDir>
#include <QFile>
#include <QHash>
#include <string_view>

#include "backend/protocol/wire/sharded_index.h"

namespace fs::app {
namespace {

// Bytes per element of the dtypes a parameter can have (c10's spelling, as
// the index writes it); 0 for any other.
qint64 elementSize(const QString& dtype) {
  if (dtype == QLatin1String("Float")) return 4;
  if (dtype == QLatin1String("Double")) return 8;
  if (dtype == QLatin1String("Half") || dtype == QLatin1String("BFloat16")) return 2;
  return 0;
}

QStringList qstrings(const std::vector<std::string>& v) {
  QStringList out;
  for (const auto& s : v) out << QString::fromStdString(s);
  return out;
}

QString at(const QString& path, std::size_t i) {
  return QStringLiteral("%1[%2]").arg(path).arg(i);
}

// Every member of every flat parameter, by name; *error names the first field
// the listing cannot use.
QHash<QString, ShardedTensorInfo> membersOf(const std::vector<protocol::ShardedUnit>& units, QString* error) {
  QHash<QString, ShardedTensorInfo> out;
  for (std::size_t u = 0; u < units.size(); ++u) {
    const QString fpaths = at(QStringLiteral("units"), u) + QStringLiteral(".flats");
    for (std::size_t f = 0; f < units[u].flats.size(); ++f) {
      const protocol::ShardedFlat& flat = units[u].flats[f];
      const QString fpath = at(fpaths, f);
      ShardedTensorInfo common;
      common.unit = QString::fromStdString(units[u].path);
      common.dtype = QString::fromStdString(flat.dtype);
      common.trainable = flat.trainable;
      common.optimizerState = flat.optimizerState;
      if (elementSize(common.dtype) == 0) {
        *error = QStringLiteral("%1.dtype: '%2' is not a parameter dtype (Float, Double, Half, BFloat16)")
                     .arg(fpath, common.dtype);
        return {};
      }
      for (std::size_t m = 0; m < flat.members.size(); ++m) {
        const protocol::ShardedMember& member = flat.members[m];
        ShardedTensorInfo t = common;
        t.name = QString::fromStdString(member.name);
        t.numel = member.numel;
        qint64 product = 1;
        for (std::int64_t d : member.shape) {
          t.shape << d;
          product *= d;
        }
        // A shape that disagrees with numel would list wrong sizes: refuse it.
        if (product != t.numel) {
          *error = QStringLiteral("%1.shape: holds %2 elements but numel is %3")
                       .arg(at(fpath + QStringLiteral(".members"), m))
                       .arg(product)
                       .arg(t.numel);
          return {};
        }
        t.bytes = t.numel * elementSize(t.dtype);
        out.insert(t.name, t);
      }
    }
  }
  return out;
}

}  // namespace

ShardedIndexRead parseShardedIndex(const QByteArray& json, const QString& where) {
  ShardedIndexRead out;
  auto decoded =
      protocol::decodeShardedIndex(std::string_view(json.constData(), static_cast<std::size_t>(json.size())));
  if (!decoded) {
    out.error = QStringLiteral("%1: %2").arg(where, QString::fromStdString(decoded.status().message()));
    return out;
  }
  const protocol::ShardedIndexRecord& x = *decoded;
  ShardedCheckpointInfo& info = out.info;
  info.worldSize = x.worldSize;
  info.strategy = QString::fromStdString(x.strategy);
  info.shardGroupSize = x.shardGroupSize;
  info.files = qstrings(x.files);
  QString error;
  if (info.files.size() != info.shardGroupSize) {
    error = QStringLiteral("files: %1 files for a shard group of %2")
                .arg(info.files.size())
                .arg(info.shardGroupSize);
  }
  QHash<QString, ShardedTensorInfo> members;
  if (error.isEmpty()) members = membersOf(x.units, &error);
  for (std::size_t i = 0; i < x.parameterOrder.size() && error.isEmpty(); ++i) {
    const QString name = QString::fromStdString(x.parameterOrder[i]);
    const auto it = members.constFind(name);
    if (it == members.constEnd()) {
      error = QStringLiteral("%1: '%2' is a member of no unit")
                  .arg(at(QStringLiteral("parameter_order"), i), name);
    } else {
      info.parameters << *it;
    }
  }
  info.buffers = qstrings(x.buffers);
  info.epoch = x.epoch;
  info.resumeKind = QString::fromStdString(x.resume.kind);
  info.step = x.resume.step;
  info.iteration = x.resume.iteration;
  if (!error.isEmpty()) {
    out.error = QStringLiteral("%1: %2").arg(where, error);
    out.info = {};
  }
  return out;
}

ShardedIndexRead readShardedIndex(const QString& dir) {
  const QString path = QDir(dir).filePath(QString::fromLatin1(protocol::kShardedIndexFile));
  QFile f(path);
  if (!f.exists()) {
    ShardedIndexRead out;
    out.error = QStringLiteral("%1: missing (the checkpoint's write did not finish)").arg(path);
    return out;
  }
  if (!f.open(QIODevice::ReadOnly)) {
    ShardedIndexRead out;
    out.error = QStringLiteral("%1: cannot read: %2").arg(path, f.errorString());
    return out;
  }
  return parseShardedIndex(f.readAll(), path);
}

}  // namespace fs::app
