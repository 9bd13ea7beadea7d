// The fast decoder against the protocol decoder (NOTE [Fast decode path]): on
// thousands of encoded step and memory events with odd values, and on hand-written
// lines the protocol decoder reads, rejects or skips, the fast path either declines or
// produces bit-for-bit what protocol::decodeEventLine produces.
#include "app/monitor/fast_event_decoder.h"

#include <QtTest>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <sstream>

#include "backend/protocol/wire/event_codec.h"
#include "tests/fixtures/step_event_text.h"

namespace fs::app {
namespace {

namespace proto = fs::protocol;

// Steps as text, doubles by their bits.
const auto canonical = fs::testing::stepEventText;

// What the protocol decoder makes of `line` (no '\n').
std::optional<proto::DecodedLine> reference(const std::string& line) {
  return proto::decodeEventLine(line, 1, 0);
}

double oddDouble(std::mt19937_64& rng) {
  static const double kOdd[] = {std::numeric_limits<double>::quiet_NaN(),
                                std::numeric_limits<double>::infinity(),
                                -std::numeric_limits<double>::infinity(),
                                0.0,
                                -0.0,
                                5e-324,
                                2.2250738585072014e-308,
                                1.7976931348623157e308,
                                -1.5,
                                3.0,
                                1e21,
                                0.1,
                                2.8125};
  switch (rng() % 4) {
    case 0:
      return kOdd[rng() % std::size(kOdd)];
    case 1: {  // any finite bit pattern
      double d = 0;
      do d = std::bit_cast<double>(rng());
      while (!std::isfinite(d));
      return d;
    }
    case 2:
      return static_cast<double>(static_cast<std::int64_t>(rng() % 2000001) - 1000000);
    default:
      return std::uniform_real_distribution<double>(0, 10)(rng);
  }
}

// A step event with random optional fields; `plain`: only names and strings that need
// no escaping, so the fast path must take every one of them.
proto::StepEvent randomStep(std::mt19937_64& rng, bool plain) {
  static const char* kPlainNames[] = {"laion",   "mmc4", "cc3m", "a", "dataset_with_a_long_name_42",
                                      "Ünïcødé", "数据"};
  static const char* kOddNames[] = {"quote\"d", "back\\slash", "tab\there", "nl\nname", "\x01ctl", ""};
  const int n_datasets = 1 + static_cast<int>(rng() % (rng() % 8 == 0 ? 40 : 3));
  std::vector<std::string> names;
  for (int i = 0; i < n_datasets; ++i) {
    std::string base = (!plain && rng() % 5 == 0) ? kOddNames[rng() % std::size(kOddNames)]
                                                  : kPlainNames[rng() % std::size(kPlainNames)];
    names.push_back(base + (i > 0 ? "_" + std::to_string(i) : ""));
  }
  proto::StepEvent s;
  s.step = static_cast<std::int64_t>(rng() % 4) == 0 ? static_cast<std::int64_t>(rng() >> 2)
                                                     : static_cast<std::int64_t>(rng() % 100000);
  s.epoch = static_cast<int>(rng() % 7);
  const bool with_samples = rng() % 3 != 0;
  const bool with_rank_loss = rng() % 2 == 0;
  const int ranks = 1 + static_cast<int>(rng() % 8);
  for (const auto& n : names) {
    if (with_samples) {
      s.samples[n] = static_cast<std::int64_t>(rng() % (1ull << 50));
      s.tokens[n] = static_cast<std::int64_t>(rng() % (1ull << 60));
    }
    s.loss[n] = oddDouble(rng);
    if (with_rank_loss)
      for (int r = 0; r < ranks; ++r) s.rank_loss[n].push_back(oddDouble(rng));
    if (rng() % 2 == 0) s.samples_per_s[n] = oddDouble(rng);
  }
  s.lr = oddDouble(rng);
  if (rng() % 3 != 0) s.grad_norm = oddDouble(rng);
  s.step_time_s = oddDouble(rng);
  if (rng() % 2 == 0) s.data_time_s = oddDouble(rng);
  const int gates = static_cast<int>(rng() % 9);
  for (int g = 0; g < gates; ++g)
    s.gates.push_back({rng() % 10 == 0 ? -g : g * 4, oddDouble(rng), oddDouble(rng)});
  if (rng() % 10 == 0) {
    s.skipped = true;
    s.skip_reason = plain ? "non-finite gradients" : "odd \"reason\"\twith escapes";
  }
  return s;
}

}  // namespace

class FastEventDecoderTest : public QObject {
  Q_OBJECT

