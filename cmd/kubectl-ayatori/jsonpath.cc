#include "jsonpath.h"

#include <cctype>
#include <optional>

namespace ayatori::plugin {

namespace {

using Node = JsonPathTemplate::Node;
using Step = JsonPathTemplate::Step;
using Wildcard = JsonPathTemplate::Wildcard;

constexpr const char* kSupported =
    ": -o jsonpath supports field paths ({.metadata.name}), indexes ([0], [-1], [*]), "
    "{range ...}{end} and quoted text ({\"\\n\"}); use -o json for anything else";

Status Unsupported(std::string_view what, std::string_view expression) {
  return {StatusCode::kInvalidArgument, "jsonpath: " + std::string(what) + " in \"{" +
                                            std::string(expression) + "}\" is not supported" +
                                            kSupported};
}

Status Invalid(std::string_view what, std::string_view expression) {
  return {StatusCode::kInvalidArgument,
          "jsonpath: " + std::string(what) + " in \"{" + std::string(expression) + "}\""};
}

// A bracket's content: [*], [N], ['key'] or ["key"].
StatusOr<Step> ParseBracket(std::string_view inner, std::string_view expression) {
  if (inner == "*") return Step{Wildcard{}};
  if (inner.size() >= 2 && (inner.front() == '\'' || inner.front() == '"') &&
      inner.back() == inner.front()) {
    return Step{std::string(inner.substr(1, inner.size() - 2))};
  }
  if (!inner.empty() && inner.front() == '?')
    return Unsupported("a filter [" + std::string(inner) + "]", expression);
  if (inner.find(':') != std::string_view::npos)
    return Unsupported("a slice [" + std::string(inner) + "]", expression);
  if (inner.find(',') != std::string_view::npos)
    return Unsupported("a union [" + std::string(inner) + "]", expression);
  size_t start = !inner.empty() && inner.front() == '-' ? 1 : 0;
  if (inner.size() == start || inner.size() > 9)
    return Invalid("bad index [" + std::string(inner) + "]", expression);
  for (size_t i = start; i < inner.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(inner[i])) == 0) {
      return Invalid("bad index [" + std::string(inner) + "]", expression);
    }
  }
  return Step{static_cast<int64_t>(std::stoll(std::string(inner)))};
}

// ".a.b[0]['c'].*" (after an optional $ or @) into steps.
StatusOr<std::vector<Step>> ParsePath(std::string_view expression) {
  std::string_view p = expression;
  if (!p.empty() && (p.front() == '$' || p.front() == '@')) p.remove_prefix(1);
  std::vector<Step> steps;
  size_t i = 0;
  while (i < p.size()) {
    if (p[i] == '.') {
      ++i;
      if (i < p.size() && p[i] == '.') return Unsupported("recursive descent (..)", expression);
      if (i < p.size() && p[i] == '*') {
        steps.emplace_back(Wildcard{});
        ++i;
        continue;
      }
      std::string name;
      while (i < p.size() && p[i] != '.' && p[i] != '[') {
        if (p[i] == '\\' && i + 1 < p.size()) ++i;  // \. is a dot inside a key
        name += p[i++];
      }
      if (name.empty()) {
        if (i == p.size() && steps.empty()) break;  // "{.}": the object itself
        return Invalid("an empty field name", expression);
      }
      steps.emplace_back(std::move(name));
    } else if (p[i] == '[') {
      size_t close = p.find(']', i);
      if (close == std::string_view::npos) return Invalid("an unclosed [", expression);
      auto step = ParseBracket(p.substr(i + 1, close - i - 1), expression);
      if (!step.ok()) return step.status();
      steps.push_back(std::move(*step));
      i = close + 1;
    } else {
      return Invalid("unexpected \"" + std::string(p.substr(i)) +
                         "\" (a path starts with . as in {.metadata.name})",
                     expression);
    }
  }
  return steps;
}

// {"text"}: a JSON-style string with \n, \t, \" and \\.
StatusOr<std::string> ParseQuoted(std::string_view inner) {
  if (inner.size() < 2 || inner.back() != '"') return Invalid("an unclosed quote", inner);
  std::string out;
  for (size_t i = 1; i + 1 < inner.size(); ++i) {
    if (inner[i] != '\\' || i + 2 >= inner.size()) {
      out += inner[i];
      continue;
    }
    switch (inner[++i]) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      default:
        out += inner[i];
        break;
    }
  }
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())) != 0) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0) s.remove_suffix(1);
  return s;
}

