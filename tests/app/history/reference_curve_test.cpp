// ReferenceCurve: header and headerless CSV, column choice, empty cells, and
// every error message with the line and column it names.
#include "app/history/reference_curve.h"

#include <QTemporaryDir>
#include <QtTest>
#include <cmath>

namespace fs::app {
namespace {

using Points = std::vector<double>;

QString errorOf(const QByteArray& text, const ReferenceCurveOptions& options = {}) {
  auto r = parseReferenceCurves(text, QStringLiteral("ref.csv"), options);
  if (r.isOk()) return QStringLiteral("<no error>");
  return QString::fromStdString(r.status().message());
}

}  // namespace

class ReferenceCurveTest : public QObject {
  Q_OBJECT

 private slots:
  void headerRowGivesOneCurvePerOtherColumn() {
    auto r = parseReferenceCurves(
        "\xEF\xBB\xBFstep, laion_loss,\"mmc4 loss\"\r\n0,3.5,4\r\n\r\n10,3.0,3.5\n20,2.5,3.25\n",
        QStringLiteral("ref.csv"));
    QVERIFY2(r.isOk(), r.status().message().c_str());
    QCOMPARE(r->xName, QStringLiteral("step"));
    QCOMPARE(r->columns, (QStringList{"step", "laion_loss", "mmc4 loss"}));
    QCOMPARE(r->curves.size(), 2);
    QCOMPARE(r->curves[0].name, QStringLiteral("laion_loss"));
    QCOMPARE(r->curves[0].x, (Points{0, 10, 20}));
    QCOMPARE(r->curves[0].y, (Points{3.5, 3.0, 2.5}));
    QCOMPARE(r->curves[1].name, QStringLiteral("mmc4 loss"));
    QCOMPARE(r->curves[1].y, (Points{4, 3.5, 3.25}));
  }

  void chosenColumnsAndEmptyCells() {
    ReferenceCurveOptions options;
    options.xColumn = QStringLiteral("samples");
    options.yColumns = {QStringLiteral("val_loss"), QStringLiteral("loss")};
    auto r = parseReferenceCurves("step,loss,samples,val_loss\n1,2.0,64,\n2,1.5,128,1.75\n3,nan,192,\n",
                                  QStringLiteral("ref.csv"), options);
    QVERIFY2(r.isOk(), r.status().message().c_str());
    QCOMPARE(r->xName, QStringLiteral("samples"));
    QCOMPARE(r->curves.size(), 2);
    QCOMPARE(r->curves[0].name, QStringLiteral("val_loss"));  // in the order asked
    QCOMPARE(r->curves[0].x, (Points{128}));                  // empty cells are no point
    QCOMPARE(r->curves[1].x, (Points{64, 128, 192}));
    QVERIFY(std::isnan(r->curves[1].y[2]));  // a diverged loss is a value
  }

  void headerlessTwoColumns() {
    auto r = parseReferenceCurves("0,1e1\n5,+2.5\n5,2\n", QStringLiteral("ref.csv"));
    QVERIFY2(r.isOk(), r.status().message().c_str());
    QCOMPARE(r->xName, QStringLiteral("x"));
    QVERIFY(r->columns.isEmpty());
    QCOMPARE(r->curves.size(), 1);
    QCOMPARE(r->curves[0].name, QStringLiteral("y"));
    QCOMPARE(r->curves[0].x, (Points{0, 5, 5}));  // equal x is allowed
    QCOMPARE(r->curves[0].y, (Points{10, 2.5, 2}));
  }