  // Decodes `line` both ways; fails the test when the fast path disagrees. Returns
  // whether the fast path took it.
  bool agree(const std::string& line) {
    StepRecord rec;
    const auto fast = decoder_.decode(line, &rec);
    const auto ref = reference(line);
    const bool ref_step = ref && ref->kind == proto::DecodedLine::Kind::kEvent &&
                          std::holds_alternative<proto::StepEvent>(ref->event.body);
    if (fast == FastEventDecoder::Result::kNotHandled) return false;
    if (!ref_step) {
      QTest::qFail(
          qPrintable(QStringLiteral("fast path took a line the protocol decoder does not read as a step: ") +
                     QString::fromStdString(line)),
          __FILE__, __LINE__);
      return true;
    }
    const std::string got = canonical(toStepEvent(rec));
    const std::string want = canonical(ref->event);
    if (got != want) {
      QTest::qFail(qPrintable(QString::fromStdString("fast != protocol for " + line + "\n fast: " + got +
                                                     "\n want: " + want)),
                   __FILE__, __LINE__);
    }
    return true;
  }

  FastEventDecoder decoder_;

 private slots:
  void agreesOnManyEncodedStepEvents() {
    std::mt19937_64 rng(20240601);
    proto::EventEncoder encoder(0,
                                [&] { return static_cast<std::int64_t>(1717000000000 + (rng() % 100000)); });
    int taken_plain = 0;
    int taken_odd = 0;
    constexpr int kEach = 3000;
    for (int i = 0; i < kEach; ++i) {
      std::string line = encoder.encode(randomStep(rng, true));
      line.pop_back();  // '\n'
      if (agree(line)) ++taken_plain;
      if (QTest::currentTestFailed()) return;
    }
    for (int i = 0; i < kEach; ++i) {
      std::string line = encoder.encode(randomStep(rng, false));
      line.pop_back();
      if (agree(line)) ++taken_odd;
      if (QTest::currentTestFailed()) return;
    }
    // Plain lines are what the engine writes: every one must take the fast path, or
    // opening a run silently falls back to the slow decoder.
    QCOMPARE(taken_plain, kEach);
    QVERIFY(taken_odd > 0);
  }

