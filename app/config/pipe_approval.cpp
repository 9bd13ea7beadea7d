#include "app/config/pipe_approval.h"

#include <QCryptographicHash>
#include <QStringList>
#include <algorithm>

// NOTE [Approval hashes]
// An approved text may carry a credential (a pipe: command with a token in its
// URL, a SLURM argument with a password), so the settings file keeps only
// "sha256v1:<hex>" of each text's UTF-8 bytes: enough to recognise the exact
// text again, any change asks again, and nothing to read the command back
// from. The "v1" names the scheme, so a later one can tell old entries apart.
// A hash of a guessable text can be confirmed by guessing it; approvals hide
// what was approved from a reader of the file, they do not make a secret
// unguessable. Builds before this one kept the texts under
// "<group>/sources" (pipe:) and "<group>/args" (SLURM); the constructor hashes
// those, adds them to "<group>/sha256" and removes the plain texts.

namespace fs::app {
namespace {

const QStringList kPlainTextKeys = {QStringLiteral("sources"), QStringLiteral("args")};

QStringList sortedUnique(QStringList list) {
  list.sort();
  list.removeDuplicates();
  return list;
}

}  // namespace

PipeApprovals::PipeApprovals(QSettings& settings, QString key) : settings_(settings), key_(std::move(key)) {
  migratePlainText();
}

QString PipeApprovals::hashOf(const std::string& text) {
  return QStringLiteral("sha256v1:") +
         QString::fromLatin1(
             QCryptographicHash::hash(QByteArray::fromStdString(text), QCryptographicHash::Sha256).toHex());
}

void PipeApprovals::migratePlainText() {
  const QString group = key_.section(QLatin1Char('/'), 0, 0);
  QStringList hashes = settings_.value(key_).toStringList();
  bool changed = false;
  for (const QString& name : kPlainTextKeys) {
    const QString plainKey = group + QLatin1Char('/') + name;
    if (plainKey == key_ || !settings_.contains(plainKey)) continue;
    for (const QString& text : settings_.value(plainKey).toStringList()) hashes << hashOf(text.toStdString());
    settings_.remove(plainKey);
    changed = true;
  }
  if (!changed) return;
  settings_.setValue(key_, sortedUnique(hashes));
  settings_.sync();
}

bool PipeApprovals::isApproved(const std::string& source) const {
  return settings_.value(key_).toStringList().contains(hashOf(source));
}

void PipeApprovals::remember(const std::vector<std::string>& sources) {
  QStringList list = settings_.value(key_).toStringList();
  bool added = false;
  for (const auto& s : sources) {
    const QString hash = hashOf(s);
    if (list.contains(hash)) continue;
    list << hash;
    added = true;
  }
  if (!added) return;
  settings_.setValue(key_, sortedUnique(list));
  settings_.sync();
}

std::size_t PipeApprovals::size() const {
  return static_cast<std::size_t>(settings_.value(key_).toStringList().size());
}

std::vector<protocol::PipeSource> pipeSourcesToApprove(const protocol::RunConfig& config,
                                                       const std::set<std::string>& typed,
                                                       const PipeApprovals& approvals) {
  std::vector<protocol::PipeSource> out;
  std::set<std::string> seen;
  for (auto& s : protocol::pipeSources(config)) {
    if (!seen.insert(s.source).second) continue;
    if (typed.contains(s.source) || approvals.isApproved(s.source)) continue;
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<std::string> slurmArgsToApprove(const protocol::RunConfig& config,
                                            const std::set<std::string>& typed,
                                            const PipeApprovals& approvals) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& item : config.launch.slurm.extra_args) {
    if (!seen.insert(item).second) continue;
    if (typed.contains(item) || approvals.isApproved(item)) continue;
    out.push_back(item);
  }
  return out;
}

}  // namespace fs::app
