// The check the control-seq race tests share (control_file_test locally,
// remote_control_test over SFTP): control/ lists exactly the commands the writers
// were told they issued, each under its own seq with its own verb, none rejected.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <map>

#include "backend/protocol/wire/control_file.h"

namespace fs::protocol::testing {

inline void expectListingIsWhatWasIssued(const std::filesystem::path& runDir,
                                         const std::map<std::uint64_t, ControlVerb>& issued) {
  auto listing = listControl(runDir);
  ASSERT_TRUE(listing.isOk()) << listing.status().message();
  EXPECT_TRUE(listing->rejected.empty()) << listing->rejected.front().reason.message();
  ASSERT_EQ(listing->pending.size(), issued.size());
  for (const auto& p : listing->pending) {
    auto it = issued.find(p.command.seq);
    ASSERT_NE(it, issued.end()) << p.path;
    EXPECT_EQ(p.command.verb, it->second) << p.path;
  }
}

}  // namespace fs::protocol::testing