  void agreesOnHandWrittenLines() {
    const std::string head = R"({"v":"1.0","seq":7,"t":1717000000123,"type":"step","step":3,"epoch":0,)";
    struct Case {
      std::string body;
      bool fast;  // whether the fast path must take it (it must agree either way)
    };
    const Case cases[] = {
        {R"("loss":{"laion":2.5},"lr":0.001,"step_time_s":1.5})", true},
        {R"("loss":{"laion":null},"lr":null,"step_time_s":"NaN","data_time_s":null,"grad_norm":null})", true},
        {R"("loss":{"laion":"INF","mmc4":"-Infinity"},"lr":"+inf","step_time_s":1})", true},
        {R"("loss":{"laion":1},"lr":1,"step_time_s":1,"samples":null,"tokens":null,"gates":null,"rank_loss":null,"samples_per_s":null,"skipped":null,"skip_reason":null})",
         true},
        {R"("loss":{"laion":1},"lr":1,"step_time_s":1,"future_field":12,"another":"x","flag":true,"nothing":null})",
         true},
        {R"("loss":{"laion":1},"lr":1,"step_time_s":1,"gates":[{"layer":3,"attn":0.5,"ff":-0.25,"extra":1}]})",
         true},
        {R"("loss":{"laion":1},"lr":1,"step_time_s":1,"rank_loss":{"laion":[1,null,"nan",2.5]}})", true},
        {R"("loss":{"laion":1},"lr":18446744073709551615,"step_time_s":-9223372036854775808})", true},
        // declined: the protocol decoder decides
        {R"("loss":{"laion":-0},"lr":-0,"step_time_s":-0.0,"data_time_s":-1e-400})", true},
        {R"("loss":{"laion":1},"lr":-0E0,"step_time_s":-0 })", true},
        {R"("loss":{"laion":1},"lr":1,"step_time_s":1,"data_time_s":1e-400})", true},
        {R"("loss":{"laion":1},"lr":123456789012345678901234567890,"step_time_s":1})", true},
        {R"("loss":{"laion":1},"lr":1,"step_time_s":1,"nested":{"a":[1,2]}})", false},
        {R"("loss":{"laion":1,"laion":2},"lr":1,"step_time_s":1})", false},
        {R"("loss":{"laion":1},"lr":1,"step_time_s":1,"lr":2})", false},
        {R"("loss":{"la\u0069on":1},"lr":1,"step_time_s":1})", false},
        {R"("loss":{"laion":1},"lr":1e400,"step_time_s":1})", false},
        {R"("loss":{"laion":1},"lr":1,"step_time_s":1,"samples":{"laion":3.0}})", false},
        // errors and other types: the fast path must never take them
        {R"("lr":1,"step_time_s":1})", false},
        {R"("loss":{"laion":"abc"},"lr":1,"step_time_s":1})", false},
        {R"("loss":{"laion":1},"lr":1,"step_time_s":1,"samples":{"laion":-1.5}})", false},
        {R"("loss":{"laion":1},"lr":1,"step_time_s":1,"x":tru})", false},
        {R"("loss":{"laion":1},"lr":1,"step_time_s":1,"gates":[{"layer":1,"attn":0.5}]})", false},
        {R"("loss":{"laion":1},"lr":1,"step_time_s":1,"skipped":"yes"})", false},
        {R"("loss":{"laion":1},"lr":1,"step_time_s":1} trailing)", false},
        {R"("loss":{"laion":1},"lr":1,"step_time_s":1,})", false},
    };
    for (const Case& c : cases) {
      const std::string line = head + c.body;
      const bool taken = agree(line);
      if (QTest::currentTestFailed()) return;
      QVERIFY2(taken == c.fast, line.c_str());
    }
    // Whole-line variations around a good line.
    const std::string good = head + R"("loss":{"laion":1},"lr":1,"step_time_s":1})";
    const std::string variants[] = {
        R"({"v":"2.0","seq":7,"t":1,"type":"step","step":3,"epoch":0,"loss":{"laion":1},"lr":1,"step_time_s":1})",
        R"({"v":"1.9","seq":7,"t":1,"type":"step","step":3,"epoch":0,"loss":{"laion":1},"lr":1,"step_time_s":1})",
        R"({"v":"1.0","seq":-7,"t":1,"type":"step","step":3,"epoch":0,"loss":{"laion":1},"lr":1,"step_time_s":1})",
        R"({"v":"1.0","seq":7,"t":1,"type":"validation","step":3,"loss":{"laion":1}})",
        R"({"v":"1.0","seq":7,"t":1,"type":"brand_new","step":3})",
        good + "\r",
        "\xEF\xBB\xBF" + good,
        good.substr(0, good.size() - 1),
        "[" + good + "]",
        "",
        "   ",
    };
    for (const std::string& line : variants) {
      agree(line);
      if (QTest::currentTestFailed()) return;
    }
    QVERIFY(agree(
        R"({"v":"1.9","seq":7,"t":1,"type":"step","step":3,"epoch":0,"loss":{"laion":1},"lr":1,"step_time_s":1})"));
  }

  void agreesOnEncodedMemoryEvents() {
    std::mt19937_64 rng(99);
    proto::EventEncoder encoder(0, [] { return std::int64_t{1717000000000}; });
    auto big = [&] {
      return static_cast<std::int64_t>(rng() >> (1 + rng() % 40)) * (rng() % 5 == 0 ? -1 : 1);
    };
    for (int i = 0; i < 2000; ++i) {
      proto::MemoryEvent m;
      m.step = big();
      const int ranks = static_cast<int>(rng() % 65);
      for (int r = 0; r < ranks; ++r) {
        proto::RankMemory rm{r, big(), big(), big(), big(), big(), big(), big(), std::nullopt, std::nullopt};
        if (rng() % 2 == 0) rm.device_bytes = big();
        if (rng() % 2 == 0) rm.device_peak = big();
        if (rng() % 2 == 0) rm.gathered_units = static_cast<int>(rng() % 1000);
        if (rng() % 2 == 0) rm.step_peak = big();
        if (rng() % 2 == 0) rm.device = "cuda:" + std::to_string(rng() % 8);
        if (rng() % 2 == 0) rm.device_reserved = big();
        if (rng() % 2 == 0) rm.device_reserved_peak = big();
        for (int p = static_cast<int>(rng() % 3); p > 0; --p)
          rm.device_phases["phase" + std::to_string(p)] = {big(), big()};
        for (int u = static_cast<int>(rng() % 4); u > 0; --u) {
          rm.gathered_at_peak.push_back(static_cast<int>(rng() % 100));
        }
        m.ranks.push_back(rm);
      }
      std::string line = encoder.encode(m);
      line.pop_back();
      StepRecord rec;
      proto::Event fast;
      QCOMPARE(decoder_.decode(line, &rec, &fast), FastEventDecoder::Result::kMemory);
      const auto ref = reference(line);
      QVERIFY(ref && ref->kind == proto::DecodedLine::Kind::kEvent);
      QVERIFY2(fast == ref->event, line.c_str());
      // Without somewhere to put it, a memory line is declined.
      QCOMPARE(decoder_.decode(line, &rec), FastEventDecoder::Result::kNotHandled);
    }
  }

