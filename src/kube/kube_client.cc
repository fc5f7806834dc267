// Non-virtual helpers declared in include/ayatori/kube_client.h.
#include "ayatori/kube_client.h"

namespace ayatori {

const char* WatchEventTypeName(WatchEventType type) {
  switch (type) {
    case WatchEventType::kAdded:
      return "ADDED";
    case WatchEventType::kModified:
      return "MODIFIED";
    case WatchEventType::kDeleted:
      return "DELETED";
    case WatchEventType::kBookmark:
      return "BOOKMARK";
  }
  return "UNKNOWN";
}

StatusOr<ObjectList> KubeClient::ListEach(const ResourceRef& ref, std::string_view ns,
                                          const ListOptions& options,
                                          const std::function<void(nlohmann::json&& item)>& visit) {
  auto list = List(ref, ns, options);
  if (!list.ok()) return list.status();
  for (auto& item : list->items) visit(std::move(item));
  list->items.clear();
  return list;
}

StatusOr<std::string> ListAll(KubeClient& client, const ResourceRef& ref, std::string_view ns,
                              const ListOptions& options,
                              const std::function<void(nlohmann::json&& item)>& visit) {
  ListOptions page = options;
  for (;;) {
    auto list = client.ListEach(ref, ns, page, visit);
    if (!list.ok()) return list.status();
    if (list->continueToken.empty()) return list->resourceVersion;
    page.continueToken = std::move(list->continueToken);
    // Later pages are served from the first page's snapshot; a resourceVersion must not be sent.
    page.resourceVersion.clear();
    page.resourceVersionMatch.clear();
  }
}

}  // namespace ayatori
