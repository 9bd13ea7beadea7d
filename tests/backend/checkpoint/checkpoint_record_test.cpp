// NOTE [Checkpoint records]: every record is written through each encoding
// and read back equal, field for field: the JSON documents, the engine's
// pickled "flamingo_studio" dict (writeCheckpoint) read back by the engine and
// torch-free by the inspector (readResumeRecord, record_pyvalue.h), and a sharded index's
// "resume". The sample sets every field to a value other than its default, so
// an encoding that drops a field fails here. Files written before the records
// were declared once (tests/assets/checkpoint-records, README there) still read
// to what that engine's `checkpoint state --json` said of them.
#include "backend/protocol/wire/checkpoint_record.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backend/checkpoint/checkpoint_io.h"
#include "backend/checkpoint/record_ivalue.h"
#include "backend/inspect/checkpoint_index.h"
#include "backend/inspect/training_state.h"

namespace fs::checkpoint {
namespace {

namespace fsys = std::filesystem;
using protocol::Bytes;
using protocol::ResumeRecord;

ResumeRecord sample() {
  ResumeRecord r;
  r.kind = "step";
  r.step = 17;
  r.iteration = 34;
  r.epoch = 2;
  auto& p = r.dataPosition.value;
  p.source = "shards";
  p.epoch = 2;
  p.rank = 1;
  p.world = 4;
  p.datasets = {"laion", "mmc4"};
  p.batchesConsumed = {5, 6};
  p.batchSizes = {8, 4};
  p.rngState.data = {0x00, 0x7f, 0xff};
  p.cursors = {{"/d/laion-000003.tar", 3, 10, 40, 1, 2}, {"/d/mmc4-000001.tar", 1, 4, 12, 0, 1}};
  r.rngTorchCpu.data = {1, 2, 3, 250};
  r.rngTorchCuda = {Bytes{{9, 8}}, Bytes{{7}}};
  r.rngOwn = {1, 0x8000000000000000ull, 3, 0xffffffffffffffffull};
  auto& m = r.manifest.value;
  m.engineVersion = "0.3.0";
  m.lm = {"mpt", 32, 2, 4, 130, true};
  m.vision = {"ViT-L-14", 64, 2, 14, 56};
  m.crossAttnEveryNLayers = 2;
  m.addedTokens = {{"<image>", 129}, {"<|endofchunk|>", 128}};
  m.parameters = {{"perceiver.latents", {8, 32}, true}, {"vision_encoder.proj", {64, 32}, false}};
  m.tensors =
      std::vector<protocol::ManifestTensor>{{"perceiver.latents", {8, 32}, "Float", "0123456789abcdef"}};
  r.gradScaler = protocol::GradScalerRecord{1024.0, 3.0, 0.25, 100, 7};
  return r;
}

TEST(CheckpointRecord, EverySampleFieldDiffersFromItsDefault) {
  // An encoding that dropped a field would read it back as its default.
  const ResumeRecord s = sample();
  const ResumeRecord d;
  EXPECT_NE(s.kind, d.kind);
  EXPECT_NE(s.step, d.step);
  EXPECT_NE(s.iteration, d.iteration);
  EXPECT_NE(s.epoch, d.epoch);
  EXPECT_NE(s.rngTorchCpu, d.rngTorchCpu);
  EXPECT_NE(s.rngTorchCuda, d.rngTorchCuda);
  EXPECT_NE(s.rngOwn, d.rngOwn);
  EXPECT_NE(s.gradScaler, d.gradScaler);
  const auto& p = s.dataPosition.value;
  const protocol::DataPositionRecord dp;
  EXPECT_TRUE(p.source != dp.source && p.epoch != dp.epoch && p.rank != dp.rank && p.world != dp.world &&
              p.datasets != dp.datasets && p.batchesConsumed != dp.batchesConsumed &&
              p.batchSizes != dp.batchSizes && p.rngState != dp.rngState && p.cursors != dp.cursors);
  for (const auto& c : p.cursors)
    EXPECT_TRUE(c.shardIndex && c.shardCount && c.samplesRead && (c.pass || c.worker) && c.worker);
  const auto& m = s.manifest.value;
  const protocol::CheckpointManifest dm;
  EXPECT_TRUE(m.engineVersion != dm.engineVersion && m.lm != dm.lm && m.vision != dm.vision &&
              m.crossAttnEveryNLayers != dm.crossAttnEveryNLayers && m.addedTokens != dm.addedTokens &&
              m.parameters != dm.parameters && m.tensors != dm.tensors);
  const auto g = *s.gradScaler;
  const protocol::GradScalerRecord dg;
  EXPECT_TRUE(g.scale != dg.scale && g.growthFactor != dg.growthFactor &&
              g.backoffFactor != dg.backoffFactor && g.growthInterval != dg.growthInterval &&
              g.growthTracker != dg.growthTracker);
}

TEST(CheckpointRecord, JsonRoundTrips) {
  auto back = protocol::decodeResumeRecord(protocol::encodeResumeRecord(sample()));
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(*back, sample());
  auto p = protocol::decodeDataPosition(protocol::encodeDataPosition(sample().dataPosition.value));
  ASSERT_TRUE(p.isOk()) << p.status().message();
  EXPECT_EQ(*p, sample().dataPosition.value);
  auto m = protocol::decodeCheckpointManifest(protocol::encodeCheckpointManifest(sample().manifest.value));
  ASSERT_TRUE(m.isOk()) << m.status().message();
  EXPECT_EQ(*m, sample().manifest.value);
}

TEST(CheckpointRecord, IValueRoundTrips) {
  auto back = resumeFromIValue(resumeToIValue(sample()));
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(*back, sample());
}

// Through the engine's writer into a file, then back through the engine's reader
// and through the inspector's torch-free one.
TEST(CheckpointRecord, AFileTheEngineWritesReadsBackEqualTorchFree) {
  const fsys::path dir = fsys::temp_directory_path() / ("fs_record_test_" + std::to_string(::getpid()));
  fsys::create_directories(dir);
  const fsys::path path = dir / "checkpoint_step17.pt";
  auto state = fromResumeRecord(sample());
  ASSERT_TRUE(state.isOk()) << state.status().message();
  CheckpointContents c;
  c.epoch = 1;
  c.modelState = {{"perceiver.latents", torch::ones({8, 32})}};
  c.resume = state.value();
  c.resume.manifest.tensors.reset();  // the engine's verify would check hashes against our sample's
  ASSERT_TRUE(writeCheckpoint(path, c).isOk());
  ResumeRecord expected = sample();
  expected.manifest.value.tensors.reset();

  auto engine = readCheckpoint(path);
  ASSERT_TRUE(engine.isOk()) << engine.status().message();
  EXPECT_EQ(toResumeRecord(engine->resume), expected);

  auto index = inspect::CheckpointIndex::open(path.string());
  ASSERT_TRUE(index.isOk()) << index.status().message();
  auto torchFree = inspect::readResumeRecord(index.value());
  ASSERT_TRUE(torchFree.isOk()) << torchFree.status().message();
  ASSERT_TRUE(torchFree->has_value());
  EXPECT_EQ(**torchFree, expected);
  fsys::remove_all(dir);
}

TEST(CheckpointRecord, ReadersNameTheFieldAtFault) {
  auto dict = resumeToIValue(sample()).toGenericDict();
  ASSERT_EQ(dict.erase("rng_own"), 1u);
  auto missing = resumeFromIValue(dict);
  ASSERT_FALSE(missing.isOk());
  EXPECT_EQ(missing.status().message(), "flamingo_studio.rng_own is missing");
  dict.insert("rng_own", c10::IValue(std::string("four")));
  auto mistyped = resumeFromIValue(dict);
  ASSERT_FALSE(mistyped.isOk());
  EXPECT_NE(mistyped.status().message().find("flamingo_studio.rng_own is a String, not a list"),
            std::string::npos)
      << mistyped.status().message();
  auto r = sample();
  r.rngOwn.pop_back();
  auto short_ = protocol::decodeResumeRecord(protocol::encodeResumeRecord(r));
  ASSERT_FALSE(short_.isOk());
  EXPECT_EQ(short_.status().message(), "resume record: rng_own: 3 words, not 4");
  auto text = nlohmann::json::parse(protocol::encodeResumeRecord(sample()));
  auto pos = nlohmann::json::parse(text["data_position"].get<std::string>());
  pos["cursors"][1]["samples_read"] = -1;
  text["data_position"] = pos.dump();
  auto bad = protocol::decodeResumeRecord(text.dump());
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("cursors[1].samples_read is -1, below 0"), std::string::npos)
      << bad.status().message();
}

// Files written by the engine before this change (README in the folder).
nlohmann::json stateJson(const fsys::path& checkpoint) {
  const std::string cmd = std::string(FS_BINARY_DIR) + "/bin/flamingo-train checkpoint state --json '" +
                          checkpoint.string() + "'";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  EXPECT_EQ(::pclose(p), 0) << cmd;
  auto j = nlohmann::json::parse(out, nullptr, false);
  if (j.is_object()) j.erase("path");
  return j;
}

// Every field `said` holds is in `read` with the same value; `read` may say
// more (a reader newer than the file adds fields, e.g. the records' `format`).
void expectSaysAtLeast(const nlohmann::json& read, const nlohmann::json& said, const std::string& at) {
  if (!said.is_object() || !read.is_object()) {
    EXPECT_EQ(read, said) << "at " << at;
    return;
  }
  for (const auto& [key, value] : said.items()) {
    const std::string field = at + "." + key;
    if (!read.contains(key)) {
      ADD_FAILURE() << field << " is no longer read";
      continue;
    }
    expectSaysAtLeast(read[key], value, field);
  }
}

class OldFiles : public testing::TestWithParam<std::string> {};

TEST_P(OldFiles, ReadAsTheirEngineSaidAndResume) {
  const fsys::path assets = fsys::path(FS_SOURCE_DIR) / "tests/assets/checkpoint-records";
  const fsys::path file = assets / (GetParam() + ".pt");
  std::ifstream golden(assets / (GetParam() + ".state.json"));
  auto expected = nlohmann::json::parse(golden);
  expected.erase("path");
  const auto read = stateJson(file);
  expectSaysAtLeast(read, expected, "state");
  // What this reader adds: the records' own format numbers.
  EXPECT_EQ(read["resume"]["format"], 1);
  EXPECT_EQ(read["resume"]["data_position"]["format"], 1);
  auto c = readCheckpoint(file);  // the engine's resume path, the manifest's hashes included
  ASSERT_TRUE(c.isOk()) << c.status().message();
  EXPECT_EQ(c->resume.kind, "step");
  EXPECT_EQ(c->resume.step, 16);
  EXPECT_EQ(c->resume.data.cursors.size(), 2u);
  EXPECT_EQ(c->resume.manifest.lm.family, "opt");
}

INSTANTIATE_TEST_SUITE_P(Fixtures, OldFiles, testing::Values("full-step16", "sharded-step16"));

}  // namespace
}  // namespace fs::checkpoint
