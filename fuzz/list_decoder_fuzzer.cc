// List responses (kube/list_decoder.h), decoded item by item: any bytes give a clear error or the
// list, and the items handed out are those a whole-document parse sees.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "kube/list_decoder.h"

using namespace ayatori;
using nlohmann::json;

namespace {

// The item without the fields the decoder may add.
json WithoutTypeFields(json item) {
  if (item.is_object()) {
    item.erase("kind");
    item.erase("apiVersion");
  }
  return item;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  const std::string apiVersion = "v1";
  ObjectList list;
  std::vector<json> items;
  Status status = kube::DecodeListStreaming(body, apiVersion, &list, [&](json&& item) {
    if (item.is_object()) FUZZ_CHECK(item.contains("apiVersion"));
    items.push_back(std::move(item));
  });
  FUZZ_CHECK(list.items.empty());

  // The same body as one document; counts the root's "items" keys (a repeated key is kept once
  // by the document, but streamed each time).
  int itemsKeys = 0;
  json dom = json::parse(
      body,
      [&](int depth, json::parse_event_t event, json& parsed) {
        if (event == json::parse_event_t::key && depth == 1 && parsed == "items") ++itemsKeys;
        return true;
      },
      /*allow_exceptions=*/false);
  const bool domOk = !dom.is_discarded() && dom.is_object();
  if (!status.ok()) {
    FUZZ_CHECK(status.code() == StatusCode::kInternal);
    // A well-formed object fails only for list metadata of the wrong type.
    FUZZ_CHECK(!domOk || status.message().find("metadata.") != std::string::npos);
    return 0;
  }
  FUZZ_CHECK(domOk);
  auto domItems = dom.find("items");
  if (itemsKeys == 1 && domItems->is_array()) {
    FUZZ_CHECK(items.size() == domItems->size());
    for (size_t i = 0; i < items.size(); ++i) {
      FUZZ_CHECK(WithoutTypeFields(items[i]) == WithoutTypeFields((*domItems)[i]));
    }
  }
  return 0;
}
