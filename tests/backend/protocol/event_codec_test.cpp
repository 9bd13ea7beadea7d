#include "backend/protocol/wire/event_codec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <string>

#include "tests/backend/protocol/sample_events.h"

namespace fs::protocol {
namespace {

using Kind = DecodedLine::Kind;

std::vector<DecodedLine> decodeAll(std::string_view bytes, EventDecoderOptions options = {}) {
  EventDecoder decoder(std::move(options));
  return decoder.feed(bytes);
}

DecodedLine decodeOne(std::string_view line) {
  auto records = decodeAll(std::string(line) + "\n");
  EXPECT_EQ(records.size(), 1u) << line;
  return records.empty() ? DecodedLine{} : records[0];
}

std::string stepLine(std::uint64_t seq, const std::string& extra = "", const std::string& v = "1.0") {
  return R"({"v":")" + v + R"(","seq":)" + std::to_string(seq) +
         R"(,"t":1700000000000,"type":"step","step":)" + std::to_string(seq + 1) +
         R"(,"epoch":0,"loss":{"laion":2.5},"lr":0.0001,"step_time_s":1.5)" + extra + "}";
}

TEST(EventCodecTest, RoundTripsEveryTypeFullAndMinimal) {
  std::set<std::string_view> seen;
  for (const auto& samples : {testing::fullSampleBodies(), testing::minimalSampleBodies()}) {
    EventEncoder encoder(0, [] { return std::int64_t{1717000000123}; });
    for (const auto& body : samples) {
      Event expected = encoder.stamp(body);
      std::string line = encodeEventLine(expected);
      ASSERT_EQ(line.back(), '\n');
      ASSERT_EQ(line.find('\n'), line.size() - 1) << "one line per event";
      DecodedLine got = decodeOne(line.substr(0, line.size() - 1));
      ASSERT_EQ(got.kind, Kind::kEvent) << got.error.message() << "\n" << line;
      EXPECT_EQ(got.event, expected) << line;
      EXPECT_EQ(got.type, eventType(body));
      EXPECT_EQ(got.version, (SchemaVersion{kEventSchemaMajor, kEventSchemaMinor}));
      seen.insert(eventType(body));
    }
  }
  EXPECT_EQ(seen.size(), knownEventTypes().size()) << "a sample for every type";
}

TEST(EventCodecTest, LineStartsWithHeaderInOrder) {
  EventEncoder encoder(40, [] { return std::int64_t{1717000000123}; });
  std::string line = encoder.encode(StateEvent{RunState::kRunning, ""});
  EXPECT_EQ(line, R"({"v":"1.5","seq":40,"t":1717000000123,"type":"state","state":"running"})"
                  "\n");
  EXPECT_EQ(encoder.nextSeq(), 41u);
  line = encoder.encode(LayoutEvent{}, 5);
  EXPECT_EQ(line, R"({"v":"1.5","seq":41,"t":5,"type":"layout","units":[]})"
                  "\n");
}

TEST(EventCodecTest, EncoderSeqIsGapFreeAndClockStamped) {
  std::int64_t now = 100;
  EventEncoder encoder(0, [&] { return now++; });
  EventDecoder decoder;
  std::string all;
  for (int i = 0; i < 50; ++i) all += encoder.encode(HeartbeatEvent{i, RunState::kRunning, {}});
  auto records = decoder.feed(all);
  ASSERT_EQ(records.size(), 50u);
  std::vector<std::uint64_t> seqs;
  for (std::size_t i = 0; i < records.size(); ++i) {
    ASSERT_EQ(records[i].kind, Kind::kEvent);
    EXPECT_EQ(records[i].event.t, static_cast<std::int64_t>(100 + i));
    seqs.push_back(records[i].event.seq);
  }
  EXPECT_TRUE(checkSeqs(seqs).ok());
  EXPECT_EQ(decoder.resumeOffset(), all.size());
}

TEST(EventCodecTest, NonFiniteDoublesSurvive) {
  StepEvent step;
  step.loss = {{"a", std::numeric_limits<double>::infinity()},
               {"b", -std::numeric_limits<double>::infinity()},
               {"c", std::numeric_limits<double>::quiet_NaN()}};
  std::string line = encodeEventLine(Event{0, 0, step});
  EXPECT_NE(line.find(R"("a":"inf")"), std::string::npos) << line;
  EXPECT_NE(line.find(R"("c":"nan")"), std::string::npos) << line;
  DecodedLine got = decodeOne(line.substr(0, line.size() - 1));
  ASSERT_EQ(got.kind, Kind::kEvent) << got.error.message();
  const auto& loss = std::get<StepEvent>(got.event.body).loss;
  EXPECT_EQ(loss.at("a"), std::numeric_limits<double>::infinity());
  EXPECT_EQ(loss.at("b"), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(loss.at("c")));
  // Writers that turn NaN into null (Python, nlohmann) are read as NaN too.
  got = decodeOne(
      stepLine(0, R"(,"grad_norm":null,"data_time_s":"NaN")").replace(stepLine(0).find("2.5"), 3, "null"));
  ASSERT_EQ(got.kind, Kind::kEvent) << got.error.message();
  const auto& s = std::get<StepEvent>(got.event.body);
  EXPECT_TRUE(std::isnan(s.loss.at("laion")));
  EXPECT_FALSE(s.grad_norm.has_value()) << "null means absent for optional fields";
  EXPECT_TRUE(std::isnan(s.data_time_s));
}

TEST(EventCodecTest, UnknownTypeIsSkippedNotAnError) {
  DecodedLine got = decodeOne(R"({"v":"1.0","seq":9,"t":1,"type":"gpu_temperature","celsius":71})");
  EXPECT_EQ(got.kind, Kind::kSkipped);
  EXPECT_EQ(got.type, "gpu_temperature");
  ASSERT_TRUE(got.seq.has_value());
  EXPECT_EQ(*got.seq, 9u);
  EXPECT_TRUE(got.error.isOk());
}

TEST(EventCodecTest, UnknownFieldsAreIgnoredAtEveryLevel) {
  DecodedLine got =
      decodeOne(stepLine(3, R"(,"future":{"x":[1,2]},"gates":[{"layer":1,"attn":0.5,"ff":0.25,"bias":1}])"));
  ASSERT_EQ(got.kind, Kind::kEvent) << got.error.message();
  const auto& s = std::get<StepEvent>(got.event.body);
  ASSERT_EQ(s.gates.size(), 1u);
  EXPECT_EQ(s.gates[0], (GateValue{1, 0.5, 0.25}));
}

TEST(EventCodecTest, NewerMinorVersionDecodes) {
  DecodedLine got = decodeOne(stepLine(4, R"(,"new_in_1_7":true)", "1.7"));
  ASSERT_EQ(got.kind, Kind::kEvent) << got.error.message();
  EXPECT_EQ(got.version, (SchemaVersion{1, 7}));
  EXPECT_EQ(got.event.seq, 4u);
}

TEST(EventCodecTest, NewerMajorVersionIsRejectedWithClearMessage) {
  std::string bytes =
      stepLine(0) + "\n" + stepLine(1) + "\n" + stepLine(2, "", "2.0") + "\n" + stepLine(3) + "\n";
  auto records = decodeAll(bytes);
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(records[2].kind, Kind::kError);
  EXPECT_EQ(
      records[2].error.message(),
      "events.jsonl line 3: schema version 2.0 is newer than this reader (1.x); update Flamingo Studio");
  EXPECT_EQ(records[3].kind, Kind::kEvent) << "decoding continues";
  DecodedLine old = decodeOne(stepLine(0, "", "0.9"));
  EXPECT_EQ(old.kind, Kind::kError);
  EXPECT_NE(old.error.message().find("0.9 is older"), std::string::npos) << old.error.message();
  DecodedLine bad = decodeOne(stepLine(0, "", "one"));
  EXPECT_NE(bad.error.message().find("'one' is not of the form MAJOR.MINOR"), std::string::npos);
}

TEST(EventCodecTest, PartialLastLineWaitsForItsNewline) {
  std::string line = stepLine(0);
  EventDecoder decoder;
  EXPECT_TRUE(decoder.feed(line).empty());
  EXPECT_TRUE(decoder.hasPartialLine());
  EXPECT_EQ(decoder.resumeOffset(), 0u);
  auto records = decoder.feed("\n");
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].kind, Kind::kEvent);
  EXPECT_EQ(records[0].end_offset, line.size() + 1);
  EXPECT_EQ(decoder.resumeOffset(), line.size() + 1);
  EXPECT_FALSE(decoder.hasPartialLine());
}

