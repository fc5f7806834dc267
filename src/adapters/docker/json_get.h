// Non-throwing accessors for engine JSON: nlohmann's value() throws on a type mismatch, and no
// exception may cross the adapter's boundary because dockerd sent something unexpected.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace ayatori::adapters::docker {

inline const nlohmann::json* GetObject(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it != j.end() && it->is_object() ? &*it : nullptr;
}

inline std::string GetString(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

inline int64_t GetInt(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return 0;
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

inline bool GetBool(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return false;
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

// A label of a container inspect ({"Config": {"Labels": {...}}}) or list entry ({"Labels": ...}).
inline std::string GetLabel(const nlohmann::json& container, const char* label) {
  const nlohmann::json* labels = GetObject(container, "Labels");
  if (labels == nullptr) {
    if (const nlohmann::json* config = GetObject(container, "Config"))
      labels = GetObject(*config, "Labels");
  }
  return labels != nullptr ? GetString(*labels, label) : "";
}

}  // namespace ayatori::adapters::docker