  void loadsAFile() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("curve.csv"));
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("step,loss\n1,2\n2,1\n");
    f.close();
    auto r = loadReferenceCurves(path);
    QVERIFY2(r.isOk(), r.status().message().c_str());
    QCOMPARE(r->source, path);
    QCOMPARE(r->curves[0].y, (Points{2, 1}));
    auto missing = loadReferenceCurves(dir.filePath(QStringLiteral("nope.csv")));
    QVERIFY(!missing.isOk());
    QVERIFY(QString::fromStdString(missing.status().message())
                .startsWith(dir.filePath(QStringLiteral("nope.csv"))));
  }

  void errors_data() {
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QString>("x");
    QTest::addColumn<QStringList>("y");
    QTest::addColumn<QString>("expected");
    const QStringList none;
    QTest::newRow("empty") << QByteArray("") << QString() << none
                           << QStringLiteral(
                                  "ref.csv: the file is empty; expected a header row (e.g. step,loss) and "
                                  "rows of numbers, or x,y pairs");
    QTest::newRow("blank") << QByteArray("\n  \r\n") << QString() << none
                           << QStringLiteral("ref.csv: the file is empty");
    QTest::newRow("header only") << QByteArray("step,loss\n") << QString() << none
                                 << QStringLiteral("ref.csv: no data rows after the header on line 1");
    QTest::newRow("bad number") << QByteArray("step,loss\n1,2\n2,abc\n") << QString() << none
                                << QStringLiteral("ref.csv line 3, column 2 ('loss'): 'abc' is not a number");
    QTest::newRow("bad x") << QByteArray("step,loss\n1,2\n2x,1\n") << QString() << none
                           << QStringLiteral(
                                  "ref.csv line 3, column 1 ('step'): x must be a finite number, got '2x'");
    QTest::newRow("empty x") << QByteArray("step,loss\n,2\n") << QString() << none
                             << QStringLiteral(
                                    "ref.csv line 2, column 1 ('step'): x must be a finite number, got ''");
    QTest::newRow("infinite x") << QByteArray("0,1\ninf,2\n") << QString() << none
                                << QStringLiteral(
                                       "ref.csv line 2, column 1: x must be a finite number, got 'inf'");
    QTest::newRow("headerless typo") << QByteArray("1,2\n3,4o\n") << QString() << none
                                     << QStringLiteral("ref.csv line 2, column 2: '4o' is not a number");
    QTest::newRow("non-monotonic") << QByteArray("step,loss\n100,2\n200,1.5\n150,1\n") << QString() << none
                                   << QStringLiteral(
                                          "ref.csv line 4, column 1 ('step'): x goes back from 200 to 150; "
                                          "the x column must not decrease");
    QTest::newRow("short row") << QByteArray("step,loss,val\n1,2,3\n2,1\n") << QString() << none
                               << QStringLiteral("ref.csv line 3: 2 fields, expected 3 (as in the header)");
    QTest::newRow("headerless three") << QByteArray("1,2,3\n") << QString() << none
                                      << QStringLiteral(
                                             "ref.csv line 1: no header row and 3 columns; a file without a "
                                             "header holds exactly two columns, x and y");
    QTest::newRow("unknown x") << QByteArray("step,loss\n1,2\n") << QStringLiteral("samples") << none
                               << QStringLiteral(
                                      "ref.csv: no column 'samples' in the header (columns: step, loss)");
    QTest::newRow("unknown y") << QByteArray("step,loss\n1,2\n") << QString() << QStringList{"val"}
                               << QStringLiteral(
                                      "ref.csv: no column 'val' in the header (columns: step, loss)");
    QTest::newRow("y is x") << QByteArray("step,loss\n1,2\n") << QString() << QStringList{"step"}
                            << QStringLiteral(
                                   "ref.csv: column 'step' is the x column; it cannot also be a curve");
    QTest::newRow("names without header") << QByteArray("1,2\n") << QStringLiteral("step") << none
                                          << QStringLiteral(
                                                 "ref.csv: the file has no header row, so its columns "
                                                 "cannot be chosen by name");
    QTest::newRow("duplicate name")
        << QByteArray("step,loss,loss\n1,2,3\n") << QString() << none
        << QStringLiteral("ref.csv line 1: column name 'loss' appears twice (columns 2 and 3)");
    QTest::newRow("unnamed column") << QByteArray("step,,loss\n1,2,3\n") << QString() << none
                                    << QStringLiteral("ref.csv line 1: column 2 of the header has no name");
    QTest::newRow("only x") << QByteArray("step\n1\n") << QString() << none
                            << QStringLiteral(
                                   "ref.csv: the header names only the x column 'step'; there is no curve");
    QTest::newRow("empty curve") << QByteArray("step,loss,val\n1,2,\n2,1,\n") << QString() << none
                                 << QStringLiteral("ref.csv: column 'val' has no values");
    QTest::newRow("open quote") << QByteArray("step,loss\n1,\"2\n") << QString() << none
                                << QStringLiteral("ref.csv line 2: a double quote is not closed");
  }

  void errors() {
    QFETCH(QByteArray, text);
    QFETCH(QString, x);
    QFETCH(QStringList, y);
    QFETCH(QString, expected);
    ReferenceCurveOptions options;
    options.xColumn = x;
    options.yColumns = y;
    const QString message = errorOf(text, options);
    QVERIFY2(message.startsWith(expected), qPrintable(message));
  }
};

}  // namespace fs::app

QTEST_GUILESS_MAIN(fs::app::ReferenceCurveTest)
#include "reference_curve_test.moc"