TEST(EventCodecTest, ByteByByteEqualsWholeBuffer) {
  EventEncoder encoder(0, [] { return std::int64_t{7}; });
  std::string all;
  for (const auto& body : testing::fullSampleBodies()) all += encoder.encode(body);
  all += "not json\n" + stepLine(99).substr(0, 20);  // an error and a partial tail
  auto whole = decodeAll(all);
  EventDecoder decoder;
  std::vector<DecodedLine> pieces;
  std::vector<std::uint64_t> resume;
  for (char c : all) {
    for (auto& r : decoder.feed(std::string_view(&c, 1))) {
      pieces.push_back(std::move(r));
      resume.push_back(decoder.resumeOffset());
    }
  }
  ASSERT_EQ(pieces.size(), whole.size());
  ASSERT_EQ(pieces.size(), testing::fullSampleBodies().size() + 1);
  for (std::size_t i = 0; i < whole.size(); ++i) {
    EXPECT_EQ(pieces[i].kind, whole[i].kind);
    EXPECT_EQ(pieces[i].event, whole[i].event);
    EXPECT_EQ(pieces[i].offset, whole[i].offset);
    EXPECT_EQ(pieces[i].end_offset, resume[i]) << "resume right after each complete line";
  }
  EXPECT_EQ(decoder.resumeOffset(), all.size() - 20);
  EXPECT_EQ(decoder.bufferedBytes(), 20u);
}

