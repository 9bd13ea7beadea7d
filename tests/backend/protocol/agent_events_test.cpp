#include "backend/protocol/wire/agent_events.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace fs::protocol {
namespace {

std::vector<AgentEventBody> sampleBodies() {
  AgentStartedEvent started{"node-a",
                            1,
                            2,
                            3,
                            "10.0.0.1",
                            29500,
                            "node-a.cluster",
                            4242,
                            {"/usr/bin/flamingo-train", "train", "--config", "c.yaml"}};
  RankExitedEvent byCode{4, 5001, 3, std::nullopt, "", 12.5};
  RankExitedEvent bySignal{5, 5002, std::nullopt, 9, "SIGKILL", 0.25};
  return {started,
          RankSpawnedEvent{3, 0, 5000},
          SignalForwardedEvent{"SIGTERM", 3, "received SIGTERM"},
          SignalForwardedEvent{"SIGKILL", 1, ""},
          byCode,
          bySignal,
          AgentStoppingEvent{"rank 4 (pid 5001) exited with code 3", 4},
          AgentStoppingEvent{"received SIGINT", std::nullopt},
          AgentRestartingEvent{1, 2, "rank 1 (pid 4321) was killed by SIGKILL", 1},
          AgentRestartingEvent{2, 2, "cannot reach rank 0", std::nullopt},
          AgentFinishedEvent{1, "rank 4 (pid 5001) exited with code 3"}};
}

TEST(AgentEventsTest, RoundTripsEveryType) {
  std::set<std::string_view> seen;
  std::uint64_t seq = 0;
  for (const auto& body : sampleBodies()) {
    AgentEvent event{seq++, 1717000000123, body};
    std::string line = encodeAgentEvent(event);
    ASSERT_EQ(line.back(), '\n');
    ASSERT_EQ(line.find('\n'), line.size() - 1) << "one line per event";
    EXPECT_EQ(line.rfind("{\"v\":\"1.1\",\"seq\":" + std::to_string(event.seq) +
                             ",\"t\":1717000000123,\"type\":\"" + std::string(agentEventType(body)) + "\"",
                         0),
              0u)
        << line;
    auto decoded = decodeAgentEvent(line.substr(0, line.size() - 1));
    ASSERT_TRUE(decoded.isOk()) << decoded.status().message() << "\n" << line;
    EXPECT_EQ(decoded.value(), event) << line;
    seen.insert(agentEventType(body));
  }
  EXPECT_EQ(seen.size(), knownAgentEventTypes().size()) << "a sample for every type";
}

TEST(AgentEventsTest, DescribesExits) {
  EXPECT_EQ(describeExit({3, 1234, 1, std::nullopt, "", 1}), "rank 3 (pid 1234) exited with code 1");
  EXPECT_EQ(describeExit({1, 4321, std::nullopt, 9, "SIGKILL", 1}),
            "rank 1 (pid 4321) was killed by SIGKILL");
  EXPECT_EQ(describeExit({1, 4321, std::nullopt, 64, "", 1}), "rank 1 (pid 4321) was killed by signal 64");
}

TEST(AgentEventsTest, BadLinesNameTheField) {
  struct Case {
    std::string line;
    std::string expected;  // a piece of the message
  };
  const std::string head = R"({"v":"1.0","seq":0,"t":1,)";
  const std::vector<Case> cases = {
      {"{not json", "agent.jsonl: malformed JSON"},
      {"[1,2]", "expected a JSON object"},
      {R"({"seq":0,"t":1,"type":"spawned"})", "missing required field 'v'"},
      {R"({"v":1,"seq":0,"t":1,"type":"spawned"})", "field 'v' is 1"},
      {R"({"v":"one","seq":0,"t":1,"type":"spawned"})", "schema version 'one'"},
      {R"({"v":"1.0","t":1,"type":"spawned","rank":0,"local_rank":0,"pid":1})",
       "missing required field 'seq'"},
      {R"({"v":"1.0","seq":-1,"t":1,"type":"spawned"})", "field 'seq' is -1"},
      {head + R"("type":"spawned","local_rank":0,"pid":1})", "spawned event: missing required field 'rank'"},
      {head + R"("type":"spawned","rank":"x","local_rank":0,"pid":1})",
       "field 'rank' is \"x\", expected an integer"},
      {head + R"("type":"agent_started","node_rank":0,"nnodes":1,"nproc_per_node":1,"master_addr":"a",)"
              R"("master_port":1,"host":"h","pid":1,"command":"sh"})",
       "field 'command' is \"sh\", expected an array"},
      {head + R"("type":"exited","rank":0,"pid":1,"wall_s":1})",
       "exactly one of the fields 'exit_code' and 'signal', found neither"},
      {head + R"("type":"exited","rank":0,"pid":1,"exit_code":0,"signal":9,"wall_s":1})", "found both"},
      {head + R"("type":"agent_finished","reason":"x"})", "missing required field 'exit_code'"},
  };
  for (const auto& c : cases) {
    auto decoded = decodeAgentEvent(c.line);
    ASSERT_FALSE(decoded.isOk()) << c.line;
    EXPECT_EQ(decoded.status().code(), Status::Code::kCorruption) << c.line;
    EXPECT_NE(decoded.status().message().find(c.expected), std::string::npos) << c.line << "\n"
                                                                              << decoded.status().message();
  }
}

TEST(AgentEventsTest, NewerMajorRejectedNewerMinorAndUnknownsRead) {
  auto newer =
      decodeAgentEvent(R"({"v":"2.0","seq":0,"t":1,"type":"spawned","rank":0,"local_rank":0,"pid":1})");
  ASSERT_FALSE(newer.isOk());
  EXPECT_EQ(newer.status().code(), Status::Code::kUnsupported);
  EXPECT_NE(newer.status().message().find("newer than this reader"), std::string::npos);

  auto minor = decodeAgentEvent(
      R"({"v":"1.7","seq":2,"t":1,"type":"spawned","rank":0,"local_rank":0,"pid":7,"cgroup":"x"})");
  ASSERT_TRUE(minor.isOk()) << minor.status().message();
  EXPECT_EQ(std::get<RankSpawnedEvent>(minor->body).pid, 7);

  auto unknown = decodeAgentEvent(R"({"v":"1.0","seq":0,"t":1,"type":"rank_restarted"})");
  ASSERT_FALSE(unknown.isOk());
  EXPECT_EQ(unknown.status().code(), Status::Code::kNotFound);
}

TEST(AgentEventsTest, FileDecodingSkipsUnknownReportsBadAndHoldsPartialLine) {
  std::string text = encodeAgentEvent({0, 1, RankSpawnedEvent{0, 0, 10}}) + "\n" +  // blank line
                     R"({"v":"1.0","seq":1,"t":1,"type":"future_thing"})" + "\n" + "{oops\n" +
                     encodeAgentEvent({2, 1, RankSpawnedEvent{1, 1, 11}});
  std::string partial = R"({"v":"1.0","seq":3,"t")";
  AgentEventFile file = decodeAgentEvents(text + partial, "agent-a.jsonl");
  ASSERT_EQ(file.events.size(), 2u);
  EXPECT_EQ(file.events[1].seq, 2u);
  EXPECT_EQ(file.skipped, 1u);
  ASSERT_EQ(file.errors.size(), 1u);
  EXPECT_NE(file.errors[0].message().find("agent-a.jsonl line 4: malformed JSON"), std::string::npos)
      << file.errors[0].message();
  EXPECT_EQ(file.complete_bytes, text.size());
}

}  // namespace
}  // namespace fs::protocol
