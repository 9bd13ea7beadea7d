// JsonFieldReader: reads a QJsonObject's fields by name and keeps the first
// problem with its JSON path ("units[3].flats[0].numel: missing"), so a parser
// reads straight through and reports once at the end, naming the field. Used
// by the app's readers of JSON the engine writes (the plan, a sharded
// checkpoint's index).
//
// Thread-safety: a plain value; one parse owns one reader.
#pragma once

#include <QJsonArray>
#include <QJsonObject>
#include <QJsonValue>
#include <QString>
#include <cmath>
#include <cstdint>

namespace fs::app {

class JsonFieldReader {
 public:
  bool failed() const { return !error_.isEmpty(); }
  const QString& error() const { return error_; }

  QJsonValue field(const QJsonObject& obj, const QString& path, const char* key) {
    const QJsonValue v = obj.value(QLatin1String(key));
    if (v.isUndefined()) fail(join(path, key), QStringLiteral("missing"));
    return v;
  }
  std::int64_t integer(const QJsonObject& obj, const QString& path, const char* key) {
    const QJsonValue v = field(obj, path, key);
    if (v.isUndefined()) return 0;
    // JSON numbers arrive as doubles; byte counts stay exact below 2^53.
    const double d = v.toDouble(std::nan(""));
    if (!v.isDouble() || d != std::floor(d)) {
      fail(join(path, key), QStringLiteral("not an integer"));
      return 0;
    }
    return static_cast<std::int64_t>(d);
  }
  QString string(const QJsonObject& obj, const QString& path, const char* key) {
    const QJsonValue v = field(obj, path, key);
    if (!v.isUndefined() && !v.isString()) fail(join(path, key), QStringLiteral("not a string"));
    return v.toString();
  }
  bool boolean(const QJsonObject& obj, const QString& path, const char* key) {
    const QJsonValue v = field(obj, path, key);
    if (!v.isUndefined() && !v.isBool()) fail(join(path, key), QStringLiteral("not true or false"));
    return v.toBool();
  }
  QJsonObject object(const QJsonObject& obj, const QString& path, const char* key) {
    const QJsonValue v = field(obj, path, key);
    if (!v.isUndefined() && !v.isObject()) fail(join(path, key), QStringLiteral("not an object"));
    return v.toObject();
  }
  QJsonArray array(const QJsonObject& obj, const QString& path, const char* key) {
    const QJsonValue v = field(obj, path, key);
    if (!v.isUndefined() && !v.isArray()) fail(join(path, key), QStringLiteral("not an array"));
    return v.toArray();
  }
  QJsonObject element(const QJsonArray& array, const QString& path, qsizetype i) {
    if (!array.at(i).isObject()) fail(at(path, i), QStringLiteral("not an object"));
    return array.at(i).toObject();
  }
  void fail(const QString& path, const QString& what) {
    if (error_.isEmpty()) error_ = QStringLiteral("%1: %2").arg(path, what);
  }

  static QString join(const QString& path, const char* key) {
    return path.isEmpty() ? QLatin1String(key) : path + QLatin1Char('.') + QLatin1String(key);
  }
  static QString at(const QString& path, qsizetype i) { return QStringLiteral("%1[%2]").arg(path).arg(i); }

 private:
  QString error_;
};

}  // namespace fs::app