TEST(EventCodecTest, ResumesFromOffsetWithLineNumbers) {
  std::string first = stepLine(0) + "\n", second = stepLine(1) + "\n";
  EventDecoder decoder({"remote:events.jsonl", first.size(), 2, 1u << 20});
  auto records = decoder.feed(second + "oops\n");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].offset, first.size());
  EXPECT_EQ(records[0].line, 2u);
  EXPECT_EQ(
      records[1].error.message().rfind("remote:events.jsonl line 3 (byte offset " +
                                           std::to_string(first.size() + second.size()) + "): malformed JSON",
                                       0),
      0u)
      << records[1].error.message();
}

TEST(EventCodecTest, OneMegabyteLine) {
  LayoutEvent layout;
  for (int i = 0; i < 12000; ++i) {
    layout.units.push_back({"lang_encoder.transformer.blocks." + std::to_string(i) + ".attn",
                            1000 + i,
                            "bfloat16",
                            i % 2 == 0,
                            i,
                            {i, i + 1, i + 2, i + 3},
                            i % 7,
                            i});
  }
  std::string line = encodeEventLine(Event{0, 1, layout});
  ASSERT_GE(line.size(), 1u << 20);
  EventDecoder decoder;
  std::vector<DecodedLine> records;
  for (std::size_t i = 0; i < line.size(); i += 4096) {
    for (auto& r : decoder.feed(std::string_view(line).substr(i, 4096))) records.push_back(std::move(r));
  }
  ASSERT_EQ(records.size(), 1u);
  ASSERT_EQ(records[0].kind, Kind::kEvent) << records[0].error.message();
  EXPECT_EQ(std::get<LayoutEvent>(records[0].event.body), layout);
}

