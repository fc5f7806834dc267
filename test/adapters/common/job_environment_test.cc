#include "adapters/common/job_environment.h"

#include <gtest/gtest.h>

namespace ayatori::adapters {
namespace {

ExecutionRequest Request() {
  ExecutionRequest r;
  r.job.metadata.namespace_ = "ci";
  r.job.metadata.name = "hello-x";
  r.job.metadata.uid = "uid-1";
  return r;
}

std::vector<std::pair<std::string, std::string>> Pairs(const std::vector<ResolvedEnvVar>& env) {
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(env.size());
  for (const auto& e : env) out.emplace_back(e.name, e.value.reveal());
  return out;
}

TEST(JobEnvironmentTest, SpecOrderResolvedValuesThenExtrasThenTheJobsIdentity) {
  auto r = Request();
  r.job.spec.task.env = {{"B", std::string("literal"), std::nullopt},
                         {"A", std::nullopt, std::nullopt},
                         {"B", std::string("second B is dropped"), std::nullopt}};
  r.resolvedEnv = {{"EXTRA", SensitiveString("x")}, {"A", SensitiveString("from-secret")}};
  auto env = JobEnvironment(r);
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(Pairs(*env), (std::vector<P>{{"B", "literal"},
                                         {"A", "from-secret"},
                                         {"EXTRA", "x"},
                                         {kEnvJobNamespace, "ci"},
                                         {kEnvJobName, "hello-x"},
                                         {kEnvJobUid, "uid-1"}}));
}

TEST(JobEnvironmentTest, TheJobsIdentityCannotBeOverridden) {
  auto r = Request();
  r.job.spec.task.env = {{kEnvJobUid, std::string("forged"), std::nullopt}};
  r.resolvedEnv = {{kEnvJobName, SensitiveString("forged too")}};
  auto env = JobEnvironment(r);
  ASSERT_TRUE(env.ok());
  for (const auto& e : *env) EXPECT_NE(e.value.reveal().find("forged"), 0u) << e.name;
  EXPECT_EQ(env->size(), 3u);
}

TEST(JobEnvironmentTest, AnUnresolvedReferenceIsAnErrorNamingTheVariable) {
  auto r = Request();
  r.job.spec.task.env = {{"TOKEN", std::nullopt, std::nullopt}};
  auto env = JobEnvironment(r);
  ASSERT_FALSE(env.ok());
  EXPECT_EQ(env.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(env.status().message().find("TOKEN"), std::string::npos);
}

}  // namespace
}  // namespace ayatori::adapters
