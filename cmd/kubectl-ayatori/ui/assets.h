// The web view's static files (cmd/kubectl-ayatori/ui/static/), embedded in the binary at build
// time by embed_assets.cmake into a generated assets.cc, so the plugin is one file that needs no
// network beyond the cluster.
#pragma once

#include <string_view>

namespace ayatori::plugin::ui {

struct Asset {
  std::string_view path;  // "/index.html", "/app.js", ...
  std::string_view contentType;
  std::string_view body;
};

// The file served at `path`, or nullptr.
const Asset* FindAsset(std::string_view path);

}  // namespace ayatori::plugin::ui