TEST(EventCodecTest, OverlongLineIsReportedAndSkipped) {
  std::string longLine = stepLine(0, R"(,"skip_reason":")" + std::string(5000, 'x') + "\"");
  std::string bytes = longLine + "\n" + stepLine(1) + "\n";
  EventDecoder decoder({"events.jsonl", 0, 1, 1000});
  std::vector<DecodedLine> records;
  for (std::size_t i = 0; i < bytes.size(); i += 333) {
    for (auto& r : decoder.feed(std::string_view(bytes).substr(i, 333))) records.push_back(std::move(r));
  }
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].kind, Kind::kError);
  EXPECT_NE(records[0].error.message().find("line 1 (byte offset 0): line longer than 1000 bytes"),
            std::string::npos)
      << records[0].error.message();
  EXPECT_EQ(records[1].kind, Kind::kEvent);
  EXPECT_EQ(records[1].offset, longLine.size() + 1);
  EXPECT_EQ(decoder.resumeOffset(), bytes.size());
}

TEST(EventCodecTest, MalformedLineReportedAndDecodingContinues) {
  std::string bytes =
      stepLine(0) + "\n{\"v\":\"1.0\",\"seq\":1,\n" + stepLine(2) + "\n[1,2]\n" + stepLine(3) + "\n";
  auto records = decodeAll(bytes);
  ASSERT_EQ(records.size(), 5u);
  EXPECT_EQ(records[1].kind, Kind::kError);
  EXPECT_EQ(records[1].line, 2u);
  std::string expectedPrefix =
      "events.jsonl line 2 (byte offset " + std::to_string(stepLine(0).size() + 1) + "): malformed JSON";
  EXPECT_EQ(records[1].error.message().rfind(expectedPrefix, 0), 0u) << records[1].error.message();
  EXPECT_EQ(records[2].kind, Kind::kEvent);
  EXPECT_NE(records[3].error.message().find("expected a JSON object, found an array"), std::string::npos);
  EXPECT_EQ(records[4].kind, Kind::kEvent);
}

TEST(EventCodecTest, CrlfAndBlankLinesTolerated) {
  std::string bytes = stepLine(0) + "\r\n\r\n   \n\n" + stepLine(1) + "\r\n";
  auto records = decodeAll(bytes);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].kind, Kind::kEvent);
  EXPECT_EQ(records[1].kind, Kind::kEvent);
  EXPECT_EQ(records[1].line, 5u) << "blank lines still count";
  EXPECT_EQ(decodeAll("\xEF\xBB\xBF" + stepLine(0) + "\n").at(0).kind, Kind::kEvent) << "BOM at file start";
}

TEST(EventCodecTest, MissingRequiredFieldIsNamedWithSeq) {
  DecodedLine got =
      decodeOne(R"({"v":"1.0","seq":5,"t":1,"type":"step","step":6,"epoch":0,"lr":0.1,"step_time_s":1})");
  EXPECT_EQ(got.kind, Kind::kError);
  EXPECT_EQ(got.error.message(),
            "events.jsonl line 1 (byte offset 0): seq 5: step event: missing required field 'loss'");
  got = decodeOne(
      R"({"v":"1.0","seq":6,"t":1,"type":"layout","units":[{"path":"a","dtype":"f32","trainable":true,"shard_bytes":[],"gather_order":0}]})");
  EXPECT_NE(got.error.message().find("missing required field 'units[0].param_count'"), std::string::npos)
      << got.error.message();
  got = decodeOne(R"({"v":"1.0","t":1,"type":"step"})");
  EXPECT_NE(got.error.message().find("missing required field 'seq'"), std::string::npos)
      << got.error.message();
  got = decodeOne(R"({"seq":1,"t":1,"type":"step"})");
  EXPECT_NE(got.error.message().find("missing required field 'v'"), std::string::npos) << got.error.message();
}

