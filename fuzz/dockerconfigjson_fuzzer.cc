// imagePullSecrets (kubernetes.io/dockerconfigjson) and image references
// (adapters/common/registry_auth.h). An input is an image reference, a newline, and the Secret's
// .dockerconfigjson: any bytes give credentials or a clear error.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/common/registry_auth.h"
#include "base/base64.h"
#include "fuzz/fuzz_check.h"

using namespace ayatori;
using namespace ayatori::adapters;

namespace {

bool IsStrictJsonString(const std::string& s) {
  try {
    (void)nlohmann::json(s).dump();
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  const std::string_view imageText = input.substr(0, newline);
  const std::string_view document =
      newline == std::string_view::npos ? std::string_view() : input.substr(newline + 1);

  StatusOr<ImageReference> image = ParseImageReference(imageText);
  if (image.ok()) {
    FUZZ_CHECK(!image->name.empty() && !image->registry.empty() && !image->path.empty());
    FUZZ_CHECK(!image->PullTag().empty());
  } else {
    FUZZ_CHECK(image.status().code() == StatusCode::kInvalidArgument);
    image = ParseImageReference("registry.example.com/team/app:1");
    FUZZ_CHECK(image.ok());
  }

  const SensitiveString secret{std::string(document)};
  for (const std::vector<SensitiveString>& secrets :
       {std::vector<SensitiveString>{secret}, std::vector<SensitiveString>{secret, secret}}) {
    StatusOr<std::optional<RegistryCredentials>> creds = SelectRegistryCredentials(secrets, *image);
    if (!creds.ok()) {
      FUZZ_CHECK(creds.status().code() == StatusCode::kInvalidArgument);
      FUZZ_CHECK(!creds.status().message().empty());
      continue;
    }
    FUZZ_CHECK(creds->has_value());  // there is a document: no anonymous pull
    // Only what JSON can carry unchanged: a strict dump of every field does not throw.
    const RegistryCredentials& c = **creds;
    for (const std::string* field :
         {&c.username, &c.password.reveal(), &c.identityToken.reveal(), &c.serverAddress}) {
      FUZZ_CHECK(IsStrictJsonString(*field));
    }
    FUZZ_CHECK(!RegistryAuthHeaderValue(c).reveal().empty());
  }

  // The base64 of "auth" fields: what is encoded decodes back.
  if (StatusOr<std::string> decoded = base::Base64Decode(document); decoded.ok()) {
    StatusOr<std::string> again = base::Base64Decode(base::Base64Encode(*decoded));
    FUZZ_CHECK(again.ok() && *again == *decoded);
  }
  StatusOr<std::string> back = base::Base64Decode(base::Base64Encode(document));
  FUZZ_CHECK(back.ok() && *back == std::string(document));
  return 0;
}
