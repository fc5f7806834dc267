#include "adapters/common/redaction.h"

#include <algorithm>

#include "adapters/common/job_environment.h"
#include "ayatori/json_get.h"
#include "base/base64.h"

namespace ayatori::adapters {

using nlohmann::json;

void Redactor::Add(std::string_view value) {
  if (value.size() < kMinRedactedBytes) return;
  if (std::find(values_.begin(), values_.end(), value) != values_.end()) return;
  values_.emplace_back(value);
}

void Redactor::AddRequest(const ExecutionRequest& request) {
  for (const auto& e : request.resolvedEnv) Add(e.value.reveal());
  for (const auto& e : request.job.spec.task.env) {
    if (e.value) Add(*e.value);
  }
  for (const auto& config : request.imagePullConfigs) {
    Add(config.reveal());
    const json doc = json::parse(config.reveal(), nullptr, false);
    const json* auths = doc.is_object() ? GetObject(doc, "auths") : nullptr;
    if (auths == nullptr) continue;
    for (const auto& [registry, entry] : auths->items()) {
      if (!entry.is_object()) continue;
      for (const char* field : {"auth", "password", "identitytoken", "registrytoken"}) {
        Add(GetString(entry, field));
      }
      if (auto decoded = base::Base64Decode(GetString(entry, "auth")); decoded.ok()) {
        Add(*decoded);
        if (size_t colon = decoded->find(':'); colon != std::string::npos) {
          Add(std::string_view(*decoded).substr(colon + 1));
        }
      }
    }
  }
}

void Redactor::AddContainerEnv(const json& inspect) {
  const json* config = GetObject(inspect, "Config");
  const json* env = config != nullptr && config->contains("Env") ? &(*config)["Env"] : nullptr;
  if (env == nullptr || !env->is_array()) return;
  for (const auto& entry : *env) {
    if (!entry.is_string()) continue;
    const std::string& s = entry.get_ref<const std::string&>();
    const size_t eq = s.find('=');
    if (eq == std::string::npos) continue;
    const std::string_view name = std::string_view(s).substr(0, eq);
    if (name == kEnvJobNamespace || name == kEnvJobName || name == kEnvJobUid) continue;
    Add(std::string_view(s).substr(eq + 1));
  }
}

Observation Redactor::Redacted(Observation answer) const {
  answer.message = Apply(std::move(answer.message));
  return answer;
}

Status Redactor::Redacted(const Status& answer) const {
  if (answer.ok()) return answer;
  return Status(answer.code(), Apply(answer.message()));
}

std::string Redactor::Apply(std::string message) const {
  std::vector<const std::string*> longestFirst;
  longestFirst.reserve(values_.size());
  for (const auto& v : values_) longestFirst.push_back(&v);
  std::stable_sort(
      longestFirst.begin(), longestFirst.end(),
      [](const std::string* a, const std::string* b) { return a->size() > b->size(); });
  static constexpr std::string_view kRedacted = "[redacted]";
  for (const std::string* v : longestFirst) {
    for (size_t pos = message.find(*v); pos != std::string::npos; pos = message.find(*v, pos)) {
      message.replace(pos, v->size(), kRedacted);
      pos += kRedacted.size();
    }
  }
  return message;
}

std::string RedactRequestValues(std::string message, const ExecutionRequest& request) {
  Redactor r;
  r.AddRequest(request);
  return r.Apply(std::move(message));
}

}  // namespace ayatori::adapters