TEST(EventCodecTest, MistypedFieldNamesFieldAndValue) {
  DecodedLine got = decodeOne(stepLine(2).replace(stepLine(2).find("0.0001"), 6, "\"fast\""));
  EXPECT_NE(got.error.message().find("field 'lr' is \"fast\", expected a number"), std::string::npos)
      << got.error.message();
  got = decodeOne(
      R"({"v":"1.0","seq":1,"t":1,"type":"checkpoint","step":1,"epoch":0,"path":"p","bytes":1,"kind":"hourly","duration_s":1})");
  EXPECT_NE(got.error.message().find("field 'kind' is \"hourly\", expected one of epoch|step|final"),
            std::string::npos)
      << got.error.message();
  got = decodeOne(R"({"v":"1.0","seq":-1,"t":1,"type":"state","state":"running"})");
  EXPECT_NE(got.error.message().find("field 'seq' is -1, expected a non-negative integer"), std::string::npos)
      << got.error.message();
  got = decodeOne(stepLine(2, R"(,"rank_loss":{"laion":[1.0,"x"]})"));
  EXPECT_NE(got.error.message().find("field 'rank_loss.laion[1]' is \"x\""), std::string::npos)
      << got.error.message();
}

TEST(EventCodecTest, IntegralFloatsAcceptedForIntegers) {
  DecodedLine got = decodeOne(R"({"v":"1.0","seq":3.0,"t":1e3,"type":"state","state":"paused"})");
  ASSERT_EQ(got.kind, Kind::kEvent) << got.error.message();
  EXPECT_EQ(got.event.seq, 3u);
  EXPECT_EQ(got.event.t, 1000);
  EXPECT_EQ(decodeOne(R"({"v":"1.0","seq":3.5,"t":1,"type":"state","state":"paused"})").kind, Kind::kError);
}

TEST(EventCodecTest, SchemaVersionParsing) {
  EXPECT_EQ(parseSchemaVersion("1.0").value(), (SchemaVersion{1, 0}));
  EXPECT_EQ(parseSchemaVersion("1.12").value(), (SchemaVersion{1, 12}));
  for (const char* bad : {"", "1", "1.", ".1", "1.0.0", "a.b", "-1.0", "1.x", "99999999.0"}) {
    EXPECT_FALSE(parseSchemaVersion(bad).isOk()) << bad;
  }
}

TEST(EventCodecTest, GapDetection) {
  std::vector<std::uint64_t> seqs = {0, 1, 2, 5, 6, 3, 3, 9};
  SeqReport r = checkSeqs(seqs);
  EXPECT_EQ(r.gaps, (std::vector<SeqGap>{{4, 4}, {7, 8}}));
  EXPECT_EQ(r.duplicates, (std::vector<std::uint64_t>{3}));
  EXPECT_EQ(r.late, (std::vector<std::uint64_t>{3}));
  EXPECT_EQ(r.summary(), "missing 4, 7..8; duplicate 3; late 3");
  EXPECT_TRUE(checkSeqs(std::vector<std::uint64_t>{0, 1, 2, 3}).ok());
  EXPECT_EQ(checkSeqs(std::vector<std::uint64_t>{5, 6}, 5).summary(), "ok");
  EXPECT_EQ(checkSeqs(std::vector<std::uint64_t>{1, 2}).summary(), "missing 0");
  SeqTracker t(10);
  t.observe(10);
  t.observe(14);
  t.observe(12);  // splits 11..13
  EXPECT_EQ(t.report().gaps, (std::vector<SeqGap>{{11, 11}, {13, 13}}));
  EXPECT_EQ(t.expected(), 15u);
}

// 1.2 added memory.ranks[].gathered_at_peak; a 1.1 line (no such field) reads as an empty set.
TEST(EventCodecTest, GatheredAtPeakIsOptionalSince1_2) {
  const std::string rank =
      R"({"rank":1,"rss_bytes":1,"peak_bytes":2,"params":3,"grads":4,"optimizer":5,"gathered":6,"activations":7,)"
      R"("gathered_units":2)";
  DecodedLine got =
      decodeOne(R"({"v":"1.1","seq":0,"t":1,"type":"memory","step":4,"ranks":[)" + rank + "}]}");
  ASSERT_EQ(got.kind, Kind::kEvent) << got.error.message();
  EXPECT_TRUE(std::get<MemoryEvent>(got.event.body).ranks.at(0).gathered_at_peak.empty());
  got = decodeOne(R"({"v":"1.2","seq":1,"t":1,"type":"memory","step":4,"ranks":[)" + rank +
                  R"(,"gathered_at_peak":[3,4]}]})");
  ASSERT_EQ(got.kind, Kind::kEvent) << got.error.message();
  EXPECT_EQ(std::get<MemoryEvent>(got.event.body).ranks.at(0).gathered_at_peak, (std::vector<int>{3, 4}));
  got = decodeOne(R"({"v":"1.2","seq":2,"t":1,"type":"memory","step":4,"ranks":[)" + rank +
                  R"(,"gathered_at_peak":[3,"x"]}]})");
  EXPECT_EQ(got.kind, Kind::kError);
  EXPECT_NE(got.error.message().find("gathered_at_peak"), std::string::npos) << got.error.message();
}

