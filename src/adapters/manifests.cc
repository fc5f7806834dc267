#include "adapters/manifests.h"

#include <sstream>

#include "api/types.h"

namespace ayatori::adapters {

namespace {

constexpr const char* kParametersResources = "parameters-resources";
constexpr const char* kJobClassParametersRules = "jobclass-parameters-rules";
constexpr const char* kBegin = "# BEGIN GENERATED ";
constexpr const char* kEnd = "# END GENERATED ";

Status Invalid(const std::string& message) { return Status(StatusCode::kInvalidArgument, message); }

// Names and reasons go into double-quoted YAML strings holding single-quoted CEL strings, as
// written: none of these may appear there.
Status Writable(const AdapterDescriptor& d, const std::string& what, const std::string& value) {
  if (value.find_first_of("'\"\\\n\r") != std::string::npos) {
    return Invalid("the adapter for " + d.controllerName + ": its " + what + " \"" + value +
                   "\" has a quote, a backslash or a line break, which the generated manifests "
                   "cannot hold");
  }
  return Status::Ok();
}

// "a Kind" or "an Kind", as the kind's first letter is read.
std::string WithArticle(const std::string& kind) {
  const bool vowel = !kind.empty() && std::string("AEIOUaeiou").find(kind[0]) != std::string::npos;
  return (vowel ? "an " : "a ") + kind;
}

StatusOr<std::vector<std::string>> ParametersResources(
    const std::vector<AdapterDescriptor>& descriptors) {
  std::string resources = "jobclasses";
  for (const auto& d : descriptors) {
    if (!d.parameters) continue;
    if (d.parameters->group != api::kGroup) {
      return Invalid("the adapter for " + d.controllerName + ": its parameters kind " +
                     d.parameters->kind + " is of the group " + d.parameters->group + ", not " +
                     api::kGroup + "; its informer needs a ClusterRole rule of its own");
    }
    if (Status s = Writable(d, "parameters resource", d.parameters->resource); !s.ok()) return s;
    resources += ", " + d.parameters->resource;
  }
  return std::vector<std::string>{"resources: [" + resources + "]"};
}

// self.controllerName != '<name>' || !has(self.parametersRef) || (self.parametersRef.group ==
// '<group>' && self.parametersRef.kind == '<Kind>'); with parametersRequiredBecause the class
// must name one: ... || (has(self.parametersRef) && ... && ...).
StatusOr<std::vector<std::string>> JobClassParametersRules(
    const std::vector<AdapterDescriptor>& descriptors) {
  std::vector<std::string> lines;
  for (const auto& d : descriptors) {
    if (!d.parameters) continue;
    const ParametersKind& p = *d.parameters;
    for (const auto& [what, value] :
         {std::pair<std::string, std::string>{"controllerName", d.controllerName},
          {"parameters group", p.group},
          {"parameters kind", p.kind},
          {"parametersRequiredBecause", d.parametersRequiredBecause}}) {
      if (Status s = Writable(d, what, value); !s.ok()) return s;
    }
    const std::string names = "self.parametersRef.group == '" + p.group +
                              "' && self.parametersRef.kind == '" + p.kind + "'";
    const bool required = !d.parametersRequiredBecause.empty();
    lines.push_back("- rule: \"self.controllerName != '" + d.controllerName + "' || " +
                    (required ? "(has(self.parametersRef) && " + names + ")"
                              : "!has(self.parametersRef) || (" + names + ")") +
                    "\"");
    lines.push_back("  message: \"spec.parametersRef of a JobClass for " + d.controllerName +
                    " must name " + WithArticle(p.kind) + " (group " + p.group + ")" +
                    (required ? ": " + d.parametersRequiredBecause : "") + "\"");
    lines.emplace_back("  fieldPath: .parametersRef");
  }
  return lines;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The marker on `line` (BEGIN or END) with its block's name, or "" when it is none.
std::string Marker(const std::string& line, const std::string& marker) {
  const size_t start = line.find_first_not_of(' ');
  if (start == std::string::npos || line.compare(start, marker.size(), marker) != 0) return "";
  const std::string rest = line.substr(start + marker.size());
  return rest.substr(0, rest.find(' '));
}

}  // namespace

const std::vector<GeneratedBlock>& GeneratedBlocks() {
  static const std::vector<GeneratedBlock> blocks = {
      {"config/rbac/role.yaml", kParametersResources},
      {"config/namespaced/rbac.yaml", kParametersResources},
      {"config/crd/execution.ayatori.ddupan.top_jobclasses.yaml", kJobClassParametersRules},
  };
  return blocks;
}

StatusOr<std::vector<std::string>> GeneratedLines(
    const std::string& name, const std::vector<AdapterDescriptor>& descriptors) {
  if (name == kParametersResources) return ParametersResources(descriptors);
  if (name == kJobClassParametersRules) return JobClassParametersRules(descriptors);
  return Invalid("no generated block is called \"" + name + "\"");
}

StatusOr<std::string> ReplaceGeneratedBlock(const std::string& text, const std::string& name,
                                            const std::vector<std::string>& lines) {
  const std::vector<std::string> in = Lines(text);
  std::vector<std::string> out;
  int found = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    out.push_back(in[i]);
    if (Marker(in[i], kBegin) != name) continue;
    const std::string at = "line " + std::to_string(i + 1);
    if (++found > 1) return Invalid(at + ": a second block " + name);
    size_t end = i + 1;
    while (end < in.size() && Marker(in[end], kEnd) != name) ++end;
    if (end == in.size()) return Invalid(at + ": the block " + name + " has no END line");
    const std::string indent = in[i].substr(0, in[i].find_first_not_of(' '));
    for (const auto& line : lines) out.push_back(indent + line);
    out.push_back(in[end]);
    i = end;
  }
  if (found == 0) return Invalid("no block " + name + " (a line \"" + kBegin + name + "\")");
  std::string result;
  for (const auto& line : out) result += line + "\n";
  // Lines() drops the last line's newline with the line: keep a text without one as it was.
  if (!text.empty() && text.back() != '\n') result.pop_back();
  return result;
}

StatusOr<std::string> GenerateManifest(const std::string& file, const std::string& text,
                                       const std::vector<AdapterDescriptor>& descriptors) {
  std::string out = text;
  for (const auto& block : GeneratedBlocks()) {
    if (block.file != file) continue;
    auto lines = GeneratedLines(block.name, descriptors);
    if (!lines.ok()) return lines.status();
    auto replaced = ReplaceGeneratedBlock(out, block.name, *lines);
    if (!replaced.ok()) return Invalid(file + ": " + replaced.status().message());
    out = std::move(*replaced);
  }
  return out;
}

}  // namespace ayatori::adapters
