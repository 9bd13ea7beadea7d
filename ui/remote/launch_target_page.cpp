#include "ui/remote/launch_target_page.h"

#include <QButtonGroup>
#include <QDateTime>
#include <QDir>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QRadioButton>
#include <QStackedWidget>
#include <QVBoxLayout>

#include "app/config/config_document.h"
#include "app/launch/run_preparation.h"
#include "backend/protocol/config/pipe_commands.h"
#include "ui/remote/field_binding.h"
#include "ui/remote/slurm_target_panel.h"
#include "ui/remote/ssh_target_panel.h"
#include "ui/remote/string_map_editor.h"

namespace fs::ui {
namespace {

const char* kindOf(LaunchTargetPage::Target t) {
  switch (t) {
    case LaunchTargetPage::kSsh:
      return "ssh";
    case LaunchTargetPage::kSlurm:
      return "slurm";
    case LaunchTargetPage::kExternal:
      return "external";
    case LaunchTargetPage::kLocal:
      break;
  }
  return "local";
}

QString timeStamp() {
  return QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss"));
}

QStringList toQt(const std::vector<std::string>& list) {
  QStringList out;
  for (const auto& s : list) out << QString::fromStdString(s);
  return out;
}

}  // namespace

LaunchTargetPage::LaunchTargetPage(app::ConfigDocument* document, std::shared_ptr<HostOpenerService> hosts,
                                   QWidget* parent)
    : QWidget(parent),
      document_(document),
      hosts_(std::move(hosts)),
      worker_(std::make_unique<app::WorkerThread<RemoteWorker>>(new RemoteWorker(hosts_),
                                                                QStringLiteral("launch-target"))),
      targets_(new QButtonGroup(this)),
      stack_(new QStackedWidget),
      remote_(new QGroupBox(tr("On the hosts"))),
      engine_(new QLineEdit),
      remoteRoot_(new QLineEdit),
      aliasState_(new QLabel),
      env_(new StringMapEditor),
      ssh_(new SshTargetPanel(document, worker_->worker())),
      slurm_(new SlurmTargetPanel(document, worker_->worker())),
      stamp_(timeStamp()) {
  setObjectName(QStringLiteral("launchTargetPage"));
  auto* choice = new QHBoxLayout;
  choice->addWidget(new QLabel(tr("Launch on:")));
  const std::pair<Target, QString> buttons[] = {
      {kLocal, tr("This machine")}, {kSsh, tr("SSH nodes")}, {kSlurm, tr("SLURM cluster")}};
  for (const auto& [target, text] : buttons) {
    auto* b = new QRadioButton(text);
    b->setObjectName(QStringLiteral("target-") + QLatin1String(kindOf(target)));
    targets_->addButton(b, target);
    choice->addWidget(b);
  }
  choice->addStretch();

  engine_->setObjectName(QStringLiteral("remoteEngine"));
  engine_->setPlaceholderText(tr("flamingo-train (found on the hosts' login PATH)"));
  remoteRoot_->setPlaceholderText(
      tr("flamingo-runs under the login directory; or absolute, e.g. /scratch/$USER/flamingo-runs"));
  bindLineEdit(remoteRoot_, document_, QStringLiteral("launch.remote_workdir"));
  aliasState_->setTextFormat(Qt::PlainText);
  auto* remoteForm = new QFormLayout(remote_);
  remoteForm->addRow(tr("Engine path:"), engine_);
  remoteForm->addRow(tr("Run root:"), remoteRoot_);
  remoteForm->addRow(QString(), aliasState_);

  auto* local = new QLabel(
      tr("The run starts on this machine (launch.kind=local) in a new directory under the config's "
         "run_root, and the Monitor tab follows it."));
  local->setWordWrap(true);
  local->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  auto* external = new QLabel(
      tr("launch.kind is external: the ranks are started by another launcher (torchrun, srun, a "
         "script of yours), which gives each its rank. Choose a target above to launch from here."));
  external->setWordWrap(true);
  external->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  stack_->addWidget(local);
  stack_->addWidget(ssh_);
  stack_->addWidget(slurm_);
  stack_->addWidget(external);  // kExternal

  // launch.env: every launcher but an external one sets it for every rank (NOTE [Launch
  // environment], backend/protocol/config/launch_env.h); the line under the table shows it as
  // the launchers log it, each NAME=VALUE quoted for a shell.
  auto* envGroup = new QGroupBox(tr("Environment of every rank (launch.env)"));
  envGroup->setObjectName(QStringLiteral("launchEnvGroup"));
  envGroup->setToolTip(tr(
      "Variables set for every rank on every node, as torchrun's ranks inherit its environment and as "
      "sbatch --export passes them: e.g. OPENBLAS_CORETYPE, so that SSH and SLURM ranks compute as "
      "this machine's do. The launcher's own variables (RANK, WORLD_SIZE, MASTER_ADDR, ...) are refused."));
  auto* envSummary = new QLabel;
  bindStringMap(env_, document_, QStringLiteral("launch.env"), envSummary);
  auto* envLayout = new QVBoxLayout(envGroup);
  envLayout->addWidget(env_);
  envLayout->addWidget(envSummary);

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(choice);
  layout->addWidget(remote_);
  layout->addWidget(stack_, 1);
  layout->addWidget(envGroup);

  ssh_->setInputSource([this] {
    PreflightInput input;
    input.engine = remoteEngine().toStdString();
    // As the SSH launcher picks it: launch.remote_workdir, else flamingo-runs under the login directory.
    input.runRoot = document_->config().launch.remote_workdir;
    if (input.runRoot.empty()) input.runRoot = "flamingo-runs";
    return input;
  });
  slurm_->setSpecSource([this] {
    app::cluster::SlurmJobSpec spec;
    spec.run_dir = slurmRunDir().toStdString();
    spec.engine = remoteEngine().isEmpty() ? "flamingo-train" : remoteEngine().toStdString();
    // --allow-pipe goes into the script; Submit asks first (the main window's submit gate).
    spec.allow_pipe = protocol::hasPipeSources(document_->config());
    return spec;
  });
  connect(engine_, &QLineEdit::textChanged, slurm_, &SlurmTargetPanel::refresh);
  connect(targets_, &QButtonGroup::idClicked, this, [this](int id) { setTarget(static_cast<Target>(id)); });
  connect(ssh_, &SshTargetPanel::hostsEdited, this, &LaunchTargetPage::writeHosts);
  connect(slurm_, &SlurmTargetPanel::submitted, this,
          [this](const QString& host, const QString& id, const QString& dir) {
            submitted_.insert(dir);  // the next job gets a directory of its own
            stamp_ = timeStamp();
            slurm_->resetToGenerated();  // an edited script named the old directory
            emit slurmSubmitted(host, id, dir);
          });
  connect(document_, &app::ConfigDocument::configReset, this, &LaunchTargetPage::showKind);
  connect(document_, &app::ConfigDocument::fieldChanged, this, [this](const QString& path) {
    if (path == QLatin1String("launch.kind") || path == QLatin1String("launch.hosts")) showKind();
  });
  connect(worker_->worker(), &RemoteWorker::aliasesLoaded, this, &LaunchTargetPage::onAliases);
  loadAliases();
  showKind();
}

void LaunchTargetPage::loadAliases(const app::remote::SshConfigOptions& options) {
  RemoteWorker* worker = worker_->worker();
  QMetaObject::invokeMethod(worker, [worker, options] { worker->loadAliases(options); });
}

LaunchTargetPage::~LaunchTargetPage() {
  worker_->worker()->cancel();  // a running pre-flight ends before the thread is joined
}

LaunchTargetPage::Target LaunchTargetPage::target() const {
  const std::string& kind = document_->config().launch.kind;
  if (kind == "ssh") return kSsh;
  if (kind == "slurm") return kSlurm;
  if (kind == "external") return kExternal;
  return kLocal;
}

QString LaunchTargetPage::remoteEngine() const {
  return engine_->text().trimmed();
}

QString LaunchTargetPage::slurmRunDir() const {
  QString root = QString::fromStdString(document_->config().launch.remote_workdir);
  if (root.isEmpty()) root = QStringLiteral("flamingo-runs");
  // A relative root is under the login directory: resolvable here only on this machine.
  if (QDir::isRelativePath(root) && slurm_->loginHost() == QLatin1String("local"))
    root = QDir::home().filePath(root);
  // The name as every other launch path makes a directory of it (letters, digits, . _ -): a raw
  // name could carry "::", "pipe:" or a line break into the script (NOTE [Run directory text]).
  const QString name = app::sanitizeRunName(QString::fromStdString(document_->config().name));
  const QString base = QDir::cleanPath(root) + QLatin1Char('/') + name + QLatin1Char('-') + stamp_;
  QString dir = base;
  for (int n = 2; submitted_.contains(dir); ++n) dir = base + QLatin1Char('-') + QString::number(n);
  return dir;
}

app::LaunchRequest LaunchTargetPage::request(const QString& localRunRoot) const {
  app::LaunchRequest request;
  request.config = document_->config();
  if (target() == kLocal || target() == kExternal) {
    request.runRoot = localRunRoot;
  } else {
    request.runRoot = QString::fromStdString(request.config.launch.remote_workdir);
    request.remoteEngine = remoteEngine();
  }
  return request;
}

void LaunchTargetPage::setTarget(Target target) {
  const std::string kind = kindOf(target);
  const auto& launch = document_->config().launch;
  if (target == kSsh) {
    // The panel's hosts, or the document's when the panel has none yet.
    QStringList hosts = ssh_->hosts();
    if (hosts.isEmpty()) hosts = toQt(launch.hosts);
    document_->setField("launch.kind", kind);
    writeHosts(hosts);
    return;
  }
  // Local and SLURM launches refuse launch.hosts; the panel keeps them for a way
  // back. The kind first: the hosts' change must not show as SSH hosts.
  const QStringList kept = toQt(launch.hosts);
  document_->setField("launch.kind", kind);
  if (!kept.isEmpty()) {
    ssh_->setHosts(kept);
    document_->setFieldValue("launch.hosts", protocol::Value(std::vector<std::string>{}));
  }
  if (target == kLocal && document_->config().launch.nnodes > 1) document_->setField("launch.nnodes", "1");
}

void LaunchTargetPage::writeHosts(const QStringList& hosts) {
  ssh_->setHosts(hosts);
  if (target() != kSsh) return;
  std::vector<std::string> list;
  for (const QString& h : hosts) list.push_back(h.toStdString());
  if (list != document_->config().launch.hosts)
    document_->setFieldValue("launch.hosts", protocol::Value(list));
  if (!list.empty() && static_cast<std::int64_t>(list.size()) != document_->config().launch.nnodes)
    document_->setField("launch.nnodes", std::to_string(list.size()));
}

void LaunchTargetPage::showKind() {
  const Target t = target();
  if (auto* b = targets_->button(t); b && !b->isChecked()) {
    b->setChecked(true);
  } else if (!b && targets_->checkedButton()) {
    // External: no button. An exclusive group cannot uncheck its last button.
    targets_->setExclusive(false);
    targets_->checkedButton()->setChecked(false);
    targets_->setExclusive(true);
  }
  stack_->setCurrentIndex(t);
  remote_->setVisible(t == kSsh || t == kSlurm);
  if (t == kSsh) ssh_->setHosts(toQt(document_->config().launch.hosts));
  if (t == kSlurm) slurm_->refresh();
}

void LaunchTargetPage::onAliases(const QStringList& aliases, const QString& error) {
  ssh_->setAliases(aliases);
  slurm_->setAliases(aliases);
  aliasState_->setText(error.isEmpty()
                           ? tr("%n host(s) from your ssh config.", nullptr, static_cast<int>(aliases.size()))
                           : tr("ssh config not read: %1").arg(error));
  emit aliasesLoaded(aliases, error);
}

}  // namespace fs::ui
