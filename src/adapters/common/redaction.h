// Redaction of what was read for a task out of the messages about it (docs/security.md § What is
// redacted): backend errors may quote the request they refused.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/adapter.h"

namespace ayatori::adapters {

// The values a message about one execution must never show: what the controller read for it
// (env values of the request, literal and from Secrets; the registry credentials of its
// imagePullSecrets; the backend's own key material) and what the engine reports back of them
// (the container's env). Apply() replaces each of them in a message by "[redacted]" before the
// message can reach status, Events, logs or the log API: engine and server errors may quote the
// request they refused. Values shorter than kMinRedactedBytes are not redacted: replacing every
// "1" or "on" would garble each message while hiding nothing a reader could not guess
// (docs/security.md § What is redacted).
class Redactor {
 public:
  static constexpr size_t kMinRedactedBytes = 4;
  // Every env value of `request` (JobEnvironment's order) and every credential of its
  // imagePullSecrets documents: the whole document, each auths entry's auth (and the password
  // part of its decoded "user:password"), password, identitytoken and registrytoken.
  void AddRequest(const ExecutionRequest& request);
  // The env values of a container as the engine's inspect reports them (Config.Env), except the
  // Job's own identity (AYATORI_JOB_*), which every message may name.
  void AddContainerEnv(const nlohmann::json& inspect);
  void Add(std::string_view value);
  // `message` with every value replaced, longest first (a value that contains another is
  // replaced whole).
  std::string Apply(std::string message) const;
  // The answer of a call made with this Redactor, its message applied: what an adapter's public
  // call returns from the one behind it that collected the values.
  Observation Redacted(Observation answer) const;
  Status Redacted(const Status& answer) const;
  template <typename T>
  StatusOr<T> Redacted(StatusOr<T> answer) const {
    if (answer.ok()) return answer;
    return Redacted(answer.status());
  }
  bool empty() const { return values_.empty(); }

 private:
  std::vector<std::string> values_;
};

// `message` with every value of `request` Redactor::AddRequest collects replaced.
std::string RedactRequestValues(std::string message, const ExecutionRequest& request);

}  // namespace ayatori::adapters
