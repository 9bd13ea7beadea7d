// Helpers shared by the telemetry tests: scratch run directories, reading event files
// back with the protocol's decoder, and an in-memory EventSink the test can stall.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "backend/protocol/wire/event_codec.h"
#include "backend/protocol/wire/run_dir.h"
#include "backend/telemetry/event_sink.h"

namespace fs::telemetry::testing {

namespace stdfs = std::filesystem;

// A fresh directory named after the running test; removed by the destructor.
class ScratchDir {
 public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = stdfs::temp_directory_path() /
            ("fs_tel_" + std::to_string(::getpid()) + "_" + info->test_suite_name() + "_" + info->name());
    stdfs::remove_all(path_);
    stdfs::create_directories(path_);
  }
  ~ScratchDir() { stdfs::remove_all(path_); }
  const stdfs::path& path() const { return path_; }

 private:
  stdfs::path path_;
};

inline std::string readAll(const stdfs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void appendRaw(const stdfs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::app) << bytes;
}

// Decodes `bytes` as a whole file; every line must be a complete, valid event.
inline std::vector<protocol::Event> decodeAll(const std::string& bytes) {
  protocol::EventDecoder decoder;
  std::vector<protocol::Event> out;
  for (auto& line : decoder.feed(bytes)) {
    EXPECT_EQ(line.kind, protocol::DecodedLine::Kind::kEvent) << line.error.message();
    if (line.kind == protocol::DecodedLine::Kind::kEvent) out.push_back(line.event);
  }
  EXPECT_FALSE(decoder.hasPartialLine()) << "file ends in a partial line";
  return out;
}

// Gap-free from `first`?
inline void expectGapFree(const std::vector<protocol::Event>& events, std::uint64_t first = 0) {
  std::vector<std::uint64_t> seqs;
  for (const auto& e : events) seqs.push_back(e.seq);
  auto report = protocol::checkSeqs(seqs, first);
  EXPECT_TRUE(report.ok()) << report.summary();
}

// In-memory sink. While `hold` is set, append() blocks (the writer thread is stuck as
// on a hung file system); `fail_appends` makes the next appends fail.
struct SinkState {
  std::mutex mu;
  std::condition_variable cv;
  std::string data;
  bool hold = false;
  int fail_appends = 0;
  int appends_entered = 0;
  int syncs = 0;

  void setHold(bool h) {
    std::lock_guard<std::mutex> lock(mu);
    hold = h;
    cv.notify_all();
  }
  // Waits until append() was entered `n` times in total.
  bool waitEntered(int n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] { return appends_entered >= n; });
  }
  std::string contents() {
    std::lock_guard<std::mutex> lock(mu);
    return data;
  }
};

class TestSink : public EventSink {
 public:
  explicit TestSink(std::shared_ptr<SinkState> state) : state_(std::move(state)) {}
  Status append(std::string_view lines) override {
    std::unique_lock<std::mutex> lock(state_->mu);
    ++state_->appends_entered;
    state_->cv.notify_all();
    state_->cv.wait(lock, [&] { return !state_->hold; });
    if (state_->fail_appends > 0) {
      --state_->fail_appends;
      return Status::ioError("test sink: no space left on device");
    }
    state_->data.append(lines);
    return Status::ok();
  }
  Status sync() override {
    std::lock_guard<std::mutex> lock(state_->mu);
    ++state_->syncs;
    return Status::ok();
  }

 private:
  std::shared_ptr<SinkState> state_;
};

}  // namespace fs::telemetry::testing
