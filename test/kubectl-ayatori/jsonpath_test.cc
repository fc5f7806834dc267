// -o jsonpath (cmd/kubectl-ayatori/jsonpath.h): kubectl's template subset on fixed documents, and
// a clear refusal of what is not supported.
#include "jsonpath.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ayatori::plugin {
namespace {

using ::testing::HasSubstr;

const nlohmann::json kJob = nlohmann::json::parse(R"({
  "kind": "Job",
  "metadata": {"name": "hello", "labels": {"team": "ci", "app.kubernetes.io/name": "demo"}},
  "spec": {"task": {"image": "busybox", "args": ["echo", "hi"]}},
  "status": {"conditions": [{"type": "Accepted", "status": "True"},
                            {"type": "Succeeded", "status": "False"}],
             "result": {"exitCode": 3}}
})");

const nlohmann::json kList = {
    {"kind", "List"},
    {"items",
     {{{"metadata", {{"name", "a"}}}, {"status", {{"x", 1}}}}, {{"metadata", {{"name", "b"}}}}}}};

std::string Apply(const std::string& text, const nlohmann::json& doc = kJob) {
  auto t = JsonPathTemplate::Parse(text);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? t->Execute(doc) : "";
}

std::string ParseError(const std::string& text) {
  auto t = JsonPathTemplate::Parse(text);
  EXPECT_FALSE(t.ok()) << text;
  return t.ok() ? "" : t.status().message();
}

TEST(JsonPathTest, FieldsIndexesAndText) {
  EXPECT_EQ(Apply("{.metadata.name}"), "hello");
  EXPECT_EQ(Apply("{$.metadata.name}"), "hello");
  EXPECT_EQ(Apply("name={.metadata.name} exit={.status.result.exitCode}"), "name=hello exit=3");
  EXPECT_EQ(Apply("{.status.conditions[0].type}"), "Accepted");
  EXPECT_EQ(Apply("{.status.conditions[-1].type}"), "Succeeded");
  EXPECT_EQ(Apply("{.status.conditions[*].type}"), "Accepted Succeeded");
  EXPECT_EQ(Apply("{.spec.task.args}"), R"(["echo","hi"])");
  EXPECT_EQ(Apply("{.metadata.labels['team']}"), "ci");
  EXPECT_EQ(Apply(R"({.metadata.labels.app\.kubernetes\.io/name})"), "demo");
  EXPECT_EQ(Apply("{.metadata.labels.*}"), "demo ci");  // object order: by key
  EXPECT_EQ(Apply(R"({.metadata.name}{"\n"})"), "hello\n");
  EXPECT_EQ(Apply(R"({.metadata.name}{"\t"}{"}"})"), "hello\t}");
  EXPECT_EQ(Apply("{.metadata}"), R"({"labels":{"app.kubernetes.io/name":"demo","team":"ci"},)"
                                  R"("name":"hello"})");
}

TEST(JsonPathTest, MissingFieldsAndIndexesPrintNothing) {
  EXPECT_EQ(Apply("[{.status.startTime}]"), "[]");
  EXPECT_EQ(Apply("[{.status.conditions[5].type}]"), "[]");
  EXPECT_EQ(Apply("[{.metadata.name.deeper}]"), "[]");
}

TEST(JsonPathTest, ItemsAndRange) {
  EXPECT_EQ(Apply("{.items[*].metadata.name}", kList), "a b");
  EXPECT_EQ(Apply(R"({range .items[*]}{.metadata.name}{"\t"}{.status.x}{"\n"}{end})", kList),
            "a\t1\nb\t\n");
  EXPECT_EQ(Apply(R"({range .items[*]}[{range .metadata.*}{@}{end}]{end})", kList), "[a][b]");
}

TEST(JsonPathTest, UnsupportedAndInvalidTemplatesSaySo) {
  EXPECT_THAT(ParseError(R"({.items[?(@.kind=="Job")].metadata.name})"),
              HasSubstr("a filter [?(@.kind==\"Job\")] in"));
  EXPECT_THAT(ParseError("{.items[0:2]}"),
              HasSubstr("a slice [0:2] in \"{.items[0:2]}\" is not "
                        "supported: -o jsonpath supports field paths"));
  EXPECT_THAT(ParseError("{.items[0,1]}"), HasSubstr("a union [0,1]"));
  EXPECT_THAT(ParseError("{..name}"), HasSubstr("recursive descent (..)"));
  EXPECT_THAT(ParseError("{.metadata.name"), HasSubstr("unclosed {"));
  EXPECT_THAT(ParseError("{range .items[*]}{.x}"), HasSubstr("{range} without {end}"));
  EXPECT_THAT(ParseError("{.x}{end}"), HasSubstr("{end} without {range}"));
  EXPECT_THAT(ParseError("{metadata.name}"), HasSubstr("a path starts with ."));
  EXPECT_THAT(ParseError("{.items[x]}"), HasSubstr("bad index [x]"));
  EXPECT_THAT(ParseError("{.items[0}"), HasSubstr("unclosed ["));
  EXPECT_THAT(ParseError("{}"), HasSubstr("an empty expression"));
}

}  // namespace
}  // namespace ayatori::plugin
