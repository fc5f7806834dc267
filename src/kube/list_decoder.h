// Decodes a Kubernetes list response (`{"kind":"PodList","metadata":{...},"items":[...]}`) one
// item at a time: each element of "items" is built as its own document, handed to `visit` and
// dropped before the next one is read.
//
// Why: a page of 500 pods is a few MB of JSON but tens of MB as one nlohmann document, and the
// long-lived objects a cache decodes from it get allocated between that document's nodes; once
// the document is freed, the heap stays fragmented (measured: a fresh controller syncing 1000
// Jobs with their batch Jobs and pods kept ~55 KiB of RSS per Job, ~4 KiB of it live). Streaming
// keeps the transient memory to one item.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "ayatori/kube_client.h"
#include "ayatori/status.h"

namespace ayatori::kube {

// `list` receives metadata.resourceVersion and metadata.continue; its items stay empty. Items of
// built-in lists omit kind and apiVersion: they get the list's kind without "List" (the API
// server writes "kind" before "items") and `apiVersion`. kInternal when the body is not a JSON
// object; items visited before the error stay visited.
Status DecodeListStreaming(std::string_view body, const std::string& apiVersion, ObjectList* list,
                           const std::function<void(nlohmann::json&& item)>& visit);

}  // namespace ayatori::kube
