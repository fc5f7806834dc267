#include "adapters/common/security_profile.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace ayatori::adapters {
namespace {

using nlohmann::json;

SecurityProfile Decoded(const char* text) {
  SecurityProfile p;
  auto error = Decode(json::parse(text), p);
  EXPECT_FALSE(error.has_value()) << text;
  return p;
}

TEST(SecurityProfileTest, LeftOutFieldsStayAbsentUntilABackendsDefaultsFillThem) {
  SecurityProfile p = Decoded(R"({"runAsUser": 1000, "pidsLimit": 64, "tmpSizeMiB": null})");
  EXPECT_EQ(p.runAsUser, 1000);
  EXPECT_EQ(p.runAsGroup, 65534);
  EXPECT_EQ(p.pidsLimit, 64);
  EXPECT_FALSE(p.tmpSizeMiB.has_value()) << "null is absent";
  EXPECT_FALSE(p.readOnlyRootFilesystem.has_value());

  SecurityProfile filled = WithDefaults(p, RestrictedSecurityProfile());
  EXPECT_EQ(filled.pidsLimit, 64) << "a field that is set wins over the default";
  EXPECT_EQ(filled.tmpSizeMiB, 64);
  EXPECT_EQ(filled.readOnlyRootFilesystem, true);
  EXPECT_EQ(filled.allowPrivilegeEscalation, false);
  EXPECT_EQ(filled.seccompProfile, SeccompProfile::kRuntimeDefault);
  EXPECT_FALSE(filled.openFilesLimit.has_value()) << "not part of the restricted defaults";
}

TEST(SecurityProfileTest, WritesTheIdsAlwaysAndOtherFieldsOnlyWhenSet) {
  EXPECT_EQ(json(SecurityProfile{}),
            json::parse(R"({"runAsUser": 65534, "runAsGroup": 65534, "runAsRoot": false})"));
  SecurityProfile p = RestrictedSecurityProfile();
  p.addCapabilities = {"NET_BIND_SERVICE"};
  p.seccompProfile = SeccompProfile::kUnconfined;
  const json j = p;
  EXPECT_EQ(j["seccompProfile"], "Unconfined");
  EXPECT_EQ(j["addCapabilities"], json::array({"NET_BIND_SERVICE"}));
  EXPECT_FALSE(j.contains("pidsLimit"));
  SecurityProfile back;
  EXPECT_FALSE(Decode(j, back).has_value());
  EXPECT_EQ(back, p);
}

TEST(SecurityProfileTest, BadValuesNameTheirField) {
  SecurityProfile p;
  auto error = Decode(json::parse(R"({"seccompProfile": "Localhost"})"), p);
  ASSERT_TRUE(error.has_value());
  EXPECT_NE(error->path.find("seccompProfile"), std::string::npos) << error->path;
  EXPECT_NE(error->what.find("\"RuntimeDefault\", \"Unconfined\""), std::string::npos)
      << error->what;
}

TEST(SecurityProfileTest, RootMustBeAskedForAndIdsMustBeInRange) {
  SecurityProfile p;
  p.runAsUser = 0;
  Status st = ValidateIds(p, "X securityProfile.");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("X securityProfile.runAsUser"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("runAsRoot: true"), std::string::npos);
  p.runAsRoot = true;
  EXPECT_TRUE(ValidateIds(p, "").ok());
  p.runAsGroup = -1;
  EXPECT_NE(ValidateIds(p, "").message().find("runAsGroup must be"), std::string::npos);
  p.runAsGroup = 0;
  p.runAsUser = int64_t{1} << 31;
  EXPECT_NE(ValidateIds(p, "").message().find("runAsUser must be"), std::string::npos);
}

TEST(SecurityProfileTest, CapabilityNames) {
  EXPECT_TRUE(IsCapabilityName("NET_BIND_SERVICE"));
  for (const char* bad : {"", "net_admin", "NET-ADMIN", "NET ADMIN"}) {
    EXPECT_FALSE(IsCapabilityName(bad)) << bad;
  }
  EXPECT_FALSE(IsCapabilityName(std::string(65, 'A')));
}

}  // namespace
}  // namespace ayatori::adapters
