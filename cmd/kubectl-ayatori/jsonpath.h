// `-o jsonpath=TEMPLATE`: the part of kubectl's JSONPath templates that scripts use, as a pure
// function of the object (test/kubectl-ayatori/jsonpath_test.cc). Supported: text outside braces,
// field paths ({.metadata.name}, {$.spec.task.image}, {.metadata.labels.app\.kubernetes\.io/name},
// {.metadata.labels['team']}), indexes ({.status.conditions[0].type}, [-1]), wildcards
// ({.items[*].metadata.name}, {.metadata.labels.*}), {range .items[*]}...{end} and quoted text
// ({"\n"}, {"\t"}). Filters, slices, unions and recursive descent are refused at parse time with
// a message that says so, never half-evaluated.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ayatori/status.h"

namespace ayatori::plugin {

class JsonPathTemplate {
 public:
  // kInvalidArgument naming the part of `text` that is not understood or not supported.
  static StatusOr<JsonPathTemplate> Parse(std::string_view text);

  // The template applied to `doc`. As kubectl get does by default (--allow-missing-template-keys),
  // a field that is absent yields nothing; several results of one expression are joined by a
  // space; strings print raw, objects and arrays as compact JSON.
  std::string Execute(const nlohmann::json& doc) const;

  struct Wildcard {};
  using Step = std::variant<std::string, int64_t, Wildcard>;  // field, index, [*] or .*
  struct Node {
    enum class Kind { kText, kPath, kRange };
    Kind kind = Kind::kText;
    std::string text;        // kText
    std::vector<Step> path;  // kPath, kRange
    std::vector<Node> body;  // kRange: what is printed for each result
  };

 private:
  std::vector<Node> nodes_;
};

}  // namespace ayatori::plugin
