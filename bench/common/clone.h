// Copies of an object read from the API server, for benchmark programs that write many finished
// objects directly instead of waiting for controllers to finish them one by one.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace ayatori::bench {

// `object` without what the API server assigns (uid, resourceVersion, timestamps, managedFields)
// and without its status, so that it can be created again.
inline nlohmann::json Creatable(nlohmann::json object) {
  auto& m = object["metadata"];
  for (const char* k :
       {"uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "selfLink"}) {
    m.erase(k);
  }
  object.erase("status");
  return object;
}

inline void ReplaceAll(std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) {
    s.replace(pos, from.size(), to);
  }
}

// `object` with every occurrence of each `from` (a name, a uid) replaced by its `to`, in keys and
// values alike (labels, owner references, env, names derived from uids).
inline nlohmann::json Substitute(const nlohmann::json& object,
                                 const std::vector<std::pair<std::string, std::string>>& subs) {
  std::string text = object.dump();
  for (const auto& [from, to] : subs) ReplaceAll(text, from, to);
  return nlohmann::json::parse(text);
}

}  // namespace ayatori::bench
