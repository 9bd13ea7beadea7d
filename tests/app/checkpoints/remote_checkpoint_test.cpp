// Checkpoints on another host opened over SSH through their index only
// (openRemoteCheckpoint: SparseMirror over SshHost's pipelined SFTP reads),
// against real sshd servers (tests/fixtures/ssh_hosts) whose file system is
// this machine's: every format lists and reads as when opened here; opening a
// 5 MiB file reads a few KiB over the network and a tensor's statistics only
// that tensor; readRanges answers many ranges (past the end too) as pread
// does; a missing or damaged remote file is named host:path.
#include "app/checkpoints/remote_checkpoint.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "app/remote/ssh_host.h"
#include "backend/tensorfile/safetensors.h"
#include "backend/tensorfile/tensor_stats.h"
#include "tests/fixtures/fixture_unavailable.h"
#include "tests/fixtures/ssh_host_open.h"
#include "tests/fixtures/ssh_hosts.h"

namespace fs::app {
namespace {

namespace fsys = std::filesystem;
namespace tf = fs::tensorfile;
using fs::testing::SshHosts;

class RemoteCheckpointTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    hosts_ = new SshHosts();
    if (!hosts_->ok()) return;
    dir_ = new std::string(hosts_->dir() + "/checkpoints");
    const std::string make = std::string(FS_PYTHON) + " " + FS_SOURCE_DIR +
                             "/tests/backend/inspect/make_checkpoints.py " + *dir_ + " > /dev/null";
    const std::string big =
        std::string(FS_PYTHON) +
        " -c \"import torch,sys; torch.manual_seed(1); torch.save({'big': torch.randn(1024, 1024), "
        "'mid': torch.randn(512, 512), 'small': torch.arange(10)}, sys.argv[1])\" " +
        *dir_ + "/big.pt";
    fixtures_ = std::system(make.c_str()) == 0 && std::system(big.c_str()) == 0;
  }
  static void TearDownTestSuite() {
    delete hosts_;
    hosts_ = nullptr;
    delete dir_;
  }
  void SetUp() override {
    if (!hosts_->ok()) FS_FIXTURE_UNAVAILABLE(hosts_->error());
    ASSERT_TRUE(fixtures_) << "the checkpoints could not be written (needs " FS_PYTHON
                              " with torch: run scripts/install-deps.sh)";
    auto host = fs::testing::openFixtureHost(*hosts_, "h0");
    ASSERT_TRUE(host.isOk()) << host.status().message();
    host_ = std::move(host.value());
    cache_ = hosts_->dir() + "/cache";
  }

  static std::string path(const std::string& name) { return *dir_ + "/" + name; }

  void expectSameAsHere(const std::string& name) {
    SCOPED_TRACE(name);
    auto here = inspect::CheckpointIndex::open(path(name));
    ASSERT_TRUE(here.isOk()) << here.status().message();
    auto there = openRemoteCheckpoint(host_, path(name), cache_);
    ASSERT_TRUE(there.isOk()) << there.status().message();
    const inspect::CheckpointIndex& r = (*there)->index();
    EXPECT_EQ(r.format(), here->format());
    EXPECT_EQ(r.manifest(), here->manifest());
    ASSERT_EQ(r.tensors().size(), here->tensors().size());
    for (std::size_t i = 0; i < r.tensors().size(); ++i) {
      SCOPED_TRACE(here->tensors()[i].name);
      EXPECT_EQ(r.tensors()[i].name, here->tensors()[i].name);
      EXPECT_EQ(r.tensors()[i].shape, here->tensors()[i].shape);
      EXPECT_EQ(r.tensors()[i].dtype, here->tensors()[i].dtype);
      EXPECT_EQ(r.tensors()[i].sameAs, here->tensors()[i].sameAs);
      auto a = here->data(i);
      auto b = r.data(i);
      ASSERT_TRUE(a.isOk() && b.isOk()) << (b.isOk() ? a.status() : b.status()).message();
      EXPECT_EQ(tf::toContiguous(b->view), tf::toContiguous(a->view));
    }
  }

  std::shared_ptr<remote::SshHost> host_;
  std::string cache_;
  static SshHosts* hosts_;
  static std::string* dir_;
  static bool fixtures_;
};

SshHosts* RemoteCheckpointTest::hosts_ = nullptr;
std::string* RemoteCheckpointTest::dir_ = nullptr;
bool RemoteCheckpointTest::fixtures_ = false;

TEST_F(RemoteCheckpointTest, EveryFormatReadsAsHere) {
  expectSameAsHere("openflamingo.pt");
  expectSameAsHere("ours.pt");
  expectSameAsHere("state_dict.bin");
  expectSameAsHere("sharded");
  expectSameAsHere("big.pt");
  const std::vector<float> a = {1, 2, 3, 4, 5, 6};
  fsys::create_directories(path("hf"));
  ASSERT_TRUE(
      tf::writeSafetensors(
          path("hf/model.safetensors"),
          {{"x.a", tf::DType::kFloat32, {2, 3}, std::as_bytes(std::span<const float>(a.data(), a.size()))}})
          .isOk());
  expectSameAsHere("hf");
}

