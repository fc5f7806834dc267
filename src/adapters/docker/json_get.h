// Non-throwing accessors for engine JSON (ayatori/json_get.h), and container labels.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "ayatori/json_get.h"

namespace ayatori::adapters::docker {

// A label of a container inspect ({"Config": {"Labels": {...}}}) or list entry ({"Labels": ...}).
inline std::string GetLabel(const nlohmann::json& container, const char* label) {
  const nlohmann::json* labels = GetObject(container, "Labels");
  if (labels == nullptr) {
    if (const nlohmann::json* config = GetObject(container, "Config")) {
      labels = GetObject(*config, "Labels");
    }
  }
  return labels != nullptr ? GetString(*labels, label) : "";
}

}  // namespace ayatori::adapters::docker
