// The command output read of the OpenSandbox adapter (src/adapters/opensandbox/command_output.h)
// on FakeOpenSandbox, through the adapter's Logs and StreamLogs.
#include "adapters/opensandbox/command_output.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "test/adapters/opensandbox/fake_opensandbox_fixture.h"

namespace ayatori::adapters::opensandbox {
namespace {

using CommandOutputTest = testing::FakeOpenSandboxTest;

// Issue 25: a command's output is read by cursor, one bounded piece at a time, and a follower
// gets only what is new; nothing holds the whole output.
TEST_F(CommandOutputTest, OutputIsReadIncrementallyByCursor) {
  auto r = Request();
  Observation o = adapter_->Ensure(r);
  ASSERT_EQ(o.phase, ExecutionPhase::kRunning) << Describe(o);
  const std::string id = o.references[1].id;
  std::string output;
  for (int i = 0; output.size() < 2 * kLogChunkBytes + 5000; ++i) {
    output += "line " + std::to_string(i) + "\n";
  }
  fake_->FinishCommand(id, 0, "", output);
  const ExecutionKey key = KeyOf(r, o);

  std::string streamed;
  size_t largestPiece = 0;
  ASSERT_TRUE(adapter_
                  ->StreamLogs(key, {},
                               [&](std::string_view d) {
                                 streamed.append(d);
                                 largestPiece = std::max(largestPiece, d.size());
                                 return true;
                               })
                  .ok());
  EXPECT_TRUE(streamed == output) << streamed.size() << " of " << output.size() << " bytes";
  EXPECT_LE(largestPiece, kLogChunkBytes);
  std::vector<std::string> cursors;
  for (const auto& req : fake_->Requests()) {
    if (auto p = req.url.find("/logs?cursor="); p != std::string::npos) {
      cursors.push_back(req.url.substr(p + 13));
    }
  }
  EXPECT_EQ(cursors, (std::vector<std::string>{"0", std::to_string(kLogChunkBytes),
                                               std::to_string(2 * kLogChunkBytes)}));

  auto tail = adapter_->Logs(key, 11);
  ASSERT_TRUE(tail.ok()) << tail.status().ToString();
  EXPECT_EQ(*tail, output.substr(output.size() - 11));

  LogOptions lastTwo;
  lastTwo.tailLines = 2;
  std::string lines;
  ASSERT_TRUE(adapter_
                  ->StreamLogs(key, lastTwo,
                               [&](std::string_view d) {
                                 lines.append(d);
                                 return true;
                               })
                  .ok());
  const size_t cut = output.rfind('\n', output.rfind('\n', output.size() - 2) - 1) + 1;
  EXPECT_EQ(lines, output.substr(cut));
}

}  // namespace
}  // namespace ayatori::adapters::opensandbox
