// flamingo-studio: parses the options, finds the resources, wires the window.
#include <unistd.h>

#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QFileInfo>
#include <QIcon>
#include <QLabel>
#include <QMessageBox>
#include <QStatusBar>
#include <QTimer>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "app/common/home_migration.h"
#include "app/common/user_dirs.h"
#include "app/config/config_document.h"
#include "studio/remote/remote_cli.h"
#include "ui/main_window.h"

namespace {

// The installed layout first (<prefix>/bin/flamingo-studio next to
// <prefix>/share/flamingo-studio), then the source tree of this build.
QString findResourcesDir() {
  const QString installed =
      QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("../share/flamingo-studio"));
  if (QFileInfo::exists(installed + QStringLiteral("/presets"))) return QDir::cleanPath(installed);
  return QStringLiteral(FS_RESOURCES_DIR);
}

// Saves a picture of `window` to `path` and quits with the result.
void screenshotAndQuit(QWidget* window, const QString& path) {
  QTimer::singleShot(300, window, [window, path] {
    const bool ok = window->grab().save(path);
    if (!ok) std::fprintf(stderr, "flamingo-studio: cannot write %s\n", qPrintable(path));
    QCoreApplication::exit(ok ? 0 : 1);
  });
}

// Moves what older builds wrote under "Flamingo Studio/flamingo-studio" into the
// one home (app/common/home_migration.h) and says so: a line on stderr and, once
// the window is up, a dialog that does not block.
QString moveOldHome() {
  const fs::app::HomeMigrationResult moved = fs::app::migrateOldHome(fs::app::HomeLayout::current());
  const QString message = moved.message();
  if (!message.isEmpty()) std::fprintf(stderr, "flamingo-studio: %s\n", qPrintable(message));
  return message;
}

void showMoveMessage(QWidget* window, const QString& message) {
  auto* box = new QMessageBox(QMessageBox::Information, QStringLiteral("Flamingo Studio: your files moved"),
                              message, QMessageBox::Ok, window);
  box->setObjectName(QStringLiteral("homeMigrationMessage"));
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->setModal(false);
  box->show();
}

}  // namespace

int main(int argc, char** argv) {
  // The headless front end: no display needed, no widgets created.
  if (argc > 1 && std::strcmp(argv[1], "remote") == 0) {
    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("flamingo-studio"));
    return fs::studio::remote::runRemoteCli(std::vector<std::string>(argv + 2, argv + argc), std::cout,
                                            std::cerr,
                                            {::isatty(STDOUT_FILENO) != 0, ::isatty(STDERR_FILENO) != 0});
  }
  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("flamingo-studio"));
  QApplication::setOrganizationName(QStringLiteral("Flamingo Studio"));
  QApplication::setApplicationVersion(QStringLiteral(FS_VERSION));
  // The desktop entry's name (Wayland matches the window to it) and the icon the
  // package installs in the hicolor theme (none in a build tree: Qt's default then).
  QGuiApplication::setDesktopFileName(QStringLiteral(FS_APP_ID));
  QApplication::setWindowIcon(QIcon::fromTheme(QStringLiteral("flamingo-studio")));

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral(
      "Flamingo Studio: configure OpenFlamingo-style training runs in a form generated from the run-config\n"
      "schema, launch them on this machine, follow them live (losses per dataset, lr, gradient norm, gates,\n"
      "throughput, memory, layout, logs), control them (stop, pause, checkpoint) and compare past runs."));
  parser.addHelpOption();
  parser.addVersionOption();
  const QCommandLineOption demo(
      QStringLiteral("demo"),
      QStringLiteral(
          "Open the window with the demo preset (presets/demo.yaml: 32 steps of a small model on generated\n"
          "pictures, seconds on a CPU) and start it as a local run under the user's data directory\n"
          "($XDG_DATA_HOME/flamingo-studio/runs), followed live."));
  const QCommandLineOption longDemo(
      QStringLiteral("long"),
      QStringLiteral(
          "With --demo: the built-in default run instead (presets/demo-long.yaml: 2 local ranks under\n"
          "FSDP full_shard), a few minutes on two cores, long enough to watch, pause and stop (the Stop\n"
          "button on the Monitor tab)."));
  const QCommandLineOption screenshot(
      QStringLiteral("screenshot"),
      QStringLiteral("Save a PNG of the window to <file> once the config has loaded, then exit."),
      QStringLiteral("file"));
  const QCommandLineOption follow(
      QStringLiteral("follow"),
      QStringLiteral("Follow the run directory <dir> live (also one started elsewhere)."),
      QStringLiteral("dir"));
  parser.addOption(follow);
  parser.addOption(demo);
  parser.addOption(longDemo);
  parser.addOption(screenshot);
  parser.addPositionalArgument(QStringLiteral("config"), QStringLiteral("A run config (YAML) to open."),
                               QStringLiteral("[config.yaml]"));
  parser.process(app);

  QString configPath = parser.positionalArguments().value(0);
  if (parser.isSet(demo)) {
    if (!configPath.isEmpty()) {
      std::fprintf(stderr, "flamingo-studio: --demo opens the demo preset; give no config file with it\n");
      return 2;
    }
    configPath = findResourcesDir() + (parser.isSet(longDemo) ? QStringLiteral("/presets/demo-long.yaml")
                                                              : QStringLiteral("/presets/demo.yaml"));
  } else if (parser.isSet(longDemo)) {
    std::fprintf(stderr, "flamingo-studio: --long goes with --demo\n");
    return 2;
  }
  const QString moved = moveOldHome();  // before the window opens the history and the settings

  fs::app::ConfigDocument document;
  fs::ui::MainWindow window(&document);
  window.show();
  if (!moved.isEmpty()) showMoveMessage(&window, moved);

  const QString shot = parser.value(screenshot);
  const bool launchDemo = parser.isSet(demo) && shot.isEmpty();
  if (parser.isSet(follow)) window.followRun(QFileInfo(parser.value(follow)).absoluteFilePath());
  if (!configPath.isEmpty()) {
    QObject::connect(&document, &fs::app::ConfigDocument::loaded, &window, [&] {
      // The demo's runs go under the user's data directory, as `flamingo-train demo`'s do
      // (also in its screenshot, which shows the form).
      if (parser.isSet(demo)) (void)document.setField("run_root", fs::app::userRunsDir().toStdString());
      if (!shot.isEmpty()) screenshotAndQuit(&window, shot);
      if (launchDemo) {
        window.launch();
        if (parser.isSet(longDemo)) {
          const QString hint =
              QStringLiteral("The default run takes a few minutes: Pause and Stop are on the Monitor tab.");
          std::fprintf(stderr, "flamingo-studio: %s\n", qPrintable(hint));
          auto* label = new QLabel(hint);
          label->setObjectName(QStringLiteral("demoStopHint"));
          window.statusBar()->addPermanentWidget(label);
        }
      }
    });
    QObject::connect(&document, &fs::app::ConfigDocument::loadFailed, &window,
                     [&](const QString& path, const QString& message) {
                       std::fprintf(stderr, "flamingo-studio: cannot open %s:\n%s\n", qPrintable(path),
                                    qPrintable(message));
                       if (!shot.isEmpty()) QCoreApplication::exit(1);
                     });
    document.loadFile(configPath);
  } else if (!shot.isEmpty()) {
    screenshotAndQuit(&window, shot);
  }
  return QApplication::exec();
}