// 1.3 added memory.ranks[].step_peak; a 1.2 line (no such field) reads as absent, and a 1.2 reader skips it.
TEST(EventCodecTest, StepPeakIsOptionalSince1_3) {
  const std::string rank =
      R"({"rank":0,"rss_bytes":1,"peak_bytes":2,"params":3,"grads":4,"optimizer":5,"gathered":6,"activations":7)";
  DecodedLine got =
      decodeOne(R"({"v":"1.2","seq":0,"t":1,"type":"memory","step":4,"ranks":[)" + rank + "}]}");
  ASSERT_EQ(got.kind, Kind::kEvent) << got.error.message();
  EXPECT_FALSE(std::get<MemoryEvent>(got.event.body).ranks.at(0).step_peak);
  got = decodeOne(R"({"v":"1.3","seq":1,"t":1,"type":"memory","step":4,"ranks":[)" + rank +
                  R"(,"step_peak":123456789012}]})");
  ASSERT_EQ(got.kind, Kind::kEvent) << got.error.message();
  EXPECT_EQ(std::get<MemoryEvent>(got.event.body).ranks.at(0).step_peak, std::int64_t{123456789012});
  // Written only when present.
  MemoryEvent without;
  without.step = 4;
  without.ranks.push_back({});
  EXPECT_EQ(encodeEventLine(Event{0, 1, without}).find("step_peak"), std::string::npos);
  got = decodeOne(R"({"v":"1.3","seq":2,"t":1,"type":"memory","step":4,"ranks":[)" + rank +
                  R"(,"step_peak":"big"}]})");
  EXPECT_EQ(got.kind, Kind::kError);
  EXPECT_NE(got.error.message().find("step_peak"), std::string::npos) << got.error.message();
}

