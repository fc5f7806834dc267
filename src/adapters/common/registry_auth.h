// Image references and registry credentials: which registry an image comes from (Docker's
// normalisation: no domain means docker.io), and which entry of the Job's
// kubernetes.io/dockerconfigjson imagePullSecrets authenticates the pull. Errors never quote the
// Secret contents.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/adapter.h"
#include "ayatori/status.h"

namespace ayatori::adapters {

struct ImageReference {
  std::string name;      // the reference without tag or digest, as written ("alpine", "x.io/a/b")
  std::string registry;  // lower-case host[:port]; "docker.io" for Docker Hub and its aliases
  std::string path;      // repository path inside the registry ("library/alpine", "a/b")
  std::string tag;       // empty if none
  std::string digest;    // "sha256:..." or empty
  // The `tag` query parameter of POST /images/create: the digest, else the tag, else "latest".
  std::string PullTag() const;
};
StatusOr<ImageReference> ParseImageReference(std::string_view image);

// Whether the engine's image inspect answer (GET /images/{name}/json) is the image `ref` names
// by name: one of its RepoTags (same registry, path and tag, "latest" when none) or, for a digest
// reference, RepoDigests (same registry, path and digest). The engine also finds images by
// (a prefix of) their ID, which names no repository: such a match is not `ref`'s image, and using
// it would let a Job run a cached image it has no access to.
bool ImageNamedBy(const nlohmann::json& inspect, const ImageReference& ref);

// A registry as named by a dockerconfigjson key ("https://index.docker.io/v1/", "docker.io",
// "127.0.0.1:5000", "registry.example.com/team"): host (normalised as above) and optional
// repository path prefix.
struct RegistryKey {
  std::string host;
  std::string pathPrefix;
};
RegistryKey NormalizeRegistryKey(std::string_view key);

struct RegistryCredentials {
  std::string username;
  SensitiveString password;
  SensitiveString identityToken;
  std::string serverAddress;  // the registry the credentials are for
};

// Picks the credentials for `image` from the dockerconfigjson documents (in imagePullSecrets
// order; the entry whose key matches the image's registry with the longest path prefix wins).
// nullopt when there are no documents (an anonymous pull of a public image). kInvalidArgument when
// a document is malformed or none has an entry for the registry: the caller must then fail the
// pull rather than retry anonymously.
StatusOr<std::optional<RegistryCredentials>> SelectRegistryCredentials(
    const std::vector<SensitiveString>& dockerConfigJsons, const ImageReference& image);

// The X-Registry-Auth header value: base64url of {"username", "password", "serveraddress"} (or
// {"identitytoken", "serveraddress"}).
SensitiveString RegistryAuthHeaderValue(const RegistryCredentials& credentials);

}  // namespace ayatori::adapters
