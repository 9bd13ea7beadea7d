// The exporters on run directories holding the golden 1.4 telemetry sample (every
// event type): what is written, and every way it can go wrong (missing run, no
// events.jsonl, a corrupt or partial line, an existing output, an unwritable one,
// cancel). The values themselves are checked by the Python oracle (export_oracle.py).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "backend/export/csv_export.h"
#include "backend/export/tensorboard_export.h"

namespace fs::exporter {
namespace {

namespace stdfs = std::filesystem;
using protocol::Status;

std::string readFile(const stdfs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void writeFile(const stdfs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
}

std::size_t countLines(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

std::vector<stdfs::path> listDir(const stdfs::path& dir) {
  std::vector<stdfs::path> names;
  for (const auto& e : stdfs::directory_iterator(dir)) names.push_back(e.path().filename());
  return names;
}

class RunExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = stdfs::temp_directory_path() / ("run_export_test-" + std::to_string(::getpid()) + "-" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    stdfs::remove_all(root_);
    run_ = root_ / "golden-run";
    stdfs::create_directories(run_);
    golden_ = readFile(stdfs::path(FS_SOURCE_DIR) / "tests/assets/telemetry/events-1.4.jsonl");
    ASSERT_FALSE(golden_.empty());
    writeFile(run_ / "events.jsonl", golden_);
    writeFile(run_ / "config.yaml", "name: golden\n# a comment\noptim: {lr: 0.0001}\n");
  }
  void TearDown() override { stdfs::remove_all(root_); }

  stdfs::path root_, run_;
  std::string golden_;
};

TEST_F(RunExportTest, CsvRowsOfTheGoldenSample) {
  auto report = exportCsv({run_}, root_ / "out.csv");
  ASSERT_TRUE(report.isOk()) << report.status().message();
  EXPECT_TRUE(report->warnings.empty());
  const std::string csv = readFile(root_ / "out.csv");
  EXPECT_EQ(csv.substr(0, kCsvHeader.size()), kCsvHeader);
  EXPECT_EQ(countLines(csv), report->points + 1);
  // A per-dataset series of a step event carries its dataset's counts ...
  EXPECT_NE(csv.find("\ngolden-run,loss/laion,1250,2560000,81920000,1717000000.123,2.8125\n"),
            std::string::npos);
  // ... others the totals; points of other events none.
  EXPECT_NE(csv.find("\ngolden-run,lr,1250,3840000,409600000,1717000000.123,0.0001\n"), std::string::npos);
  EXPECT_NE(csv.find("\ngolden-run,memory/rank0/rss_bytes,1250,,,1717000000.123,9000000000\n"),
            std::string::npos);
  EXPECT_EQ(listDir(root_).size(), 2u) << "no temporary left beside out.csv";
}

TEST_F(RunExportTest, CsvOfTwoRunsToAStream) {
  stdfs::copy(run_, root_ / "second, \"quoted\"");
  std::ostringstream out;
  auto report = exportCsv({run_, root_ / "second, \"quoted\""}, out);
  ASSERT_TRUE(report.isOk()) << report.status().message();
  EXPECT_EQ(report->output, "-");
  EXPECT_EQ(countLines(out.str()), report->points + 1);
  EXPECT_NE(out.str().find("\n\"second, \"\"quoted\"\"\",loss/laion,1250,"), std::string::npos);
}

// NOTE [Abandoned steps in an export]: a run that rolled back from step 4 to step 2 and went on to 5.
TEST_F(RunExportTest, AbandonedStepsAreExportedApartAndTheRollbackAsASeries) {
  const stdfs::path run = root_ / "rolled";
  stdfs::create_directories(run);
  std::string events;
  int seq = 0;
  auto step = [&](int s, double loss) {
    events +=
        "{\"v\":\"1.5\",\"seq\":" + std::to_string(seq++) +
        ",\"t\":1717000000000,\"type\":\"step\",\"epoch\":0,\"loss\":{\"laion\":" + std::to_string(loss) +
        "},\"lr\":0.5,\"step\":" + std::to_string(s) + ",\"step_time_s\":1.0}\n";
  };
  step(1, 3.0);
  step(2, 2.0);
  step(3, 1.0);
  step(4, 9.0);
  events +=
      "{\"v\":\"1.5\",\"seq\":" + std::to_string(seq++) +
      ",\"t\":1717000000000,\"type\":\"rollback\",\"batches_skipped\":3,\"checkpoint\":"
      "\"checkpoint_step2.pt\",\"dataset\":\"laion\",\"losses\":[3.0,2.0,1.0,9.0],\"lr_factor\":1.0,"
      "\"max_rollbacks\":3,\"reason\":\"r\",\"rollbacks\":1,\"rule\":\"mad\",\"step\":4,\"to_step\":2}\n";
  step(3, 1.5);
  step(4, 1.25);
  step(5, 1.125);
  writeFile(run / "events.jsonl", events);
  std::ostringstream out;
  auto report = exportCsv({run}, out);
  ASSERT_TRUE(report.isOk()) << report.status().message();
  const std::string csv = out.str();
  auto count = [&](const std::string& prefix) {
    std::size_t n = 0;
    for (std::size_t at = csv.find("\n" + prefix); at != std::string::npos;
         at = csv.find("\n" + prefix, at + 1))
      ++n;
    return n;
  };
  // loss/laion: the run as it went on, one point per step.
  EXPECT_EQ(count("rolled,loss/laion,"), 5u) << csv;
  EXPECT_NE(csv.find("\nrolled,loss/laion,3,,,1717000000.000,1.5\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\nrolled,loss/laion,4,,,1717000000.000,1.25\n"), std::string::npos) << csv;
  // The abandoned steps 3 and 4, apart.
  EXPECT_EQ(count("rolled,abandoned/loss/laion,"), 2u) << csv;
  EXPECT_NE(csv.find("\nrolled,abandoned/loss/laion,4,,,1717000000.000,9\n"), std::string::npos) << csv;
  EXPECT_EQ(count("rolled,abandoned/lr,"), 2u) << csv;
  // The rollback, at the spike's step.
  EXPECT_NE(csv.find("\nrolled,rollback/count,4,,,1717000000.000,1\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\nrolled,rollback/to_step,4,,,1717000000.000,2\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\nrolled,rollback/batches_skipped,4,,,1717000000.000,3\n"), std::string::npos) << csv;
  // TensorBoard gets the same tags.
  auto tb = exportTensorBoard(run, root_ / "tb");
  ASSERT_TRUE(tb.isOk()) << tb.status().message();
  const std::string file = readFile(tb->output);
  EXPECT_NE(file.find("abandoned/loss/laion"), std::string::npos);
  EXPECT_NE(file.find("rollback/to_step"), std::string::npos);
}

TEST_F(RunExportTest, MissingRunDirAndMissingEventsAreNamed) {
  auto missing = exportCsv({root_ / "nope"}, root_ / "out.csv");
  ASSERT_FALSE(missing.isOk());
  EXPECT_EQ(missing.status().code(), Status::Code::kNotFound);
  EXPECT_NE(missing.status().message().find((root_ / "nope").string() + " does not exist"),
            std::string::npos);

  stdfs::create_directories(root_ / "empty");
  auto empty = exportTensorBoard(root_ / "empty", root_ / "tb");
  ASSERT_FALSE(empty.isOk());
  EXPECT_NE(empty.status().message().find((root_ / "empty").string() + " holds no events.jsonl"),
            std::string::npos);
  EXPECT_FALSE(stdfs::exists(root_ / "tb")) << "nothing is created for a run that is not there";
  EXPECT_FALSE(stdfs::exists(root_ / "out.csv"));
}

TEST_F(RunExportTest, CorruptLineIsNamedAndTheRestExported) {
  auto clean = exportCsv({run_}, root_ / "clean.csv");
  ASSERT_TRUE(clean.isOk());
  // Line 3 garbled, and a partial last line (a run still writing).
  std::string text = golden_;
  const auto line3 = text.find('\n', text.find('\n') + 1) + 1;
  text.insert(line3, "{\"v\":\"1.4\",\"seq\":2,\"t\":1,\"type\":\"st\n");
  text += "{\"v\":\"1.4\",\"seq\":99";
  writeFile(run_ / "events.jsonl", text);
  auto report = exportCsv({run_}, root_ / "out.csv");
  ASSERT_TRUE(report.isOk()) << report.status().message();
  EXPECT_EQ(report->points, clean->points);
  ASSERT_EQ(report->warnings.size(), 2u);
  EXPECT_NE(report->warnings[0].find((run_ / "events.jsonl").string() + " line 3"), std::string::npos)
      << report->warnings[0];
  EXPECT_NE(report->warnings[1].find("line " + std::to_string(countLines(text) + 1) +
                                     ": the last line has no newline"),
            std::string::npos)
      << report->warnings[1];
}

TEST_F(RunExportTest, ExistingOutputsNeedForce) {
  ASSERT_TRUE(exportCsv({run_}, root_ / "out.csv").isOk());
  auto again = exportCsv({run_}, root_ / "out.csv");
  ASSERT_FALSE(again.isOk());
  EXPECT_EQ(again.status().message(), (root_ / "out.csv").string() + " exists; pass --force to replace it");
  ExportOptions force;
  force.force = true;
  EXPECT_TRUE(exportCsv({run_}, root_ / "out.csv", force).isOk());

  auto first = exportTensorBoard(run_, root_ / "tb");
  ASSERT_TRUE(first.isOk()) << first.status().message();
  auto refused = exportTensorBoard(run_, root_ / "tb");
  ASSERT_FALSE(refused.isOk());
  EXPECT_NE(refused.status().message().find("already holds TensorBoard event files"), std::string::npos);
  writeFile(root_ / "tb" / "events.out.tfevents.1.older", "x");
  auto replaced = exportTensorBoard(run_, root_ / "tb", force);
  ASSERT_TRUE(replaced.isOk()) << replaced.status().message();
  EXPECT_EQ(listDir(root_ / "tb"), std::vector<stdfs::path>{replaced->output.filename()});
}

TEST_F(RunExportTest, UnwritableOutputsAreNamed) {
  writeFile(root_ / "a-file", "");
  auto csv = exportCsv({run_}, root_ / "a-file" / "out.csv");
  ASSERT_FALSE(csv.isOk());
  EXPECT_NE(csv.status().message().find("cannot write " + (root_ / "a-file" / "out.csv").string()),
            std::string::npos)
      << csv.status().message();
  auto tb = exportTensorBoard(run_, root_ / "a-file" / "tb");
  ASSERT_FALSE(tb.isOk());
  EXPECT_NE(tb.status().message().find((root_ / "a-file" / "tb").string()), std::string::npos)
      << tb.status().message();
  auto folder = exportCsv({run_}, root_);
  ASSERT_FALSE(folder.isOk());
  EXPECT_NE(folder.status().message().find("exists"), std::string::npos) << folder.status().message();
}

TEST_F(RunExportTest, CancelLeavesNothing) {
  std::atomic<bool> cancel{false};
  ExportOptions options;
  options.cancel = &cancel;
  options.chunk_bytes = 512;  // several chunks: the cancel lands mid-file
  int calls = 0;
  options.progress = [&](std::uint64_t done, std::uint64_t total) {
    EXPECT_LE(done, total);
    ++calls;
    cancel = true;
  };
  auto tb = exportTensorBoard(run_, root_ / "tb", options);
  ASSERT_FALSE(tb.isOk());
  EXPECT_EQ(tb.status().code(), Status::Code::kCancelled);
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(stdfs::exists(root_ / "tb")) << "the folder the export made goes with it";

  cancel = false;
  calls = 0;
  auto csv = exportCsv({run_}, root_ / "out.csv", options);
  ASSERT_FALSE(csv.isOk());
  EXPECT_EQ(csv.status().code(), Status::Code::kCancelled);
  EXPECT_EQ(listDir(root_), std::vector<stdfs::path>{"golden-run"}) << "no CSV, no temporary";
}

TEST_F(RunExportTest, ProgressReachesTheFileSize) {
  ExportOptions options;
  options.chunk_bytes = 1000;
  std::uint64_t last = 0, total = 0;
  options.progress = [&](std::uint64_t d, std::uint64_t t) {
    EXPECT_GE(d, last);
    last = d;
    total = t;
  };
  ASSERT_TRUE(exportTensorBoard(run_, root_ / "tb", options).isOk());
  EXPECT_EQ(last, golden_.size());
  EXPECT_EQ(total, golden_.size());
}

TEST(ConfigAsMarkdown, IndentsEveryLine) {
  EXPECT_EQ(configAsMarkdown("a: 1\n# b\n"), "    a: 1\n    # b\n");
  EXPECT_EQ(configAsMarkdown("a: 1"), "    a: 1\n");
}

}  // namespace
}  // namespace fs::exporter
