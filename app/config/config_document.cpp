#include "app/config/config_document.h"

#include <QMetaObject>
#include <algorithm>
#include <map>
#include <utility>

#include "app/common/worker_thread.h"
#include "app/config/config_file_worker.h"
#include "backend/protocol/config/pipe_commands.h"
#include "backend/protocol/config/validate.h"

namespace fs::app {
namespace {

using protocol::EntrySpec;
using protocol::FieldType;
using protocol::Status;
using protocol::Value;

bool valueMatchesType(const EntrySpec& spec, const Value& value) {
  switch (spec.type) {
    case FieldType::kBool:
      return std::holds_alternative<bool>(value);
    case FieldType::kInt:
      return std::holds_alternative<int64_t>(value);
    case FieldType::kFloat:
      return std::holds_alternative<double>(value);
    case FieldType::kString:
    case FieldType::kEnum:
      return std::holds_alternative<std::string>(value);
    case FieldType::kStringList:
      return std::holds_alternative<std::vector<std::string>>(value);
    case FieldType::kStringMap:
      return std::holds_alternative<protocol::StringMap>(value);
  }
  return false;
}

std::vector<std::pair<std::string, std::string>> fieldTexts(const protocol::RunConfig& config) {
  std::vector<std::pair<std::string, std::string>> out;
  protocol::forEachField(protocol::runConfigSchema(), &config,
                         [&](const std::string& path, const EntrySpec& spec, const void* owner) {
                           out.emplace_back(path, protocol::valueToText(spec, spec.get(owner)));
                         });
  return out;
}

}  // namespace

ConfigDocument::ConfigDocument(QObject* parent) : QObject(parent), config_(protocol::defaultRunConfig()) {
  problems_ = protocol::validateConfig(config_);
}

ConfigDocument::~ConfigDocument() {
  if (files_) files_->finishPending();  // a save asked for just before closing still happens
}

int ConfigDocument::errorCount() const {
  return static_cast<int>(
      std::count_if(problems_.begin(), problems_.end(), [](const auto& p) { return p.isError(); }));
}

int ConfigDocument::warningCount() const {
  return static_cast<int>(problems_.size()) - errorCount();
}

void ConfigDocument::setConfig(const protocol::RunConfig& config, const QString& filePath) {
  config_ = config;
  typedPipeSources_.clear();  // everything now came from elsewhere (NOTE [Pipe provenance])
  typedSlurmArgs_.clear();
  ++editGeneration_;
  setFilePath(filePath);
  const bool problemsMoved = revalidate();
  emit configReset();
  if (problemsMoved) emit problemsChanged();
  setModified(false);
}

Status ConfigDocument::setField(const std::string& path, const std::string& text) {
  auto ref = protocol::resolvePath(protocol::runConfigSchema(), &config_, path);
  if (!ref.isOk()) return ref.status();
  auto value = protocol::valueFromText(*ref->spec, text, ref->path);
  if (!value.isOk()) return value.status();
  return setFieldValue(ref->path, value.value());
}

Status ConfigDocument::setFieldValue(const std::string& path, const Value& value) {
  auto ref = protocol::resolvePath(protocol::runConfigSchema(), &config_, path);
  if (!ref.isOk()) return ref.status();
  const EntrySpec& spec = *ref->spec;
  if (!valueMatchesType(spec, value)) {
    return Status::invalidArgument(ref->path + ": a " + protocol::fieldTypeName(spec.type) +
                                   " field was given " + "a value of another type");
  }
  if (spec.get(ref->owner) == value) return Status::ok();
  notePipeSourcesTyped(ref->path, spec.get(ref->owner), value);
  noteSlurmArgsTyped(ref->path, spec.get(ref->owner), value);
  spec.set(ref->owner, value);
  const bool problemsMoved = revalidate();
  emit fieldChanged(QString::fromStdString(ref->path));
  markModified();
  if (problemsMoved) emit problemsChanged();
  return Status::ok();
}

protocol::StatusOr<Value> ConfigDocument::fieldValue(const std::string& path) const {
  // resolvePath only walks the object; it never writes through the pointer.
  auto ref =
      protocol::resolvePath(protocol::runConfigSchema(), const_cast<protocol::RunConfig*>(&config_), path);
  if (!ref.isOk()) return ref.status();
  return ref->spec->get(ref->owner);
}

const EntrySpec* ConfigDocument::fieldSpec(const std::string& path) const {
  auto ref =
      protocol::resolvePath(protocol::runConfigSchema(), const_cast<protocol::RunConfig*>(&config_), path);
  return ref.isOk() ? ref->spec : nullptr;
}

std::string ConfigDocument::checkFieldText(const std::string& path, const std::string& text) const {
  auto ref =
      protocol::resolvePath(protocol::runConfigSchema(), const_cast<protocol::RunConfig*>(&config_), path);
  if (!ref.isOk()) return ref.status().message();
  auto value = protocol::valueFromText(*ref->spec, text, ref->path);
  if (!value.isOk()) return value.status().message();
  return protocol::checkValue(*ref->spec, value.value());
}

bool ConfigDocument::fieldApplies(const std::string& path) const {
  auto ref =
      protocol::resolvePath(protocol::runConfigSchema(), const_cast<protocol::RunConfig*>(&config_), path);
  return !ref.isOk() || protocol::fieldApplies(*ref->section, *ref->spec, ref->owner);
}

int ConfigDocument::listSize(const std::string& listPath) const {
  const protocol::SectionSpec* section = &protocol::runConfigSchema();
  const void* obj = &config_;
  size_t begin = 0;
  while (begin <= listPath.size()) {
    const size_t dot = std::min(listPath.find('.', begin), listPath.size());
    const protocol::EntrySpec* e = section->find(listPath.substr(begin, dot - begin));
    if (e == nullptr) return 0;
    const bool last = dot == listPath.size();
    if (e->kind == EntrySpec::Kind::kList) return last ? static_cast<int>(e->size(obj)) : 0;
    if (e->kind != EntrySpec::Kind::kSection || last) return 0;
    obj = e->childConst(obj);
    section = e->section;
    begin = dot + 1;
  }
  return 0;
}

int ConfigDocument::addDataset(const std::string& type) {
  auto& datasets = config_.data.datasets;
  auto used = [&](const std::string& name) {
    return std::any_of(datasets.begin(), datasets.end(), [&](const auto& d) { return d.name == name; });
  };
  std::string name = type;
  for (int n = 2; used(name); ++n) name = type + "-" + std::to_string(n);
  datasets.push_back(protocol::defaultDataset(name, type));
  const bool problemsMoved = revalidate();
  emit datasetsChanged();
  markModified();
  if (problemsMoved) emit problemsChanged();
  return static_cast<int>(datasets.size()) - 1;
}

bool ConfigDocument::removeDataset(int index) {
  auto& datasets = config_.data.datasets;
  if (index < 0 || index >= static_cast<int>(datasets.size())) return false;
  datasets.erase(datasets.begin() + index);
  const bool problemsMoved = revalidate();
  emit datasetsChanged();
  markModified();
  if (problemsMoved) emit problemsChanged();
  return true;
}

std::vector<FieldDiff> ConfigDocument::diffAgainstDefaults() const {
  const auto defaults = fieldTexts(protocol::defaultRunConfig());
  const auto current = fieldTexts(config_);
  std::map<std::string, const std::string*> defaultByPath;
  for (const auto& [path, text] : defaults) defaultByPath[path] = &text;
  std::vector<FieldDiff> out;
  for (const auto& [path, text] : current) {
    auto it = defaultByPath.find(path);
    if (it == defaultByPath.end()) {
      out.push_back({path, std::nullopt, text});
    } else {
      if (*it->second != text) out.push_back({path, *it->second, text});
      defaultByPath.erase(it);
    }
  }
  for (const auto& [path, text] : defaults) {
    if (defaultByPath.count(path) != 0) out.push_back({path, text, std::nullopt});
  }
  return out;
}

WorkerThread<ConfigFileWorker>& ConfigDocument::files() {
  if (!files_) {
    files_ = std::make_unique<WorkerThread<ConfigFileWorker>>(new ConfigFileWorker,
                                                              QStringLiteral("config-files"));
    connect(files_->worker(), &ConfigFileWorker::loadFinished, this, &ConfigDocument::onLoadFinished);
    connect(files_->worker(), &ConfigFileWorker::saveFinished, this, &ConfigDocument::onSaveFinished);
  }
  return *files_;
}

void ConfigDocument::loadFile(const QString& path) {
  const quint64 ticket = nextTicket_++;
  QMetaObject::invokeMethod(
      files().worker(), [worker = files().worker(), ticket, path] { worker->load(ticket, path); },
      Qt::QueuedConnection);
}

void ConfigDocument::saveFile(const QString& path) {
  const quint64 ticket = nextTicket_++;
  saveGenerations_.insert(ticket, editGeneration_);
  QMetaObject::invokeMethod(
      files().worker(),
      [worker = files().worker(), ticket, path, snapshot = config_] { worker->save(ticket, path, snapshot); },
      Qt::QueuedConnection);
}

// NOTE [Pipe provenance]: a pipe: source counts as typed in this form when
// an edit of a shards field brought it in: it is in the new value and was not
// in the old one. Appending "::x.tar" to a loaded "pipe:CMD" therefore does
// not make CMD typed; changing CMD by one character does (the user wrote the
// new text). setConfig, which every load, preset, import and History config
// goes through, forgets them all.
void ConfigDocument::notePipeSourcesTyped(const std::string& path, const Value& before, const Value& after) {
  if (!path.starts_with("data.datasets[") || !(path.ends_with("].shards") || path.ends_with("].val_shards")))
    return;
  const auto* oldText = std::get_if<std::string>(&before);
  const auto* newText = std::get_if<std::string>(&after);
  if (newText == nullptr) return;
  const auto old = protocol::pipeSourcesOfSpec(oldText ? *oldText : std::string());
  for (auto& s : protocol::pipeSourcesOfSpec(*newText)) {
    if (std::find(old.begin(), old.end(), s) == old.end()) typedPipeSources_.insert(std::move(s));
  }
}

// The same provenance rule for launch.slurm.extra_args items (NOTE [SLURM extra args]).
void ConfigDocument::noteSlurmArgsTyped(const std::string& path, const Value& before, const Value& after) {
  if (path != "launch.slurm.extra_args") return;
  const auto* oldItems = std::get_if<std::vector<std::string>>(&before);
  const auto* newItems = std::get_if<std::vector<std::string>>(&after);
  if (newItems == nullptr) return;
  for (const auto& item : *newItems) {
    if (oldItems == nullptr || std::find(oldItems->begin(), oldItems->end(), item) == oldItems->end())
      typedSlurmArgs_.insert(item);
  }
}

void ConfigDocument::onLoadFinished(quint64 /*ticket*/, const QString& path,
                                    const protocol::ConfigLoad& result) {
  if (!result.ok()) {
    emit loadFailed(path, QString::fromStdString(protocol::formatProblems(result.problems)));
    return;
  }
  setConfig(result.config, path);
  emit loaded(path);
}

void ConfigDocument::onSaveFinished(quint64 ticket, const QString& path, const QString& error) {
  const quint64 generation = saveGenerations_.take(ticket);
  if (!error.isEmpty()) {
    emit saveFailed(path, error);
    return;
  }
  setFilePath(path);
  if (generation == editGeneration_) setModified(false);
  emit saved(path);
}

bool ConfigDocument::revalidate() {
  auto problems = protocol::validateConfig(config_);
  if (problems == problems_) return false;
  problems_ = std::move(problems);
  return true;
}

void ConfigDocument::markModified() {
  ++editGeneration_;
  setModified(true);
}

void ConfigDocument::setModified(bool modified) {
  if (modified_ == modified) return;
  modified_ = modified;
  emit modifiedChanged(modified_);
}

void ConfigDocument::setFilePath(const QString& path) {
  if (filePath_ == path) return;
  filePath_ = path;
  emit filePathChanged(filePath_);
}

}  // namespace fs::app
