// Non-throwing accessors for JSON from outside the process (API server, engines): nlohmann's
// value() and get() throw on a type mismatch, and no exception may escape a decoder because a
// peer sent something unexpected. A missing field or one of another type reads as empty/0/false.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace ayatori {

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

// Integers only (a float is not one); an unsigned value above INT64_MAX reads as 0.
inline int64_t GetInt(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return 0;
  auto it = j.find(key);
  if (it == j.end()) return 0;
  if (it->is_number_unsigned()) {
    const uint64_t u = it->get<uint64_t>();
    return u <= static_cast<uint64_t>(INT64_MAX) ? static_cast<int64_t>(u) : 0;
  }
  return it->is_number_integer() ? it->get<int64_t>() : 0;
}

inline bool GetBool(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return false;
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

}  // namespace ayatori
