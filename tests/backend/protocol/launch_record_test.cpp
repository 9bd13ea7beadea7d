// launch.json: round trips, validation messages, version handling.
#include "backend/protocol/wire/launch_record.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace fs::protocol {
namespace {

LaunchRecord sshSample() {
  LaunchRecord r;
  r.launcher = LauncherKind::kSsh;
  r.run_dir = "/scratch/runs/tiny-20261127-101500";
  r.created = 1795000000000;
  r.shared_fs = true;
  r.nodes = {
      {0, "node-a", "10.0.0.2", 4242, "3f1c0c1e-9d2b-4a55-8f0e-2b1f7a9c0d11", 123456, 1795000000100},
      {1, "me@node-b:2222", "10.0.0.3", 777, "8a6e9c1e-1111-4a55-8f0e-2b1f7a9c0d11", 99, 1795000000200}};
  return r;
}

TEST(LaunchRecordTest, SshRecordRoundTrips) {
  const LaunchRecord r = sshSample();
  ASSERT_TRUE(validateLaunchRecord(r).isOk()) << validateLaunchRecord(r).message();
  const std::string text = encodeLaunchRecord(r);
  auto back = decodeLaunchRecord(text);
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(back.value(), r);
  const auto json = nlohmann::json::parse(text);
  EXPECT_EQ(json["schema_version"], "1.0");
  EXPECT_EQ(json["launcher"], "ssh");
  EXPECT_EQ(json["nodes"][1]["host"], "me@node-b:2222");
  EXPECT_EQ(json["nodes"][0]["start_ticks"], 123456);
  EXPECT_FALSE(json.contains("slurm"));
}

TEST(LaunchRecordTest, SlurmRecordRoundTrips) {
  LaunchRecord r;
  r.launcher = LauncherKind::kSlurm;
  r.run_dir = "/home/u/flamingo-runs/a";
  r.created = 5;
  r.slurm = LaunchedJob{"login1", "4711", "slurm.sbatch"};
  auto back = decodeLaunchRecord(encodeLaunchRecord(r));
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(back.value(), r);
  EXPECT_FALSE(back->shared_fs.has_value());
}

TEST(LaunchRecordTest, ValidationNamesTheField) {
  LaunchRecord r = sshSample();
  r.nodes[1].agent_pid = 0;
  EXPECT_EQ(validateLaunchRecord(r).message(), "launch.json: nodes[1].agent_pid is 0; expected a pid");
  r = sshSample();
  r.nodes[1].node_rank = 3;
  EXPECT_NE(validateLaunchRecord(r).message().find("nodes[1].node_rank is 3; expected 1"), std::string::npos);
  r = sshSample();
  r.run_dir = "runs/a";
  EXPECT_NE(validateLaunchRecord(r).message().find("run_dir is 'runs/a'; expected an absolute path"),
            std::string::npos);
  r = sshSample();
  r.launcher = LauncherKind::kSlurm;
  EXPECT_NE(validateLaunchRecord(r).message().find("slurm is missing"), std::string::npos);
  r = sshSample();
  r.nodes[0].start_ticks = 0;
  EXPECT_NE(validateLaunchRecord(r).message().find("nodes[0].start_ticks is 0"), std::string::npos);
}

TEST(LaunchRecordTest, DecodeRefusesNewerMajorAndBadFields) {
  auto json = nlohmann::json::parse(encodeLaunchRecord(sshSample()));
  json["schema_version"] = "2.0";
  auto newer = decodeLaunchRecord(json.dump(), "/r/launch.json");
  ASSERT_FALSE(newer.isOk());
  EXPECT_NE(newer.status().message().find("/r/launch.json"), std::string::npos);
  EXPECT_NE(newer.status().message().find("2.0"), std::string::npos);

  json = nlohmann::json::parse(encodeLaunchRecord(sshSample()));
  json["nodes"][0]["agent_pid"] = "x";
  auto mistyped = decodeLaunchRecord(json.dump());
  ASSERT_FALSE(mistyped.isOk());
  EXPECT_NE(mistyped.status().message().find("agent_pid"), std::string::npos) << mistyped.status().message();

  json = nlohmann::json::parse(encodeLaunchRecord(sshSample()));
  json["future_field"] = 1;  // unknown fields are ignored
  EXPECT_TRUE(decodeLaunchRecord(json.dump()).isOk());

  EXPECT_FALSE(decodeLaunchRecord("{").isOk());
  EXPECT_FALSE(decodeLaunchRecord("[]").isOk());
}

}  // namespace
}  // namespace fs::protocol
