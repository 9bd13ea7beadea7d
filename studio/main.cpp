// flamingo-studio: parses the options, finds the resources, wires the window.
#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>
#include <QTimer>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

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

}  // namespace

int main(int argc, char** argv) {
  // The headless front end: no display needed, no widgets created.
  if (argc > 1 && std::strcmp(argv[1], "remote") == 0) {
    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("flamingo-studio"));
    return fs::studio::remote::runRemoteCli(std::vector<std::string>(argv + 2, argv + argc), std::cout,
                                            std::cerr);
  }
  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("flamingo-studio"));
  QApplication::setOrganizationName(QStringLiteral("Flamingo Studio"));
  QApplication::setApplicationVersion(QStringLiteral(FS_VERSION));

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
          "Open the window with the tiny CPU preset (presets/tiny.yaml) and start it as a local run\n"
          "(synthetic data; runs under the user's data directory), followed live."));
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
  parser.addOption(screenshot);
  parser.addPositionalArgument(QStringLiteral("config"), QStringLiteral("A run config (YAML) to open."),
                               QStringLiteral("[config.yaml]"));
  parser.process(app);

  QString configPath = parser.positionalArguments().value(0);
  if (parser.isSet(demo)) {
    if (!configPath.isEmpty()) {
      std::fprintf(stderr, "flamingo-studio: --demo opens the tiny preset; give no config file with it\n");
      return 2;
    }
    configPath = findResourcesDir() + QStringLiteral("/presets/tiny.yaml");
  }

  fs::app::ConfigDocument document;
  fs::ui::MainWindow window(&document);
  window.show();

  const QString shot = parser.value(screenshot);
  const bool launchDemo = parser.isSet(demo) && shot.isEmpty();
  if (parser.isSet(follow)) window.followRun(QFileInfo(parser.value(follow)).absoluteFilePath());
  if (!configPath.isEmpty()) {
    QObject::connect(&document, &fs::app::ConfigDocument::loaded, &window, [&] {
      if (!shot.isEmpty()) screenshotAndQuit(&window, shot);
      if (launchDemo) {
        // The demo's runs go under the user's data directory, as `flamingo-train demo`'s do.
        const QString root = QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) +
                             QStringLiteral("/flamingo-studio/runs");
        (void)document.setField("run_root", root.toStdString());
        window.launch();
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