// 1.4 added memory.ranks[].device, device_reserved, device_reserved_peak and device_phases (absent on
// CPU). A 1.3 line (none of them) reads as absent; a line with them round-trips; an event without them
// writes none of their keys.
TEST(EventCodecTest, DeviceMemoryFieldsAreOptionalSince1_4) {
  const std::string rank =
      R"({"rank":0,"rss_bytes":1,"peak_bytes":2,"params":3,"grads":4,"optimizer":5,"gathered":6,"activations":7)";
  DecodedLine got = decodeOne(R"({"v":"1.3","seq":0,"t":1,"type":"memory","step":4,"ranks":[)" + rank +
                              R"(,"device_bytes":10,"device_peak":11}]})");
  ASSERT_EQ(got.kind, Kind::kEvent) << got.error.message();
  const RankMemory old = std::get<MemoryEvent>(got.event.body).ranks.at(0);
  EXPECT_EQ(old.device, "");
  EXPECT_FALSE(old.device_reserved);
  EXPECT_FALSE(old.device_reserved_peak);
  EXPECT_TRUE(old.device_phases.empty());
  EXPECT_EQ(old.device_bytes, std::int64_t{10});

  got = decodeOne(R"({"v":"1.4","seq":1,"t":1,"type":"memory","step":4,"ranks":[)" + rank +
                  R"(,"device":"cuda:1","device_bytes":10,"device_peak":11,"device_reserved":20971520,)"
                  R"("device_reserved_peak":41943040,"device_phases":{"activations":{"allocated_peak":9,)"
                  R"("reserved_peak":20971520},"optimizer":{"allocated_peak":3,"reserved_peak":4}}}]})");
  ASSERT_EQ(got.kind, Kind::kEvent) << got.error.message();
  const RankMemory cuda = std::get<MemoryEvent>(got.event.body).ranks.at(0);
  EXPECT_EQ(cuda.device, "cuda:1");
  EXPECT_EQ(cuda.device_reserved, std::int64_t{20971520});
  EXPECT_EQ(cuda.device_reserved_peak, std::int64_t{41943040});
  ASSERT_EQ(cuda.device_phases.size(), 2u);
  EXPECT_EQ(cuda.device_phases.at("activations"), (DevicePhaseMemory{9, 20971520}));
  EXPECT_EQ(cuda.device_phases.at("optimizer"), (DevicePhaseMemory{3, 4}));
  // Round trip, with and without the device fields.
  MemoryEvent with{4, {cuda}};
  got = decodeOne(encodeEventLine(Event{2, 1, with}));
  ASSERT_EQ(got.kind, Kind::kEvent) << got.error.message();
  EXPECT_EQ(std::get<MemoryEvent>(got.event.body), with);
  MemoryEvent without{4, {old}};
  without.ranks[0].device_bytes.reset();
  without.ranks[0].device_peak.reset();
  const std::string line = encodeEventLine(Event{3, 1, without});
  EXPECT_EQ(line.find("device"), std::string::npos) << line;
  got = decodeOne(line);
  ASSERT_EQ(got.kind, Kind::kEvent) << got.error.message();
  EXPECT_EQ(std::get<MemoryEvent>(got.event.body), without);
  // A phase entry lacking a figure is an error naming it.
  got = decodeOne(R"({"v":"1.4","seq":4,"t":1,"type":"memory","step":4,"ranks":[)" + rank +
                  R"(,"device_phases":{"gradients":{"allocated_peak":1}}}]})");
  EXPECT_EQ(got.kind, Kind::kError);
  EXPECT_NE(got.error.message().find("reserved_peak"), std::string::npos) << got.error.message();
}

// The wire, frozen: tests/assets/telemetry/events-<MAJOR.MINOR>.jsonl holds the sample
// events as this version writes them. Files of older versions stay and must keep
// decoding. Refresh the current one with: FS_UPDATE_GOLDEN=1 build/tests/event_codec_test
TEST(EventCodecTest, GoldenTelemetryFiles) {
  const std::filesystem::path dir = std::filesystem::path(FS_SOURCE_DIR) / "tests/assets/telemetry";
  EventEncoder encoder(0, [] { return std::int64_t{1717000000123}; });
  std::string current;
  for (const auto& body : testing::fullSampleBodies()) current += encoder.encode(body);
  for (const auto& body : testing::minimalSampleBodies()) current += encoder.encode(body);
  const auto golden = dir / ("events-" + std::string(kEventSchemaVersion) + ".jsonl");
  if (std::getenv("FS_UPDATE_GOLDEN") != nullptr) {
    std::filesystem::create_directories(dir);
    std::ofstream(golden, std::ios::binary) << current;
  }
  std::ifstream in(golden, std::ios::binary);
  ASSERT_TRUE(in.good()) << golden << " missing; run with FS_UPDATE_GOLDEN=1";
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), current) << "the wire format changed: bump the schema version (docs/telemetry.md)";

  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".jsonl") continue;
    ++files;
    std::ifstream f(entry.path(), std::ios::binary);
    std::stringstream bytes;
    bytes << f.rdbuf();
    EventDecoder decoder({entry.path().filename().string()});
    std::vector<std::uint64_t> seqs;
    for (const auto& r : decoder.feed(bytes.str())) {
      EXPECT_EQ(r.kind, Kind::kEvent) << r.error.message();
      seqs.push_back(r.event.seq);
    }
    EXPECT_FALSE(seqs.empty());
    EXPECT_TRUE(checkSeqs(seqs).ok()) << entry.path();
    EXPECT_FALSE(decoder.hasPartialLine()) << entry.path();
  }
  EXPECT_GE(files, 1);
}

}  // namespace
}  // namespace fs::protocol
