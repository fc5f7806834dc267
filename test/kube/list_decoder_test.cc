// DecodeListStreaming: list responses decoded item by item.
#include "kube/list_decoder.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ayatori::kube {
namespace {

using nlohmann::json;

struct Decoded {
  Status status;
  ObjectList list;
  std::vector<json> items;
};

Decoded Decode(const std::string& body, const std::string& apiVersion = "v1") {
  Decoded d;
  d.status = DecodeListStreaming(body, apiVersion, &d.list,
                                 [&](json&& item) { d.items.push_back(std::move(item)); });
  return d;
}

TEST(ListDecoderTest, VisitsEachItemWithItsKindAndTheListsMetadata) {
  Decoded d = Decode(R"({"kind":"PodList","apiVersion":"v1",
      "metadata":{"resourceVersion":"42","continue":"next-page"},
      "items":[{"metadata":{"name":"a"},"spec":{"volumes":[{"configMap":{"items":[{"key":"k"}]}}]}},
               {"metadata":{"name":"b"},"status":{"phase":"Running","ok":true,"n":-1,"f":1.5,"z":null}}]})");
  ASSERT_TRUE(d.status.ok()) << d.status.ToString();
  EXPECT_EQ(d.list.resourceVersion, "42");
  EXPECT_EQ(d.list.continueToken, "next-page");
  EXPECT_TRUE(d.list.items.empty()) << "items go to visit, not into the list";
  ASSERT_EQ(d.items.size(), 2u);
  EXPECT_EQ(d.items[0]["kind"], "Pod");
  EXPECT_EQ(d.items[0]["apiVersion"], "v1");
  EXPECT_EQ(d.items[0]["metadata"]["name"], "a");
  // An "items" key below the root is part of its item.
  EXPECT_EQ(d.items[0]["spec"]["volumes"][0]["configMap"]["items"][0]["key"], "k");
  EXPECT_EQ(d.items[1]["status"],
            json::parse(R"({"phase":"Running","ok":true,"n":-1,"f":1.5,"z":null})"));
}

TEST(ListDecoderTest, ItemsThatCarryKindAndApiVersionKeepThem) {
  Decoded d = Decode(
      R"({"kind":"JobList","apiVersion":"execution.ayatori.ddupan.top/v1alpha1","metadata":{},
          "items":[{"kind":"Job","apiVersion":"execution.ayatori.ddupan.top/v1alpha1","metadata":{"name":"x"}},
                   {"metadata":{"name":"y"}}]})",
      "execution.ayatori.ddupan.top/v1alpha1");
  ASSERT_TRUE(d.status.ok());
  ASSERT_EQ(d.items.size(), 2u);
  EXPECT_EQ(d.items[0]["kind"], "Job");
  EXPECT_EQ(d.items[1]["kind"], "Job");
  EXPECT_EQ(d.items[1]["apiVersion"], "execution.ayatori.ddupan.top/v1alpha1");
}

TEST(ListDecoderTest, EmptyAndMissingItemsAreAnEmptyList) {
  for (const char* body :
       {R"({"kind":"PodList","metadata":{"resourceVersion":"7"},"items":[]})",
        R"({"kind":"PodList","metadata":{"resourceVersion":"7"}})",
        R"({"kind":"PodList","metadata":{"resourceVersion":"7"},"items":null})"}) {
    Decoded d = Decode(body);
    ASSERT_TRUE(d.status.ok()) << body;
    EXPECT_TRUE(d.items.empty()) << body;
    EXPECT_EQ(d.list.resourceVersion, "7") << body;
    EXPECT_TRUE(d.list.continueToken.empty());
  }
}

TEST(ListDecoderTest, BrokenBodiesAreErrorsNamingWhere) {
  Decoded cut = Decode(R"({"kind":"PodList","items":[{"metadata":{"name":"a"}},{"metadata":)");
  EXPECT_EQ(cut.status.code(), StatusCode::kInternal);
  EXPECT_NE(cut.status.message().find("at byte"), std::string::npos) << cut.status.ToString();
  EXPECT_EQ(cut.items.size(), 1u) << "the items before the damage were visited";

  for (const char* body : {"", "[]", "\"PodList\"", "<html>502 Bad Gateway</html>"}) {
    Decoded d = Decode(body);
    EXPECT_EQ(d.status.code(), StatusCode::kInternal) << body;
    EXPECT_TRUE(d.items.empty()) << body;
  }
}

// The pattern of the crash fuzz/watch_fuzzer.cc found (nlohmann value() throws on another type):
// metadata fields that were not strings threw out of the decoder.
TEST(ListDecoderTest, MetadataFieldsThatAreNotStringsAreErrors) {
  for (const char* body : {R"({"kind":"PodList","metadata":{"resourceVersion":5},"items":[]})",
                           R"({"kind":"PodList","metadata":{"continue":{}},"items":[]})"}) {
    Decoded d = Decode(body);
    EXPECT_EQ(d.status.code(), StatusCode::kInternal) << body;
    EXPECT_NE(d.status.message().find("that is not a string"), std::string::npos) << body;
  }
  Decoded d = Decode(R"({"kind":"PodList","metadata":{"resourceVersion":null},"items":[]})");
  EXPECT_TRUE(d.status.ok()) << "null is absent";
}

}  // namespace
}  // namespace ayatori::kube
