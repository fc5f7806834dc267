// The manifests that name backends, checked against the adapters' descriptors
// (src/adapters/<backend>/descriptor.h): the controller's RBAC rules (config/rbac/role.yaml), the
// JobClass CRD's CEL rules that tie a controllerName to its parameters kind
// (config/crd/execution.ayatori.ddupan.top_jobclasses.yaml) and the CRD list
// (config/crd/Kustomization). A backend added without its lines there fails here, with a message
// naming the file, the line and what to write (docs/development.md "Adding a backend").
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

#include "adapters/docker/descriptor.h"
#include "adapters/kubernetes/descriptor.h"
#include "adapters/opensandbox/descriptor.h"
#include "adapters/registry.h"
#include "test/support/testenv.h"

namespace ayatori::adapters {
namespace {

namespace fs = std::filesystem;

constexpr const char* kRole = "config/rbac/role.yaml";
constexpr const char* kJobClassCrd = "config/crd/execution.ayatori.ddupan.top_jobclasses.yaml";
constexpr const char* kKustomization = "config/crd/Kustomization";

// The descriptors of the backends the controller ships: one line per backend folder.
std::vector<AdapterDescriptor> ShippedDescriptors() {
  return {docker::Descriptor(), kubernetes::Descriptor(), opensandbox::Descriptor()};
}

std::string Source(const std::string& relative) {
  return testing::RequiredEnv("AYATORI_SOURCE_DIR") + "/" + relative;
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

// Every backend folder with a descriptor is in ShippedDescriptors(), so the checks below cover it.
TEST_F(ManifestsTest, EveryBackendFolderWithADescriptorIsChecked) {
  std::set<std::string> served;
  for (const auto& d : ShippedDescriptors()) {
    served.insert(d.controllerName.substr(d.controllerName.rfind('/') + 1));
  }
  for (const auto& entry : fs::directory_iterator(Source("src/adapters"))) {
    if (!entry.is_directory() || !fs::exists(entry.path() / "descriptor.h")) continue;
    const std::string folder = entry.path().filename().string();
    EXPECT_TRUE(served.contains(folder))
        << "src/adapters/" << folder << "/descriptor.h: add " << folder
        << "::Descriptor() to ShippedDescriptors() in test/adapters/manifests_test.cc";
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
        << At(kRole, rule["resources"]) << ": add " << p.resource
        << " to this rule's resources (the parameters informer of " << d.controllerName << ")";
  }
  for (const auto& r : resources) {
    EXPECT_TRUE(expected.contains(r))
        << At(kRole, rule["resources"]) << ": " << r
        << " is not the parameters resource of any registered adapter; remove it";
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
                            << "; remove this rule";
  }
  for (const auto& d : kinds_) {
    const ParametersKind& p = *d.parameters;
    auto it = ties.find(d.controllerName);
    ASSERT_NE(it, ties.end()) << At(kJobClassCrd, rules)
                              << ": add the rule \"self.controllerName != '" << d.controllerName
                              << "' || !has(self.parametersRef) || (self.parametersRef.group == '"
                              << p.group << "' && self.parametersRef.kind == '" << p.kind
                              << "')\" with its message and fieldPath .parametersRef";
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
