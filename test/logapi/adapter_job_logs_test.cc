// AdapterJobLogs (src/logapi/server.cc) with --watch-namespaces: a Job of a namespace the
// controller does not serve is answered NotFound without a request to the API server (the
// namespaced install's controller may not read it), and the answer does not name the namespaces
// that are served (a tenant need not learn which others exist).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "adapters/registry.h"
#include "kube/testing/fake_kube_client.h"
#include "logapi/server.h"

namespace ayatori::logapi {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(AdapterJobLogsTest, AJobOfANamespaceNotServedIsNotFoundWithoutARequest) {
  kube::testing::FakeKubeClient fake;
  adapters::AdapterRegistry registry;
  AdapterJobLogs logs(fake, registry, "ayatori-system", {"team-a", "team-c"});
  bool wrote = false;
  Status s = logs.Stream("team-b", "j", {}, [&](std::string_view) { return wrote = true; });
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("\"j\" not found"));
  EXPECT_THAT(s.message(), HasSubstr("does not serve namespace team-b"));
  EXPECT_THAT(s.message(), Not(HasSubstr("team-a")));
  EXPECT_THAT(s.message(), Not(HasSubstr("team-c")));
  EXPECT_FALSE(wrote);
  EXPECT_EQ(fake.CountActions("*"), 0u);

  // A served namespace is asked: the Job is read (and here does not exist).
  s = logs.Stream("team-a", "j", {}, [](std::string_view) { return true; });
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_THAT(s.message(), Not(HasSubstr("does not serve")));
  EXPECT_EQ(fake.CountActions("get"), 1u);
}

TEST(AdapterJobLogsTest, WithoutWatchNamespacesEveryNamespaceIsAsked) {
  kube::testing::FakeKubeClient fake;
  adapters::AdapterRegistry registry;
  AdapterJobLogs logs(fake, registry, "ayatori-system");
  Status s = logs.Stream("team-b", "j", {}, [](std::string_view) { return true; });
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_THAT(s.message(), Not(HasSubstr("does not serve")));
  EXPECT_EQ(fake.CountActions("get"), 1u);
}

}  // namespace
}  // namespace ayatori::logapi
