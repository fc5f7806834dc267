// The manifests that name backends (src/adapters/manifests.h), checked against the shipped
// backends' descriptors (src/adapters/shipped_backends.h): the generator of their blocks, that
// the committed blocks are what `make generate` writes, and, read back as YAML, the controller's
// RBAC rules (config/rbac/role.yaml), the JobClass CRD's CEL rules that tie a controllerName to
// its parameters kind (config/crd/execution.ayatori.ddupan.top_jobclasses.yaml) and the CRD list
// (config/crd/Kustomization), the one list written by hand. A backend added without its lines
// there fails here, with a message naming the file, the line and what to do (docs/development.md
// "Adding a backend").
#include "adapters/manifests.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "adapters/registry.h"
#include "adapters/shipped_backends.h"
#include "api/types.h"
#include "test/support/testenv.h"

namespace ayatori::adapters {
namespace {

namespace fs = std::filesystem;

constexpr const char* kRole = "config/rbac/role.yaml";
constexpr const char* kJobClassCrd = "config/crd/execution.ayatori.ddupan.top_jobclasses.yaml";
constexpr const char* kKustomization = "config/crd/Kustomization";

std::string Source(const std::string& relative) {
  return testing::RequiredEnv("AYATORI_SOURCE_DIR") + "/" + relative;
}

std::string ReadSource(const std::string& relative) {
  std::ifstream in(Source(relative));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

AdapterDescriptor Described(const std::string& controllerName, const std::string& kind,
                            const std::string& resource) {
  AdapterDescriptor d;
  d.controllerName = controllerName;
  d.parameters = ParametersKind{api::kGroup, api::kVersion, kind, resource, {}};
  return d;
}

// The generated lines for a backend whose parameters are optional, one whose parameters are
// required (with the reason in the message, and "an" before a vowel) and one without parameters.
TEST(GeneratedLinesTest, WriteTheRbacResourcesAndOneCelRulePerParametersKind) {
  AdapterDescriptor optional = Described("example.com/plain", "PlainParameters", "plainparameters");
  AdapterDescriptor required = Described("example.com/box", "OrbitParameters", "boxparameters");
  required.parametersRequiredBecause = "it holds the endpoint";
  AdapterDescriptor none;
  none.controllerName = "example.com/none";
  const std::vector<AdapterDescriptor> descriptors = {optional, none, required};

  auto resources = GeneratedLines("parameters-resources", descriptors);
  ASSERT_TRUE(resources.ok()) << resources.status().message();
  EXPECT_EQ(*resources,
            std::vector<std::string>{"resources: [jobclasses, plainparameters, boxparameters]"});

  auto rules = GeneratedLines("jobclass-parameters-rules", descriptors);
  ASSERT_TRUE(rules.ok()) << rules.status().message();
  const std::string g = api::kGroup;
  EXPECT_EQ(*rules,
            (std::vector<std::string>{
                "- rule: \"self.controllerName != 'example.com/plain' || !has(self.parametersRef) "
                "|| (self.parametersRef.group == '" +
                    g + "' && self.parametersRef.kind == 'PlainParameters')\"",
                "  message: \"spec.parametersRef of a JobClass for example.com/plain must name a "
                "PlainParameters (group " +
                    g + ")\"",
                "  fieldPath: .parametersRef",
                "- rule: \"self.controllerName != 'example.com/box' || (has(self.parametersRef) && "
                "self.parametersRef.group == '" +
                    g + "' && self.parametersRef.kind == 'OrbitParameters')\"",
                "  message: \"spec.parametersRef of a JobClass for example.com/box must name an "
                "OrbitParameters (group " +
                    g + "): it holds the endpoint\"",
                "  fieldPath: .parametersRef",
            }));
}

TEST(GeneratedLinesTest, RefusesWhatTheManifestsCannotHold) {
  AdapterDescriptor other = Described("example.com/x", "XParameters", "xparameters");
  other.parameters->group = "other.example.com";
  auto otherGroup = GeneratedLines("parameters-resources", {other});
  EXPECT_EQ(otherGroup.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(otherGroup.status().message().find("a ClusterRole rule of its own"), std::string::npos)
      << otherGroup.status().message();

  // A quote would end the CEL string early and make the rule say something else.
  AdapterDescriptor quoted = Described("example.com/x' || true || '", "XParameters", "x");
  auto injected = GeneratedLines("jobclass-parameters-rules", {quoted});
  EXPECT_EQ(injected.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(injected.status().message().find("controllerName"), std::string::npos)
      << injected.status().message();
  AdapterDescriptor reason = Described("example.com/x", "XParameters", "x");
  reason.parametersRequiredBecause = "line\nbreak";
  EXPECT_EQ(GeneratedLines("jobclass-parameters-rules", {reason}).status().code(),
            StatusCode::kInvalidArgument);

  EXPECT_EQ(GeneratedLines("no-such-block", {}).status().code(), StatusCode::kInvalidArgument);
}

// Only the lines between the markers change, indented as the BEGIN line.
TEST(ReplaceGeneratedBlockTest, RewritesOnlyTheMarkedLines) {
  const std::string text =
      "a: 1\n"
      "  # BEGIN GENERATED b (make generate)\n"
      "  old: 1\n"
      "  old: 2\n"
      "  # END GENERATED b\n"
      "c: 3\n";
  auto out = ReplaceGeneratedBlock(text, "b", {"new: [x, y]", "- z"});
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(*out,
            "a: 1\n"
            "  # BEGIN GENERATED b (make generate)\n"
            "  new: [x, y]\n"
            "  - z\n"
            "  # END GENERATED b\n"
            "c: 3\n");
  // Written again: the same text.
  EXPECT_EQ(*ReplaceGeneratedBlock(*out, "b", {"new: [x, y]", "- z"}), *out);
  // A text without a last newline keeps it so.
  EXPECT_EQ(*ReplaceGeneratedBlock("# BEGIN GENERATED b\n# END GENERATED b", "b", {"x"}),
            "# BEGIN GENERATED b\nx\n# END GENERATED b");
}

TEST(ReplaceGeneratedBlockTest, RefusesAMissingRepeatedOrUnendedBlock) {
  auto missing = ReplaceGeneratedBlock("a: 1\n", "b", {});
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("# BEGIN GENERATED b"), std::string::npos)
      << missing.status().message();

  auto unended = ReplaceGeneratedBlock("a: 1\n# BEGIN GENERATED b\nx: 1\n", "b", {});
  EXPECT_EQ(unended.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unended.status().message().find("line 2"), std::string::npos)
      << unended.status().message();
  // Another block's END does not end this one.
  EXPECT_FALSE(ReplaceGeneratedBlock("# BEGIN GENERATED b\n# END GENERATED bb\n", "b", {}).ok());

  auto twice = ReplaceGeneratedBlock(
      "# BEGIN GENERATED b\n# END GENERATED b\n# BEGIN GENERATED b\n# END GENERATED b\n", "b", {});
  EXPECT_EQ(twice.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(twice.status().message().find("line 3"), std::string::npos) << twice.status().message();
}

// The committed blocks are what `make generate` writes from the shipped backends.
TEST(GeneratedManifestsTest, TheCommittedBlocksAreWhatMakeGenerateWrites) {
  std::set<std::string> files;
  for (const auto& block : GeneratedBlocks()) files.insert(block.file);
  ASSERT_EQ(files.size(), 3U);
  for (const auto& file : files) {
    const std::string committed = ReadSource(file);
    ASSERT_FALSE(committed.empty()) << file << ": cannot read it";
    auto generated = GenerateManifest(file, committed, ShippedDescriptors());
    ASSERT_TRUE(generated.ok()) << generated.status().message();
    EXPECT_EQ(*generated, committed)
        << file << " is not what `make generate` writes from the shipped backends' descriptors "
        << "(src/adapters/shipped_backends.cc): run make generate";
  }
}

// "file:line" of a node (yaml-cpp counts lines from 0).
std::string At(const std::string& file, const YAML::Node& node) {
  return file + ":" + std::to_string(node.Mark().line + 1);
}

std::vector<std::string> Strings(const YAML::Node& list) {
  std::vector<std::string> out;
  for (const auto& item : list) out.push_back(item.as<std::string>());
  return out;
}

bool Contains(const std::vector<std::string>& list, const std::string& value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

class ManifestsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const auto& d : ShippedDescriptors()) {
      if (d.parameters) kinds_.push_back(d);
    }
    ASSERT_FALSE(kinds_.empty());
  }
  // The descriptors with a parameters kind: the ones the manifests name.
  std::vector<AdapterDescriptor> kinds_;
};

// Every backend folder with a descriptor is shipped, so the controller registers it and the
// manifests name it.
TEST_F(ManifestsTest, EveryBackendFolderWithADescriptorIsShipped) {
  std::set<std::string> served;
  for (const auto& d : ShippedDescriptors()) {
    served.insert(d.controllerName.substr(d.controllerName.rfind('/') + 1));
  }
  for (const auto& entry : fs::directory_iterator(Source("src/adapters"))) {
    if (!entry.is_directory() || !fs::exists(entry.path() / "descriptor.h")) continue;
    const std::string folder = entry.path().filename().string();
    EXPECT_TRUE(served.contains(folder))
        << "src/adapters/" << folder << "/descriptor.h: add the backend's entry to "
        << "kShippedBackends in src/adapters/shipped_backends.cc, then run make generate";
  }
}

// The ClusterRole's rule for the informers (list, watch of jobclasses) names every parameters
// resource of the registered kinds, and nothing that no adapter registers.
TEST_F(ManifestsTest, TheRbacInformerRuleListsExactlyTheRegisteredParametersResources) {
  YAML::Node rule;
  for (const auto& doc : YAML::LoadAllFromFile(Source(kRole))) {
    if (doc["kind"].as<std::string>("") != "ClusterRole") continue;
    for (const auto& r : doc["rules"]) {
      if (Contains(Strings(r["apiGroups"]), api::kGroup) &&
          Contains(Strings(r["resources"]), "jobclasses")) {
        rule.reset(r);
      }
    }
  }
  ASSERT_TRUE(rule) << kRole << ": no ClusterRole rule for " << api::kGroup << " jobclasses";
  const std::vector<std::string> verbs = Strings(rule["verbs"]);
  EXPECT_TRUE(Contains(verbs, "list") && Contains(verbs, "watch")) << At(kRole, rule["verbs"]);
  const std::vector<std::string> resources = Strings(rule["resources"]);
  std::set<std::string> expected = {"jobclasses"};
  for (const auto& d : kinds_) {
    const ParametersKind& p = *d.parameters;
    EXPECT_EQ(p.group, api::kGroup)
        << d.controllerName << ": a parameters kind of another group needs its own rule";
    expected.insert(p.resource);
    EXPECT_TRUE(Contains(resources, p.resource))
        << At(kRole, rule["resources"]) << ": " << p.resource
        << " is missing from this rule's resources (the parameters informer of " << d.controllerName
        << "): run make generate";
  }
  for (const auto& r : resources) {
    EXPECT_TRUE(expected.contains(r))
        << At(kRole, rule["resources"]) << ": " << r
        << " is not the parameters resource of any registered adapter: run make generate";
  }
}

// The JobClass CRD has, for every registered adapter with a parameters kind, the CEL rule that a
// class for its controllerName names that kind, and no such rule for a controllerName that no
// adapter serves.
TEST_F(ManifestsTest, TheJobClassCelRulesTieExactlyTheRegisteredControllerNamesToTheirKinds) {
  const YAML::Node crd = YAML::LoadFile(Source(kJobClassCrd));
  const YAML::Node spec =
      crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
  ASSERT_TRUE(spec && spec["x-kubernetes-validations"])
      << kJobClassCrd << ": spec.x-kubernetes-validations is missing";
  const YAML::Node rules = spec["x-kubernetes-validations"];
  // self.controllerName != '<name>' || ... self.parametersRef.group == '<group>' &&
  // self.parametersRef.kind == '<Kind>'
  static const std::regex kTie(
      R"(^self\.controllerName != '([^']+)' \|\|.*self\.parametersRef\.group == '([^']+)' && )"
      R"(self\.parametersRef\.kind == '([^']+)'\)$)");
  struct Tie {
    std::string group, kind, at;
  };
  std::map<std::string, Tie> ties;  // by controllerName
  for (const auto& r : rules) {
    const std::string text = r["rule"].as<std::string>("");
    std::smatch m;
    if (!std::regex_match(text, m, kTie)) {
      EXPECT_EQ(text.find("self.controllerName != '"), std::string::npos)
          << At(kJobClassCrd, r) << ": a rule naming a controllerName that is not of the form "
          << "self.controllerName != '<name>' || ... (self.parametersRef.group == '<group>' && "
          << "self.parametersRef.kind == '<Kind>')";
      continue;
    }
    EXPECT_FALSE(ties.contains(m[1])) << At(kJobClassCrd, r) << ": a second rule for " << m[1];
    ties[m[1]] = {m[2], m[3], At(kJobClassCrd, r)};
    bool registered = false;
    for (const auto& d : kinds_) registered = registered || d.controllerName == m[1].str();
    EXPECT_TRUE(registered) << At(kJobClassCrd, r) << ": no registered adapter serves " << m[1]
                            << ": run make generate";
  }
  for (const auto& d : kinds_) {
    const ParametersKind& p = *d.parameters;
    auto it = ties.find(d.controllerName);
    ASSERT_NE(it, ties.end()) << At(kJobClassCrd, rules) << ": no rule for " << d.controllerName
                              << ": run make generate";
    EXPECT_TRUE(it->second.group == p.group && it->second.kind == p.kind)
        << it->second.at << ": the rule for " << d.controllerName << " names " << it->second.kind
        << " (group " << it->second.group << "); the adapter's kind is " << p.kind << " (group "
        << p.group << ")";
  }
}

// config/crd/Kustomization lists the CRD of every registered parameters kind, and that CRD
// defines the kind under the resource name the descriptor gives (the informer's).
TEST_F(ManifestsTest, EveryRegisteredParametersKindHasItsCrdInTheKustomization) {
  const YAML::Node k = YAML::LoadFile(Source(kKustomization));
  const std::vector<std::string> listed = Strings(k["resources"]);
  std::set<std::string> expected = {"execution.ayatori.ddupan.top_jobs.yaml",
                                    "execution.ayatori.ddupan.top_jobclasses.yaml"};
  for (const auto& d : kinds_) {
    const ParametersKind& p = *d.parameters;
    const std::string file = p.group + "_" + p.resource + ".yaml";
    expected.insert(file);
    EXPECT_TRUE(Contains(listed, file))
        << At(kKustomization, k["resources"]) << ": add \"- " << file << "\" to resources";
    const std::string path = "config/crd/" + file;
    ASSERT_TRUE(fs::exists(Source(path))) << path << ": the CRD of " << p.kind << " is missing";
    const YAML::Node crd = YAML::LoadFile(Source(path));
    EXPECT_EQ(crd["spec"]["group"].as<std::string>(""), p.group) << path;
    EXPECT_EQ(crd["spec"]["names"]["kind"].as<std::string>(""), p.kind) << path;
    EXPECT_EQ(crd["spec"]["names"]["plural"].as<std::string>(""), p.resource) << path;
    EXPECT_EQ(crd["spec"]["scope"].as<std::string>(""), "Cluster") << path;
  }
  for (const auto& file : listed) {
    EXPECT_TRUE(expected.contains(file)) << At(kKustomization, k["resources"]) << ": " << file
                                         << " is no CRD of a registered adapter; remove it";
  }
}

}  // namespace
}  // namespace ayatori::adapters
