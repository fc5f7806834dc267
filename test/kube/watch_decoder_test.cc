// WatchStreamDecoder: watch response bodies decoded line by line, however they are cut.
#include "kube/watch_decoder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ayatori::kube {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const char kResource[] = "jobs.execution.ayatori.ddupan.top";

struct Decoded {
  std::vector<std::string> events;  // "<TYPE> <metadata.name>"
  Status status;
};

// Feeds `stream` in pieces of `piece` bytes; the handler ends the watch after `stopAfter` events.
Decoded Decode(const std::string& stream, size_t piece, size_t stopAfter = SIZE_MAX) {
  Decoded d;
  WatchHandler handler = [&](WatchEvent&& ev) {
    d.events.push_back(std::string(WatchEventTypeName(ev.type)) + " " +
                       ev.object["metadata"].value("name", ""));
    return d.events.size() < stopAfter;
  };
  WatchStreamDecoder decoder(kResource, handler);
  for (size_t at = 0; at < stream.size(); at += piece) {
    if (!decoder.Feed(std::string_view(stream).substr(at, piece))) break;
  }
  d.status = decoder.Finish();
  return d;
}

std::string Event(const std::string& type, const std::string& name) {
  return R"({"type":")" + type + R"(","object":{"metadata":{"name":")" + name + R"("}}})";
}

TEST(WatchDecoderTest, DecodesEveryTypeHoweverTheStreamIsCut) {
  const std::string stream = Event("ADDED", "a") + "\n" + Event("MODIFIED", "a") + "\n\n" +
                             Event("BOOKMARK", "") + "\n" + Event("DELETED", "a") + "\n";
  for (size_t piece : {size_t{1}, size_t{5}, stream.size()}) {
    Decoded d = Decode(stream, piece);
    EXPECT_TRUE(d.status.ok()) << d.status.ToString();
    EXPECT_THAT(d.events, ElementsAre("ADDED a", "MODIFIED a", "BOOKMARK ", "DELETED a"))
        << "pieces of " << piece;
  }
}

TEST(WatchDecoderTest, DecodesALastEventWithoutItsNewline) {
  Decoded d = Decode(Event("ADDED", "a") + "\n" + Event("DELETED", "a"), 3);
  EXPECT_TRUE(d.status.ok());
  EXPECT_THAT(d.events, ElementsAre("ADDED a", "DELETED a"));
}

TEST(WatchDecoderTest, ErrorEventEndsDecodingWithTheCodeOfItsStatus) {
  const std::string stream =
      Event("ADDED", "a") + "\n" +
      R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired",)"
      R"x("message":"too old resource version: 1 (50)"}})x" +
      "\n" + Event("ADDED", "never") + "\n";
  Decoded d = Decode(stream, 4);
  EXPECT_EQ(d.status.code(), StatusCode::kGone);
  EXPECT_THAT(d.status.message(), HasSubstr("too old"));
  EXPECT_THAT(d.events, ElementsAre("ADDED a"));
}

TEST(WatchDecoderTest, HandlerReturningFalseEndsDecodingWithoutError) {
  Decoded d = Decode(Event("ADDED", "a") + "\n" + Event("ADDED", "b") + "\n" + Event("ADDED", "c"),
                     2, /*stopAfter=*/1);
  EXPECT_TRUE(d.status.ok());
  EXPECT_THAT(d.events, ElementsAre("ADDED a"));
}

TEST(WatchDecoderTest, BadLinesAreErrorsThatNameTheResource) {
  struct Case {
    std::string line;
    std::string message;
  };
  for (const Case& c : {Case{"{not json", "undecodable event"}, Case{"[1,2]", "undecodable event"},
                        Case{R"({"type":"ADDED"})", "event without object (ADDED)"},
                        Case{R"({"type":"WEIRD","object":{}})", "unknown event type WEIRD"}}) {
    Decoded d = Decode(c.line + "\n" + Event("ADDED", "after") + "\n", 1);
    EXPECT_EQ(d.status.code(), StatusCode::kInternal) << c.line;
    EXPECT_THAT(d.status.message(), HasSubstr(std::string("watch ") + kResource)) << c.line;
    EXPECT_THAT(d.status.message(), HasSubstr(c.message)) << c.line;
    EXPECT_TRUE(d.events.empty()) << c.line;
  }
}

// Found by fuzz/watch_fuzzer.cc: a "type" that was not a string threw out of the decoder.
TEST(WatchDecoderTest, FieldsOfAnotherTypeAreErrorsNotCrashes) {
  for (const char* line : {R"({"type":{"metadata":{}},"object":{}})", R"({"type":1,"object":{}})",
                           R"({"type":null})"}) {
    Decoded d = Decode(std::string(line) + "\n", 1);
    EXPECT_EQ(d.status.code(), StatusCode::kInternal) << line;
    EXPECT_THAT(d.status.message(), HasSubstr("event type is not a string")) << line;
  }
  // An ERROR event's metav1.Status with fields of other types: they read as absent.
  Decoded d =
      Decode(R"({"type":"ERROR","object":{"kind":"Status","code":"410","reason":7,"message":["x"],)"
             R"("details":{"retryAfterSeconds":1e300,"causes":[{"field":false}]}}})",
             1);
  EXPECT_EQ(d.status.code(), StatusCode::kInternal);
  EXPECT_EQ(d.status.message(), "the server reported an error (HTTP 0)");
  d = Decode(R"({"type":"ERROR","object":{"code":9999999999,"reason":"Expired"}})", 1);
  EXPECT_EQ(d.status.code(), StatusCode::kGone);
  EXPECT_EQ(d.status.message(), "the server reported Expired (HTTP 0)");
}

TEST(WatchDecoderTest, FeedAfterTheEndDecodesNothing) {
  std::vector<std::string> names;
  WatchHandler handler = [&](WatchEvent&& ev) {
    names.push_back(ev.object["metadata"]["name"].get<std::string>());
    return false;
  };
  WatchStreamDecoder decoder(kResource, handler);
  EXPECT_FALSE(decoder.Feed(Event("ADDED", "a") + "\n"));
  EXPECT_FALSE(decoder.Feed(Event("ADDED", "b") + "\n"));
  EXPECT_TRUE(decoder.Finish().ok());
  EXPECT_THAT(names, ElementsAre("a"));
}

}  // namespace
}  // namespace ayatori::kube