// Where the `{` at `open` closes, skipping quoted text; npos when it does not.
size_t ClosingBrace(std::string_view text, size_t open) {
  char quote = 0;
  for (size_t i = open + 1; i < text.size(); ++i) {
    if (quote != 0) {
      if (text[i] == '\\') {
        ++i;
      } else if (text[i] == quote) {
        quote = 0;
      }
    } else if (text[i] == '"' || text[i] == '\'') {
      quote = text[i];
    } else if (text[i] == '}') {
      return i;
    }
  }
  return std::string_view::npos;
}

void Apply(const Step& step, const nlohmann::json& in, std::vector<const nlohmann::json*>& out) {
  if (const auto* field = std::get_if<std::string>(&step)) {
    if (in.is_object()) {
      auto it = in.find(*field);
      if (it != in.end()) out.push_back(&*it);
    }
  } else if (const auto* index = std::get_if<int64_t>(&step)) {
    if (!in.is_array()) return;
    const auto size = static_cast<int64_t>(in.size());
    const int64_t at = *index < 0 ? size + *index : *index;
    if (at >= 0 && at < size) out.push_back(&in[static_cast<size_t>(at)]);
  } else if (in.is_array() || in.is_object()) {
    for (const auto& v : in) out.push_back(&v);
  }
}

std::vector<const nlohmann::json*> Evaluate(const std::vector<Step>& path,
                                            const nlohmann::json& doc) {
  std::vector<const nlohmann::json*> current{&doc};
  for (const auto& step : path) {
    std::vector<const nlohmann::json*> next;
    for (const auto* v : current) Apply(step, *v, next);
    current = std::move(next);
  }
  return current;
}

std::string Text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return v.dump();
}

void Print(const std::vector<Node>& nodes, const nlohmann::json& doc, std::string& out) {
  for (const auto& node : nodes) {
    switch (node.kind) {
      case Node::Kind::kText:
        out += node.text;
        break;
      case Node::Kind::kPath: {
        bool first = true;
        for (const auto* v : Evaluate(node.path, doc)) {
          if (!first) out += ' ';
          out += Text(*v);
          first = false;
        }
        break;
      }
      case Node::Kind::kRange:
        for (const auto* v : Evaluate(node.path, doc)) Print(node.body, *v, out);
        break;
    }
  }
}

}  // namespace

StatusOr<JsonPathTemplate> JsonPathTemplate::Parse(std::string_view text) {
  // The nodes being filled: the template's, then each open range's body.
  std::vector<std::vector<Node>> stack(1);
  std::vector<Node> ranges;  // the open ranges, innermost last
  std::string literal;
  auto flush = [&] {
    if (!literal.empty()) stack.back().push_back({Node::Kind::kText, std::move(literal), {}, {}});
    literal.clear();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '{') {
      literal += text[i];
      continue;
    }
    const size_t close = ClosingBrace(text, i);
    if (close == std::string_view::npos) {
      return Status(StatusCode::kInvalidArgument,
                    "jsonpath: unclosed { in \"" + std::string(text.substr(i)) + "\"");
    }
    const std::string_view inner = Trim(text.substr(i + 1, close - i - 1));
    i = close;
    flush();
    if (!inner.empty() && inner.front() == '"') {
      auto quoted = ParseQuoted(inner);
      if (!quoted.ok()) return quoted.status();
      stack.back().push_back({Node::Kind::kText, std::move(*quoted), {}, {}});
    } else if (inner == "end") {
      if (ranges.empty()) return Invalid("{end} without {range}", inner);
      Node range = std::move(ranges.back());
      ranges.pop_back();
      range.body = std::move(stack.back());
      stack.pop_back();
      stack.back().push_back(std::move(range));
    } else if (inner.starts_with("range ")) {
      auto path = ParsePath(Trim(inner.substr(6)));
      if (!path.ok()) return path.status();
      ranges.push_back({Node::Kind::kRange, "", std::move(*path), {}});
      stack.emplace_back();
    } else if (inner.empty()) {
      return Invalid("an empty expression", inner);
    } else if (inner.starts_with("len") || inner.front() == '\'') {
      return Unsupported("a function or literal", inner);
    } else {
      auto path = ParsePath(inner);
      if (!path.ok()) return path.status();
      stack.back().push_back({Node::Kind::kPath, "", std::move(*path), {}});
    }
  }
  flush();
  if (!ranges.empty()) {
    return Status(StatusCode::kInvalidArgument, "jsonpath: {range} without {end}");
  }
  JsonPathTemplate t;
  t.nodes_ = std::move(stack.front());
  return t;
}

std::string JsonPathTemplate::Execute(const nlohmann::json& doc) const {
  std::string out;
  Print(nodes_, doc, out);
  return out;
}

}  // namespace ayatori::plugin
