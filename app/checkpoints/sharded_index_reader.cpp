#include "app/checkpoints/sharded_index_reader.h"

#include <QDir>
#include <QFile>
#include <QHash>
#include <QJsonDocument>
#include <QJsonParseError>

#include "app/common/json_field_reader.h"

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

QStringList strings(JsonFieldReader& r, const QJsonObject& o, const QString& path, const char* key) {
  QStringList out;
  const QJsonArray a = r.array(o, path, key);
  for (qsizetype i = 0; i < a.size() && !r.failed(); ++i) {
    if (!a.at(i).isString()) r.fail(JsonFieldReader::at(JsonFieldReader::join(path, key), i), QStringLiteral("not a string"));
    out << a.at(i).toString();
  }
  return out;
}

// Every member of every flat parameter, by name.
QHash<QString, ShardedTensorInfo> readMembers(JsonFieldReader& r, const QJsonArray& units) {
  QHash<QString, ShardedTensorInfo> out;
  for (qsizetype u = 0; u < units.size() && !r.failed(); ++u) {
    const QString upath = JsonFieldReader::at(QStringLiteral("units"), u);
    const QJsonObject unit = r.element(units, QStringLiteral("units"), u);
    const QString unitPath = r.string(unit, upath, "path");
    const QJsonArray flats = r.array(unit, upath, "flats");
    const QString fpaths = upath + QStringLiteral(".flats");
    for (qsizetype f = 0; f < flats.size() && !r.failed(); ++f) {
      const QString fpath = JsonFieldReader::at(fpaths, f);
      const QJsonObject flat = r.element(flats, fpaths, f);
      ShardedTensorInfo common;
      common.unit = unitPath;
      common.dtype = r.string(flat, fpath, "dtype");
      common.trainable = r.boolean(flat, fpath, "trainable");
      common.optimizerState = r.boolean(flat, fpath, "optimizer_state");
      if (!r.failed() && elementSize(common.dtype) == 0) {
        r.fail(fpath + QStringLiteral(".dtype"),
               QStringLiteral("'%1' is not a parameter dtype (Float, Double, Half, BFloat16)").arg(common.dtype));
      }
      const QJsonArray members = r.array(flat, fpath, "members");
      const QString mpaths = fpath + QStringLiteral(".members");
      for (qsizetype m = 0; m < members.size() && !r.failed(); ++m) {
        const QString mpath = JsonFieldReader::at(mpaths, m);
        const QJsonObject member = r.element(members, mpaths, m);
        ShardedTensorInfo t = common;
        t.name = r.string(member, mpath, "name");
        t.numel = r.integer(member, mpath, "numel");
        qint64 product = 1;
        const QJsonArray shape = r.array(member, mpath, "shape");
        for (const QJsonValue& d : shape) {
          t.shape << static_cast<qint64>(d.toDouble(-1));
          product *= t.shape.back();
        }
        // A shape that disagrees with numel would list wrong sizes: refuse it.
        if (!r.failed() && product != t.numel) {
          r.fail(mpath + QStringLiteral(".shape"),
                 QStringLiteral("holds %1 elements but numel is %2").arg(product).arg(t.numel));
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
  QJsonParseError parseError;
  const QJsonDocument doc = QJsonDocument::fromJson(json, &parseError);
  if (parseError.error != QJsonParseError::NoError) {
    out.error = QStringLiteral("%1: not JSON: %2 at byte %3").arg(where, parseError.errorString()).arg(parseError.offset);
    return out;
  }
  if (!doc.isObject()) {
    out.error = QStringLiteral("%1: not a JSON object").arg(where);
    return out;
  }
  const QJsonObject root = doc.object();
  JsonFieldReader r;
  const QString format = r.string(root, {}, "format");
  const qint64 version = r.integer(root, {}, "version");
  if (!r.failed() && format != QLatin1String("flamingo_studio.sharded_checkpoint")) {
    r.fail(QStringLiteral("format"), QStringLiteral("'%1' is not flamingo_studio.sharded_checkpoint").arg(format));
  }
  if (!r.failed() && version != kShardedIndexVersionRead) {
    r.fail(QStringLiteral("version"), QStringLiteral("%1 is not a version this build reads (%2); a newer Flamingo "
                                                     "Studio wrote it")
                                          .arg(version)
                                          .arg(kShardedIndexVersionRead));
  }
  ShardedCheckpointInfo& info = out.info;
  info.worldSize = r.integer(root, {}, "world_size");
  info.strategy = r.string(root, {}, "strategy");
  info.shardGroupSize = r.integer(root, {}, "shard_group_size");
  info.files = strings(r, root, {}, "files");
  if (!r.failed() && info.files.size() != info.shardGroupSize) {
    r.fail(QStringLiteral("files"), QStringLiteral("%1 files for a shard group of %2")
                                        .arg(info.files.size())
                                        .arg(info.shardGroupSize));
  }
  const QHash<QString, ShardedTensorInfo> members = readMembers(r, r.array(root, {}, "units"));
  const QStringList order = strings(r, root, {}, "parameter_order");
  for (qsizetype i = 0; i < order.size() && !r.failed(); ++i) {
    const auto it = members.constFind(order[i]);
    if (it == members.constEnd()) {
      r.fail(JsonFieldReader::at(QStringLiteral("parameter_order"), i),
             QStringLiteral("'%1' is a member of no unit").arg(order[i]));
    } else {
      info.parameters << *it;
    }
  }
  info.buffers = strings(r, root, {}, "buffers");
  info.epoch = r.integer(root, {}, "epoch");
  const QJsonObject resume = r.object(root, {}, "resume");
  info.resumeKind = r.string(resume, QStringLiteral("resume"), "kind");
  info.step = r.integer(resume, QStringLiteral("resume"), "step");
  info.iteration = r.integer(resume, QStringLiteral("resume"), "iteration");
  if (r.failed()) {
    out.error = QStringLiteral("%1: %2").arg(where, r.error());
    out.info = {};
  }
  return out;
}

ShardedIndexRead readShardedIndex(const QString& dir) {
  const QString path = QDir(dir).filePath(QStringLiteral("index.json"));
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
