// Reading Secrets that configure a backend (an API key, client TLS material) through the API
// server, each kept for a while so that a call to the backend does not cost a GET, and a rotated
// Secret is still picked up. Only what decoded is kept: a Secret that is fixed is read again at
// the next call.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "ayatori/kube_client.h"
#include "ayatori/status.h"

namespace ayatori::adapters {

// GET of the Secret `ns`/`name`: the whole object, or the client's error unchanged.
StatusOr<nlohmann::json> GetSecret(KubeClient& client, const std::string& ns,
                                   const std::string& name);

// A Secret's `data` object (its values in base64, as the API server keeps them); an empty object
// when it has none.
const nlohmann::json& SecretData(const nlohmann::json& secret);

// Keeps the value decoded from each Secret (or each key of one, `cacheKey`) for `ttl`. Shared by
// the copies of the function objects that use it, so it is held by a shared_ptr.
template <typename T>
class CachedSecretReader {
 public:
  // The value wanted, from the Secret object; its errors are returned and not kept.
  using Decoder = std::function<StatusOr<T>(const nlohmann::json& secret)>;
  // The error to return when the GET fails (it names what the Secret was read for).
  using GetError = std::function<Status(const Status& getError)>;

  CachedSecretReader(KubeClient& client, std::chrono::seconds ttl) : client_(client), ttl_(ttl) {}

  StatusOr<T> Read(const std::string& ns, const std::string& name, const std::string& cacheKey,
                   const Decoder& decode, const GetError& getError) {
    const auto now = std::chrono::steady_clock::now();
    {
      std::lock_guard lock(mu_);
      if (auto it = cache_.find(cacheKey); it != cache_.end() && it->second.until > now) {
        return it->second.value;
      }
    }
    auto secret = GetSecret(client_, ns, name);
    if (!secret.ok()) return getError(secret.status());
    auto value = decode(*secret);
    if (!value.ok()) return value.status();
    std::lock_guard lock(mu_);
    cache_[cacheKey] = Cached{*value, now + ttl_};
    return value;
  }

 private:
  struct Cached {
    T value;
    std::chrono::steady_clock::time_point until;
  };
  KubeClient& client_;
  const std::chrono::seconds ttl_;
  std::mutex mu_;
  std::map<std::string, Cached> cache_;
};

}  // namespace ayatori::adapters
