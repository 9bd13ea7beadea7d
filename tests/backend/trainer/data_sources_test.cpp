// makeDataSources / checkDataCodecs (backend/trainer/data_sources.h): which
// data a build can read. With FS_BUILD_DATA_CODECS=OFF (FS_TEST_NO_DATA_CODECS)
// shard data is refused by name; with the codecs every source passes the check.
#include "backend/trainer/data_sources.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/backend/trainer/engine_test_util.h"

namespace fs::trainer {
namespace {

TEST(DataSources, SyntheticTrainsInEveryBuild) {
  const auto config = test::tinyConfig();
  EXPECT_TRUE(checkDataCodecs(config).isOk());
  auto sources = makeDataSources(config, std::filesystem::temp_directory_path(), 0, 1, nullptr);
  ASSERT_TRUE(sources.isOk()) << sources.status().message();
  ASSERT_NE(sources.value().train, nullptr);
  EXPECT_EQ(sources.value().val, nullptr);
  EXPECT_GT(sources.value().train->stepsPerEpoch(), 0);
}

#ifdef FS_TEST_NO_DATA_CODECS
TEST(DataSources, WithoutCodecsShardDataIsRefusedByName) {
  for (const std::string source : {"shards", "generated"}) {
    auto config = test::tinyConfig({"data.source=" + source});
    const protocol::Status check = checkDataCodecs(config);
    ASSERT_FALSE(check.isOk()) << source;
    EXPECT_EQ(check.message(),
              "data.source: '" + source +
                  "' reads data.datasets[0] 'laion', data.datasets[1] 'mmc4' through the shard "
                  "pipeline, but this build has no data codecs (FS_BUILD_DATA_CODECS=OFF); it "
                  "trains on data.source synthetic only");
    // The trainer's own path refuses the same way (nothing is written for `generated`).
    const auto dir = std::filesystem::temp_directory_path() / ("fs_data_sources_" + source);
    std::filesystem::remove_all(dir);
    auto sources = makeDataSources(config, dir, 0, 1, nullptr);
    ASSERT_FALSE(sources.isOk()) << source;
    EXPECT_EQ(sources.status().message(), check.message());
    EXPECT_FALSE(std::filesystem::exists(dir / "generated-data"));
  }
}
#else
TEST(DataSources, WithCodecsEverySourcePassesTheCheck) {
  for (const char* source : {"synthetic", "shards", "generated"}) {
    EXPECT_TRUE(checkDataCodecs(test::tinyConfig({std::string("data.source=") + source})).isOk()) << source;
  }
}
#endif

}  // namespace
}  // namespace fs::trainer
