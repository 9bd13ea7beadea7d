// InspectorWorker on checkpoints of another host (openRemote), against a real
// sshd (tests/fixtures/ssh_hosts) whose file system is this machine's:
//  - the opened model is the local open's, named "h0:/path", and the bytes
//    fetched (fetched()) stay far below the file's size;
//  - a tensor's statistics equal the local open's and fetch that tensor only;
//  - the training state equals the local open's;
//  - a run directory lists its checkpoints and opens the newest;
//  - a missing path fails naming host and path.
// The worker runs on this thread (its slots called directly).
#include <gtest/gtest.h>

#include <QFile>
#include <cstdlib>
#include <filesystem>

#include "app/checkpoints/inspector_worker.h"
#include "app/remote/ssh_host.h"
#include "tests/fixtures/fixture_unavailable.h"
#include "tests/fixtures/ssh_host_open.h"
#include "tests/fixtures/ssh_hosts.h"

namespace fs::app {
namespace {

namespace fsys = std::filesystem;
using fs::testing::SshHosts;

// What one worker said, its slots called on this thread.
struct Answers {
  explicit Answers(InspectorWorker& w) {
    QObject::connect(&w, &InspectorWorker::opened,
                     [this](quint64, const CheckpointModelPtr& m) { model = m; });
    QObject::connect(&w, &InspectorWorker::runListed,
                     [this](quint64, const CheckpointListing& l) { listing = l; });
    QObject::connect(&w, &InspectorWorker::statsReady, [this](quint64, const StatsResult& r) { stats = r; });
    QObject::connect(&w, &InspectorWorker::trainingStateReady,
                     [this](quint64, const TrainingStateResult& r) { state = r; });
    QObject::connect(&w, &InspectorWorker::fetched, [this](quint64, quint64 done, quint64 total) {
      fetched = done;
      total_ = total;
    });
    QObject::connect(&w, &InspectorWorker::failed,
                     [this](quint64, InspectorTask, const QString& m, bool) { error = m.toStdString(); });
  }
  CheckpointModelPtr model;
  std::optional<CheckpointListing> listing;
  std::optional<StatsResult> stats;
  std::optional<TrainingStateResult> state;
  quint64 fetched = 0, total_ = 0;
  std::string error;
};

class InspectorRemoteTest : public ::testing::Test {
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
        "'small': torch.arange(10, dtype=torch.float32)}, sys.argv[1])\" " +
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
    remote_.setCacheDir(QString::fromStdString(hosts_->dir() + "/cache"));
  }

  static std::string path(const std::string& name) { return *dir_ + "/" + name; }
  static QString qpath(const std::string& name) { return QString::fromStdString(path(name)); }

  void openBoth(const std::string& name) {
    local_.open(local_.newTicket(), qpath(name));
    remote_.openRemote(remote_.newTicket(), host_, qpath(name));
    ASSERT_TRUE(here_.model) << here_.error;
    ASSERT_TRUE(there_.model) << there_.error;
  }

