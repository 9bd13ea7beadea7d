// BacklogDecoder alone, with three helpers on a chunk of several pieces: every
// complete line comes back once, in file order, steps decoded by the fast path,
// other and over-long lines undecoded; the partial last line is not delivered;
// a deliver() that says stop ends the chunk before that line.
#include "app/monitor/backlog_decoder.h"

#include <QtTest>
#include <string>
#include <vector>

#include "app/monitor/fast_event_decoder.h"
#include "monitor_test_util.h"

namespace fs::app {

namespace {

constexpr std::size_t kMaxLine = 4096;

struct Chunk {
  std::string bytes;  // the lines, then padding
  std::size_t size = 0;
  std::vector<std::string> lines;  // complete lines, without '\n'
  std::vector<bool> is_step;
};

// `steps` step lines with a garbage line every 100 and one over-long line,
// then a partial line without '\n'.
Chunk makeChunk(std::uint64_t steps) {
  Chunk c;
  std::uint64_t seq = 0;
  for (std::uint64_t i = 0; i < steps; ++i) {
    std::string l = testing::line(seq++, testing::stepBody(static_cast<std::int64_t>(i)));
    l.pop_back();
    c.lines.push_back(l);
    c.is_step.push_back(true);
    if (i % 100 == 50) {
      c.lines.emplace_back("{not json");
      c.is_step.push_back(false);
    }
    if (i == steps / 2) {
      c.lines.push_back(std::string(kMaxLine + 1, 'x'));
      c.is_step.push_back(false);
    }
  }
  for (const auto& l : c.lines) c.bytes += l + '\n';
  c.bytes += "{\"seq\": 99";  // partial
  c.size = c.bytes.size();
  c.bytes.append(FastEventDecoder::padding(), '\0');
  return c;
}

}  // namespace

class BacklogDecoderTest : public QObject {
  Q_OBJECT

 private slots:
  void deliversEveryCompleteLineInOrder() {
    const Chunk c = makeChunk(8000);
    QVERIFY(c.size > (1u << 20));  // several pieces
    BacklogDecoder decoder(3);
    QVERIFY(decoder.available());
    std::size_t n = 0;
    std::size_t expected_begin = 0;
    bool ok = true;
    const std::size_t pos =
        decoder.decode(c.bytes.data(), c.size, kMaxLine, [&](const BacklogDecoder::Line& line) {
          if (n >= c.lines.size() || line.text != c.lines[n] || line.begin != expected_begin ||
              (line.step != nullptr) != c.is_step[n] || line.memory != nullptr) {
            ok = false;
          }
          expected_begin += line.text.size() + 1;
          ++n;
          return true;
        });
    QVERIFY(ok);
    QCOMPARE(n, c.lines.size());
    QCOMPARE(pos, c.size - std::string("{\"seq\": 99").size());
  }

  void stepsCarryTheirSeqsInOrder() {
    const Chunk c = makeChunk(3000);
    BacklogDecoder decoder(3);
    std::vector<std::uint64_t> seqs;
    decoder.decode(c.bytes.data(), c.size, kMaxLine, [&](const BacklogDecoder::Line& line) {
      if (line.step != nullptr) seqs.push_back(line.step->seq);
      return true;
    });
    QCOMPARE(seqs, testing::iota(0, 2999));
  }

  void stopsBeforeTheLineDeliverRefuses() {
    const Chunk c = makeChunk(8000);
    BacklogDecoder decoder(3);
    const std::size_t stop_at = 5000;
    std::size_t n = 0;
    const std::size_t pos = decoder.decode(c.bytes.data(), c.size, kMaxLine,
                                           [&](const BacklogDecoder::Line&) { return n++ < stop_at; });
    std::size_t end = 0;
    for (std::size_t i = 0; i < stop_at; ++i) end += c.lines[i].size() + 1;
    QCOMPARE(pos, end);
    QCOMPARE(n, stop_at + 1);
  }

  void noHelpersIsNotAvailable() { QVERIFY(!BacklogDecoder(0).available()); }
};

}  // namespace fs::app

QTEST_GUILESS_MAIN(fs::app::BacklogDecoderTest)
#include "backlog_decoder_test.moc"