  void agreesOnHandWrittenMemoryLines() {
    const std::string head = R"({"v":"1.0","seq":4,"t":1717000000123,"type":"memory","step":3,"ranks":[)";
    const std::string rank0 =
        R"("rank":0,"rss_bytes":1,"peak_bytes":2,"params":3,"grads":4,"optimizer":5,"gathered":6,"activations":7)";
    struct Case {
      std::string ranks;
      bool fast;
    };
    const Case cases[] = {
        {"{" + rank0 + "}]}", true},
        {"{" + rank0 + R"(,"device_bytes":null,"device_peak":9}]})", true},
        {"{" + rank0 + R"(,"future":1}],"also_new":"x"})", true},
        {"]}", true},
        {"{" + rank0 + R"(,"device_bytes":1.0}]})", false},
        {R"({"rank":0,"rss_bytes":1}]})", false},
        {R"({"rank":3000000000,"rss_bytes":1,"peak_bytes":2,"params":3,"grads":4,"optimizer":5,"gathered":6,"activations":7}]})",
         false},
        {"{" + rank0 + R"(,"grads":4}]})", false},
        {"{" + rank0 + R"(}],"ranks":[]})", false},
        {"{" + rank0 + R"(,"nested":[1]}]})", false},
        {"{" + rank0 + R"(,"gathered_units":2,"gathered_at_peak":[3,4]}]})", true},
        {"{" + rank0 + R"(,"gathered_at_peak":[]}]})", true},
        {"{" + rank0 + R"(,"step_peak":123456789012}]})", true},
        {"{" + rank0 + R"(,"step_peak":null}]})", true},
        {"{" + rank0 + R"(,"step_peak":"x"}]})", false},
        {"{" + rank0 + R"(,"gathered_at_peak":null}]})", true},
        {"{" + rank0 + R"(,"gathered_at_peak":[1.0]}]})", false},
        {"{" + rank0 + R"(,"gathered_at_peak":[3000000000]}]})", false},
        {"{" + rank0 + R"(,"gathered_at_peak":3}]})", false},
        {"null]}", false},
        {"{" + rank0 + R"(,"device":"cuda:0","device_reserved":8,"device_reserved_peak":9}]})", true},
        {"{" + rank0 + R"(,"device":null,"device_phases":null}]})", true},
        {"{" + rank0 + R"(,"device":1}]})", false},
        {"{" + rank0 + R"(,"device_phases":{"gradients":{"allocated_peak":1,"reserved_peak":2,"new":0}}}]})",
         true},
        {"{" + rank0 + R"(,"device_phases":{"gradients":{"allocated_peak":1}}}]})", false},
        {"{" + rank0 +
             R"(,"device_phases":{"a":{"allocated_peak":1,"reserved_peak":2},"a":{"allocated_peak":1,"reserved_peak":2}}}]})",
         false},
        {"{" + rank0 + R"(,"device_phases":[]}]})", false},
    };
    for (const Case& c : cases) {
      const std::string line = head + c.ranks;
      StepRecord rec;
      proto::Event fast;
      const auto result = decoder_.decode(line, &rec, &fast);
      QVERIFY2((result == FastEventDecoder::Result::kMemory) == c.fast, line.c_str());
      if (result != FastEventDecoder::Result::kMemory) continue;
      const auto ref = reference(line);
      QVERIFY2(ref && ref->kind == proto::DecodedLine::Kind::kEvent && fast == ref->event, line.c_str());
    }
    StepRecord rec;
    proto::Event fast;
    QCOMPARE(decoder_.decode(R"({"v":"1.0","seq":4,"t":1,"type":"memory","step":3})", &rec, &fast),
             FastEventDecoder::Result::kNotHandled);  // 'ranks' is required
  }

  void recordRoundTripsThroughStepEvent() {
    std::mt19937_64 rng(7);
    for (int i = 0; i < 200; ++i) {
      proto::Event e{static_cast<std::uint64_t>(i), 1717000000000 + i, randomStep(rng, false)};
      StepRecord r;
      fromStepEvent(e, &r);
      QCOMPARE(canonical(toStepEvent(r)), canonical(e));
    }
  }
};

}  // namespace fs::app

QTEST_GUILESS_MAIN(fs::app::FastEventDecoderTest)
#include "fast_event_decoder_test.moc"
