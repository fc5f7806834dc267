#include "api/resources.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace ayatori::api {
namespace {

std::optional<Quantity> Q(const char* s) {
  if (s == nullptr) return std::nullopt;
  return Quantity::MustParse(s);
}

// cpu and memory of requests and limits, nullptr = unset.
struct Four {
  const char* reqCpu = nullptr;
  const char* reqMem = nullptr;
  const char* limCpu = nullptr;
  const char* limMem = nullptr;
};

ResourceRequirements Requirements(const Four& f) {
  ResourceRequirements r;
  r.requests.cpu = Q(f.reqCpu);
  r.requests.memory = Q(f.reqMem);
  r.limits.cpu = Q(f.limCpu);
  r.limits.memory = Q(f.limMem);
  return r;
}

std::string Describe(const std::optional<Quantity>& q) { return q ? q->str() : "-"; }

std::string Describe(const ResourceRequirements& r) {
  return "requests{cpu=" + Describe(r.requests.cpu) + " memory=" + Describe(r.requests.memory) +
         "} limits{cpu=" + Describe(r.limits.cpu) + " memory=" + Describe(r.limits.memory) + "}";
}

ResourcePolicy Policy(const Four& defaults, const char* minCpu = nullptr,
                      const char* minMem = nullptr, const char* maxCpu = nullptr,
                      const char* maxMem = nullptr) {
  ResourcePolicy p;
  p.defaults = Requirements(defaults);
  p.min.cpu = Q(minCpu);
  p.min.memory = Q(minMem);
  p.max.cpu = Q(maxCpu);
  p.max.memory = Q(maxMem);
  return p;
}

struct ResolveCase {
  const char* name = nullptr;
  std::optional<ResourceRequirements> job;
  ResourcePolicy policy;
  const char* want = nullptr;   // Describe() of the result, or nullptr when an error is expected
  const char* error = nullptr;  // the exact error message
};

TEST(ResolveResourcesTest, Table) {
  const ResolveCase cases[] = {
      {"nothing anywhere",
       std::nullopt,
       {},
       "requests{cpu=- memory=-} limits{cpu=- memory=-}",
       nullptr},
      {"job values kept as written",
       Requirements({"100m", "128Mi", "1", "512Mi"}),
       {},
       "requests{cpu=100m memory=128Mi} limits{cpu=1 memory=512Mi}",
       nullptr},
      {"class defaults fill what the job leaves empty", Requirements({.reqCpu = "250m"}),
       Policy({"100m", "64Mi", "2", "1Gi"}),
       "requests{cpu=250m memory=64Mi} limits{cpu=2 memory=1Gi}", nullptr},
      {"no job resources at all: class defaults", std::nullopt,
       Policy({"100m", "64Mi", "2", "1Gi"}),
       "requests{cpu=100m memory=64Mi} limits{cpu=2 memory=1Gi}", nullptr},
      {"request = limit when neither job nor class has a request",
       Requirements({.limCpu = "2", .limMem = "1Gi"}),
       {},
       "requests{cpu=2 memory=1Gi} limits{cpu=2 memory=1Gi}",
       nullptr},
      {"request = class default limit when only that exists", std::nullopt,
       Policy({.limMem = "256Mi"}), "requests{cpu=- memory=256Mi} limits{cpu=- memory=256Mi}",
       nullptr},
      {"class default request preferred over the job limit", Requirements({.limCpu = "2"}),
       Policy({.reqCpu = "500m"}), "requests{cpu=500m memory=-} limits{cpu=2 memory=-}", nullptr},
      {"class default request above the job limit is lowered to the limit",
       Requirements({.limMem = "256Mi"}), Policy({.reqMem = "1Gi"}),
       "requests{cpu=- memory=256Mi} limits{cpu=- memory=256Mi}", nullptr},
      {"equal values written differently are within bounds",
       Requirements({"1000m", "1Gi", "1", "1024Mi"}), Policy({}, "1", "1Gi", "1", "1Gi"),
       "requests{cpu=1000m memory=1Gi} limits{cpu=1 memory=1024Mi}", nullptr},
      {"limit above the class max", Requirements({.limMem = "4Gi"}),
       Policy({}, nullptr, nullptr, nullptr, "2Gi"), nullptr,
       "limits.memory 4Gi exceeds the maximum 2Gi allowed by JobClass"},
      {"request above the class max", Requirements({.reqCpu = "3", .limCpu = "2"}),
       Policy({}, nullptr, nullptr, "2", nullptr), nullptr,
       "requests.cpu 3 exceeds the maximum 2 allowed by JobClass"},
      {"request below the class min", Requirements({.reqCpu = "50m"}), Policy({}, "100m"), nullptr,
       "requests.cpu 50m is below the minimum 100m allowed by JobClass"},
      {"defaulted limit below the class min", Requirements({.reqMem = "1Gi"}),
       Policy({.limMem = "128Mi"}, nullptr, "256Mi"), nullptr,
       "limits.memory 128Mi is below the minimum 256Mi allowed by JobClass"},
      {"1Gi is more than 1G", Requirements({.limMem = "1Gi"}),
       Policy({}, nullptr, nullptr, nullptr, "1G"), nullptr,
       "limits.memory 1Gi exceeds the maximum 1G allowed by JobClass"},
      {"request above the job limit",
       Requirements({.reqMem = "1Gi", .limMem = "512Mi"}),
       {},
       nullptr,
       "requests.memory 1Gi exceeds limits.memory 512Mi"},
      {"request above the class default limit", Requirements({.reqMem = "4Gi"}),
       Policy({.limMem = "2Gi"}), nullptr,
       "requests.memory 4Gi exceeds limits.memory 2Gi (the JobClass default limit)"},
      {"class max needs a limit", Requirements({.reqMem = "1Gi"}),
       Policy({}, nullptr, nullptr, nullptr, "2Gi"), nullptr,
       "limits.memory must be set: JobClass allows at most 2Gi"},
      {"class min needs a request", std::nullopt, Policy({}, "100m"), nullptr,
       "requests.cpu must be set: JobClass requires at least 100m"},
      {"negative values",
       Requirements({.reqCpu = "-1"}),
       {},
       nullptr,
       "requests.cpu -1 must not be negative"},
  };
  for (const ResolveCase& c : cases) {
    SCOPED_TRACE(c.name);
    StatusOr<ResourceRequirements> got = ResolveResources(c.job, c.policy);
    if (c.want != nullptr) {
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(Describe(*got), c.want);
    } else {
      ASSERT_FALSE(got.ok()) << Describe(*got);
      EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
      EXPECT_EQ(got.status().message(), c.error);
    }
  }
}

}  // namespace
}  // namespace ayatori::api
