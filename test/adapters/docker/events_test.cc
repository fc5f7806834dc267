// ParseContainerEvent and EventStreamDecoder: the engine's /events stream as container changes.
#include "adapters/docker/events.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/types.h"

namespace ayatori::adapters::docker {
namespace {

using ::testing::ElementsAre;

// One /events line as dockerd writes it, for a container with the Job labels (when `uid` is set).
std::string Line(const std::string& type, const std::string& action, const std::string& uid) {
  nlohmann::json attrs = {{"image", "alpine"}, {"name", "ayatori-" + uid}};
  if (!uid.empty()) {
    attrs[api::kJobUidLabel] = uid;
    attrs[api::kJobNamespaceLabel] = "ci";
    attrs[api::kJobNameLabel] = "job-" + uid;
  }
  return nlohmann::json{{"status", action},
                        {"id", "3f2a"},
                        {"Type", type},
                        {"Action", action},
                        {"Actor", {{"ID", "3f2a"}, {"Attributes", attrs}}},
                        {"time", 1764403200}}
      .dump();
}

TEST(ParseContainerEventTest, StateChangeOfALabelledContainer) {
  auto e = ParseContainerEvent(Line("container", "die", "u1"));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->action, "die");
  EXPECT_EQ(e->uid, "u1");
  EXPECT_EQ(e->namespace_, "ci");
  EXPECT_EQ(e->name, "job-u1");
}

TEST(ParseContainerEventTest, EverythingElseIsNoChange) {
  for (const std::string& line :
       {Line("image", "pull", "u1"), Line("container", "exec_start: sh", "u1"),
        Line("container", "start", ""), std::string("{not json"), std::string("[]"),
        std::string(R"({"Type":"container","Action":"start"})"),
        std::string(R"({"Type":"container","Action":"start","Actor":{"Attributes":[]}})"),
        std::string(R"({"Type":7,"Action":"start"})")}) {
    EXPECT_FALSE(ParseContainerEvent(line).has_value()) << line;
  }
}

TEST(EventStreamDecoderTest, HandsOutTheChangesOfCompleteLinesHoweverTheStreamIsCut) {
  const std::string stream = Line("container", "start", "u1") + "\n" +
                             Line("container", "attach", "u1") + "\n" +
                             Line("container", "destroy", "u2") + "\n" +
                             Line("container", "die", "u3");  // incomplete: not handed out
  for (size_t piece : {size_t{1}, size_t{7}, stream.size()}) {
    std::vector<std::string> got;
    EventStreamDecoder decoder([&](ContainerEvent&& e) { got.push_back(e.action + " " + e.uid); });
    for (size_t at = 0; at < stream.size(); at += piece) {
      decoder.Feed(std::string_view(stream).substr(at, piece));
    }
    EXPECT_THAT(got, ElementsAre("start u1", "destroy u2")) << "pieces of " << piece;
    decoder.Feed("\n");
    EXPECT_THAT(got, ElementsAre("start u1", "destroy u2", "die u3"));
  }
}

// A line longer than kMaxEventLineBytes is dropped up to its end, never held whole; the
// lines after it are decoded as usual.
TEST(EventStreamDecoderTest, DropsAnOverlongLineAndKeepsDecodingAfterIt) {
  std::vector<std::string> got;
  EventStreamDecoder decoder([&](ContainerEvent&& e) { got.push_back(e.action + " " + e.uid); });
  decoder.Feed(Line("container", "start", "u1") + "\n{\"Type\":\"container\",\"x\":\"");
  const std::string chunk(size_t{64} * 1024, 'a');
  for (size_t sent = 0; sent <= kMaxEventLineBytes; sent += chunk.size()) decoder.Feed(chunk);
  decoder.Feed(chunk + "\"}\n" + Line("container", "die", "u2") + "\n");
  EXPECT_THAT(got, ElementsAre("start u1", "die u2"));
}

}  // namespace
}  // namespace ayatori::adapters::docker