TEST_F(RemoteCheckpointTest, OpeningReadsTheIndexAndStatisticsOnlyTheirTensor) {
  auto ckpt = openRemoteCheckpoint(host_, path("big.pt"), cache_);
  ASSERT_TRUE(ckpt.isOk()) << ckpt.status().message();
  const auto& mirror = (*ckpt)->mirror();
  EXPECT_EQ(mirror.bytesTotal(), fsys::file_size(path("big.pt")));
  EXPECT_LT(mirror.bytesFetched(), 100u * 1024) << "of a 5 MiB file";
  const std::uint64_t before = mirror.bytesFetched();
  const auto& index = (*ckpt)->index();
  auto mid = index.data(*index.find("mid"));
  ASSERT_TRUE(mid.isOk()) << mid.status().message();
  auto stats = tf::computeStats(mid->view, tf::StatsOptions{});
  ASSERT_TRUE(stats.isOk()) << stats.status().message();
  EXPECT_EQ(stats->moments.count, 512u * 512);
  EXPECT_LE(mirror.bytesFetched() - before, 512u * 512 * 4) << "the tensor's bytes, no other's";
  EXPECT_LT(mirror.bytesFetched(), 2u << 20) << "the 4 MiB tensor was never read";
}

TEST_F(RemoteCheckpointTest, ReadRangesAnswersAsPreadDoes) {
  const std::string file = path("big.pt");
  const std::uint64_t size = fsys::file_size(file);
  std::mt19937_64 rng(7);
  std::vector<remote::ByteRange> ranges;
  for (int i = 0; i < 40; ++i) ranges.push_back({rng() % size, 1 + rng() % 300000});
  ranges.push_back({size - 10, 100});  // past the end: 10 bytes
  ranges.push_back({size + 5, 10});    // wholly past it: none
  ranges.push_back({0, 0});
  auto got = host_->readRanges(file, ranges);
  ASSERT_TRUE(got.isOk()) << got.status().message();
  ASSERT_EQ(got->size(), ranges.size());
  const int fd = ::open(file.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    std::string want(ranges[i].length, '\0');
    const ssize_t n = ::pread(fd, want.data(), want.size(), static_cast<off_t>(ranges[i].offset));
    want.resize(n < 0 ? 0 : static_cast<std::size_t>(n));
    EXPECT_EQ((*got)[i], want) << "range " << i;
  }
  ::close(fd);
}

TEST_F(RemoteCheckpointTest, MissingAndDamagedFilesNameTheHostAndPath) {
  auto missing = openRemoteCheckpoint(host_, path("nothing.pt"), cache_);
  ASSERT_FALSE(missing.isOk());
  EXPECT_NE(missing.status().message().find(path("nothing.pt")), std::string::npos)
      << missing.status().message();

  fsys::copy_file(path("big.pt"), path("cut.pt"), fsys::copy_options::overwrite_existing);
  fsys::resize_file(path("cut.pt"), fsys::file_size(path("big.pt")) / 2);
  auto cut = openRemoteCheckpoint(host_, path("cut.pt"), cache_);
  ASSERT_FALSE(cut.isOk());
  EXPECT_NE(cut.status().message().find("h0:" + path("cut.pt")), std::string::npos) << cut.status().message();
  EXPECT_TRUE(fsys::is_empty(cache_)) << "nothing left in the cache";
}

// Issue 42 (Low): a remote index naming itself, or two naming each other, is refused by
// entry over SSH as well (NOTE [Indexes do not nest]); before, the mirror recursed.
TEST_F(RemoteCheckpointTest, SelfNamingAndCyclicIndexesAreRefusedByEntry) {
  fsys::create_directories(path("loops"));
  std::ofstream(path("loops/self.index.json")) << R"({"weight_map": {"w": "self.index.json"}})";
  std::ofstream(path("loops/a.index.json")) << R"({"weight_map": {"x": "b.index.json"}})";
  std::ofstream(path("loops/b.index.json")) << R"({"weight_map": {"y": "a.index.json"}})";
  auto self = openRemoteCheckpoint(host_, path("loops/self.index.json"), cache_);
  ASSERT_FALSE(self.isOk());
  EXPECT_NE(self.status().message().find("h0:" + path("loops/self.index.json") +
                                         ": weight_map['w'] names 'self.index.json', the index itself"),
            std::string::npos)
      << self.status().message();
  auto cycle = openRemoteCheckpoint(host_, path("loops/a.index.json"), cache_);
  ASSERT_FALSE(cycle.isOk());
  EXPECT_NE(cycle.status().message().find("h0:" + path("loops/a.index.json") +
                                          ": weight_map['x'] names 'b.index.json', another index"),
            std::string::npos)
      << cycle.status().message();
  EXPECT_TRUE(fsys::is_empty(cache_)) << "nothing left in the cache";
}

}  // namespace
}  // namespace fs::app