  std::shared_ptr<remote::SshHost> host_;
  InspectorWorker local_, remote_;
  Answers here_{local_}, there_{remote_};
  static SshHosts* hosts_;
  static std::string* dir_;
  static bool fixtures_;
};

SshHosts* InspectorRemoteTest::hosts_ = nullptr;
std::string* InspectorRemoteTest::dir_ = nullptr;
bool InspectorRemoteTest::fixtures_ = false;

TEST_F(InspectorRemoteTest, StatisticsEqualTheLocalOpensAndFetchOneTensor) {
  openBoth("big.pt");
  EXPECT_EQ(there_.model->path.toStdString(), "h0:" + path("big.pt"));
  EXPECT_EQ(there_.model->host, QStringLiteral("h0"));
  EXPECT_EQ(there_.model->files, QStringList{QString::fromStdString("h0:" + path("big.pt"))});
  EXPECT_EQ(there_.model->format, here_.model->format);
  ASSERT_EQ(there_.model->tensors.size(), here_.model->tensors.size());
  const std::uint64_t size = fsys::file_size(path("big.pt"));
  EXPECT_EQ(there_.total_, size);
  EXPECT_LT(there_.fetched, 100u * 1024) << "opening a 4 MiB file";

  StatsTarget small;
  for (std::size_t i = 0; i < here_.model->tensors.size(); ++i)
    if (here_.model->tensors[i].name == "small") small.tensor = i;
  ASSERT_TRUE(small.tensor);
  local_.stats(local_.newTicket(), small);
  remote_.stats(remote_.newTicket(), small);
  ASSERT_TRUE(here_.stats && there_.stats) << there_.error;
  EXPECT_EQ(there_.stats->stats.moments.count, 10u);
  EXPECT_EQ(there_.stats->stats.moments.mean, here_.stats->stats.moments.mean);
  EXPECT_EQ(there_.stats->stats.moments.l2Norm(), here_.stats->stats.moments.l2Norm());
  EXPECT_EQ(there_.stats->stats.histogram->counts, here_.stats->stats.histogram->counts);
  EXPECT_LT(there_.fetched, 100u * 1024) << "the 4 MiB tensor was never fetched";
}

TEST_F(InspectorRemoteTest, TrainingStateEqualsTheLocalOpens) {
  openBoth("openflamingo_train.pt");
  local_.trainingState(local_.newTicket());
  remote_.trainingState(remote_.newTicket());
  ASSERT_TRUE(here_.state) << here_.error;
  ASSERT_TRUE(there_.state) << there_.error;
  EXPECT_EQ(there_.state->path.toStdString(), "h0:" + path("openflamingo_train.pt"));
  // The same report but for the path it names.
  inspect::TrainingState a = here_.state->state, b = there_.state->state;
  a.path = b.path = "";
  EXPECT_EQ(inspect::formatTrainingState(b), inspect::formatTrainingState(a));
  EXPECT_LE(there_.fetched, fsys::file_size(path("openflamingo_train.pt")));
}

TEST_F(InspectorRemoteTest, ARunDirectoryOpensItsNewestCheckpoint) {
  const std::string run = path("run");
  fsys::create_directories(run);
  fsys::copy_file(path("openflamingo.pt"), run + "/checkpoint_step2.pt",
                  fsys::copy_options::overwrite_existing);
  fsys::copy_file(path("openflamingo_train.pt"), run + "/checkpoint_step4.pt",
                  fsys::copy_options::overwrite_existing);
  const auto now = fsys::file_time_type::clock::now();
  fsys::last_write_time(run + "/checkpoint_step2.pt", now - std::chrono::hours(2));
  fsys::last_write_time(run + "/checkpoint_step4.pt", now - std::chrono::hours(1));
  remote_.openRemote(remote_.newTicket(), host_, QString::fromStdString(run));
  ASSERT_TRUE(there_.listing) << there_.error;
  ASSERT_EQ(there_.listing->checkpoints.size(), 2);
  EXPECT_EQ(there_.listing->checkpoints.front().name, QStringLiteral("checkpoint_step4.pt"));
  ASSERT_TRUE(there_.model) << there_.error;
  EXPECT_EQ(there_.model->path.toStdString(), "h0:" + run + "/checkpoint_step4.pt");

  // Null host: the last one's (the inspector's run picker).
  remote_.openRemote(remote_.newTicket(), nullptr, QString::fromStdString(run + "/checkpoint_step2.pt"));
  EXPECT_EQ(there_.model->path.toStdString(), "h0:" + run + "/checkpoint_step2.pt") << there_.error;
}

TEST_F(InspectorRemoteTest, AMissingPathFailsNamingHostAndPath) {
  remote_.openRemote(remote_.newTicket(), host_, qpath("nothing.pt"));
  EXPECT_FALSE(there_.model);
  EXPECT_NE(there_.error.find(path("nothing.pt")), std::string::npos) << there_.error;
}

}  // namespace
}  // namespace fs::app
