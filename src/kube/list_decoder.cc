#include "kube/list_decoder.h"

#include <utility>
#include <vector>

#include "ayatori/json_get.h"

namespace ayatori::kube {
namespace {

using nlohmann::json;

// nlohmann's SAX interface, building documents like its DOM parser does, except that each element
// of the root's "items" array is built alone and handed out when it closes.
class ListSax {
 public:
  ListSax(const std::string& apiVersion, const std::function<void(json&&)>& visit)
      : apiVersion_(apiVersion), visit_(visit) {}

  bool null() { return Value(json()); }
  bool boolean(bool v) { return Value(json(v)); }
  bool number_integer(json::number_integer_t v) { return Value(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return Value(json(v)); }
  bool number_float(json::number_float_t v, const json::string_t& /*text*/) {
    return Value(json(v));
  }
  bool string(json::string_t& v) { return Value(json(std::move(v))); }
  bool binary(json::binary_t& v) { return Value(json(std::move(v))); }
  bool start_object(std::size_t /*elements*/) { return Open(json::object()); }
  bool end_object() { return Close(); }
  bool start_array(std::size_t /*elements*/) { return Open(json::array()); }
  bool end_array() { return Close(); }
  bool key(json::string_t& k) {
    key_ = std::move(k);
    return true;
  }
  bool parse_error(std::size_t position, const std::string& /*token*/,
                   const nlohmann::detail::exception& e) {
    error_ = "at byte " + std::to_string(position) + ": " + e.what();
    return false;
  }

  const json& root() const { return root_; }
  const std::string& error() const { return error_; }

 private:
  bool Value(json v) {
    if (stack_.empty()) {
      root_ = std::move(v);
    } else if (stack_.back() == &items_) {
      Visit(std::move(v));  // a scalar item: handed out as it is
    } else if (stack_.back()->is_array()) {
      stack_.back()->push_back(std::move(v));
    } else {
      (*stack_.back())[key_] = std::move(v);
    }
    return true;
  }

  bool Open(json container) {
    json* child = nullptr;
    if (stack_.empty()) {
      root_ = std::move(container);
      child = &root_;
    } else if (stack_.back() == &items_) {
      item_ = std::move(container);
      child = &item_;
    } else if (stack_.size() == 1 && key_ == "items" && container.is_array()) {
      child = &items_;  // stands for the array; its elements go to visit_, not into it
    } else if (stack_.back()->is_array()) {
      stack_.back()->push_back(std::move(container));
      child = &stack_.back()->back();
    } else {
      child = &((*stack_.back())[key_] = std::move(container));
    }
    stack_.push_back(child);
    return true;
  }

  bool Close() {
    json* closed = stack_.back();
    stack_.pop_back();
    if (closed == &item_) {
      Visit(std::move(item_));
      item_ = json();
    }
    return true;
  }

  void Visit(json&& item) {
    if (item.is_object()) {
      if (!itemKindKnown_) {
        itemKindKnown_ = true;
        auto kind = root_.find("kind");
        if (kind != root_.end() && kind->is_string()) {
          itemKind_ = kind->get<std::string>();
          if (itemKind_.size() > 4 && itemKind_.ends_with("List")) {
            itemKind_.resize(itemKind_.size() - 4);
          } else {
            itemKind_.clear();
          }
        }
      }
      if (!itemKind_.empty() && !item.contains("kind")) item["kind"] = itemKind_;
      if (!item.contains("apiVersion")) item["apiVersion"] = apiVersion_;
    }
    visit_(std::move(item));
  }

  const std::string& apiVersion_;
  const std::function<void(json&&)>& visit_;
  json root_;
  json items_ = json::array();  // never holds anything: marks the open "items" array
  json item_;
  std::vector<json*> stack_;
  std::string key_;
  bool itemKindKnown_ = false;
  std::string itemKind_;
  std::string error_;
};

}  // namespace

Status DecodeListStreaming(std::string_view body, const std::string& apiVersion, ObjectList* list,
                           const std::function<void(nlohmann::json&& item)>& visit) {
  ListSax sax(apiVersion, visit);
  const bool parsed = json::sax_parse(body.begin(), body.end(), &sax);
  if (!parsed || !sax.root().is_object()) {
    return Status(StatusCode::kInternal,
                  "the server's list response is not a JSON object" +
                      (sax.error().empty() ? std::string() : " (" + sax.error() + ")"));
  }
  if (const nlohmann::json* meta = GetObject(sax.root(), "metadata")) {
    for (auto [field, out] : {std::pair{"resourceVersion", &list->resourceVersion},
                              std::pair{"continue", &list->continueToken}}) {
      auto it = meta->find(field);
      if (it == meta->end() || it->is_null()) continue;
      if (!it->is_string()) {
        return Status(StatusCode::kInternal, std::string("the server's list response has a ") +
                                                 "metadata." + field + " that is not a string");
      }
      *out = it->get<std::string>();
    }
  }
  return Status::Ok();
}

}  // namespace ayatori::kube
