// The building blocks of a kind's JSON codec, shared by src/api/json.cc (Job, JobClass) and the
// adapters' parameters kinds (src/adapters/<backend>/parameters.cc), so that every kind decodes
// with the same rules and error messages (api/json.h): unknown fields ignored, null = absent, a
// wrong type reported with the path of the value ("spec.tolerations[1].key: expected a string,
// got number"), and encodes like Go's omitempty.
//
// Decoding: Decode(j, out) fills `out` (default-constructed by the caller) and returns nullopt,
// or what went wrong and where. A kind's codec declares Decode for its own types in their own
// namespace (found by argument-dependent lookup from the templates below) and builds it from
// ObjectDecoder, DecodeEnum and the overloads here. The path is assembled from the failing value
// outwards while the error propagates, so a successful decode never builds strings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/types.h"
#include "ayatori/status.h"

namespace ayatori::api {

struct DecodeError {
  std::string path;  // "spec.task.env[1].name"
  std::string what;  // "expected a string, got number"
};
using Decoded = std::optional<DecodeError>;

Decoded DecodeFailure(std::string what);
// "expected <expected>, got <type of j>".
Decoded WrongType(const nlohmann::json& j, const char* expected);
// A short rendering of an offending value for an error message.
std::string Excerpt(const nlohmann::json& j);
// The error `e` (if any) with the field name, element index or map key put in front of its path.
Decoded InField(Decoded e, const char* name);
Decoded InElement(Decoded e, size_t index);
Decoded InKey(Decoded e, const std::string& key);

// Values of the wire format's plain types.
Decoded Decode(const nlohmann::json& j, std::string& out);
Decoded Decode(const nlohmann::json& j, bool& out);
Decoded Decode(const nlohmann::json& j, int64_t& out);
Decoded Decode(const nlohmann::json& j, int32_t& out);
Decoded Decode(const nlohmann::json& j, std::map<std::string, std::string>& out);
// An integer in [min, max] (a JSON float with an integral value is accepted).
Decoded DecodeInteger(const nlohmann::json& j, int64_t min, int64_t max, int64_t& out);

// The api types (api/types.h), defined with their kinds in api/json.cc. Their nlohmann ADL hooks
// (to_json, for the Put* helpers below) are in api/json.h.
Decoded Decode(const nlohmann::json& j, Quantity& out);
Decoded Decode(const nlohmann::json& j, Time& out);
Decoded Decode(const nlohmann::json& j, OwnerReference& out);
Decoded Decode(const nlohmann::json& j, ObjectMeta& out);
Decoded Decode(const nlohmann::json& j, ResourceList& out);
Decoded Decode(const nlohmann::json& j, ResourceRequirements& out);
Decoded Decode(const nlohmann::json& j, KeySelector& out);
Decoded Decode(const nlohmann::json& j, EnvVarSource& out);
Decoded Decode(const nlohmann::json& j, EnvVar& out);
Decoded Decode(const nlohmann::json& j, LocalObjectReference& out);
Decoded Decode(const nlohmann::json& j, TaskSpec& out);
Decoded Decode(const nlohmann::json& j, DesiredState& out);
Decoded Decode(const nlohmann::json& j, JobSpec& out);
Decoded Decode(const nlohmann::json& j, ConditionStatus& out);
Decoded Decode(const nlohmann::json& j, Condition& out);
Decoded Decode(const nlohmann::json& j, ParametersRef& out);
Decoded Decode(const nlohmann::json& j, TtlPolicy& out);
Decoded Decode(const nlohmann::json& j, QueueingPolicy& out);
Decoded Decode(const nlohmann::json& j, ResolvedJobClass& out);
Decoded Decode(const nlohmann::json& j, ExecutionReference& out);
Decoded Decode(const nlohmann::json& j, ExecutionStatus& out);
Decoded Decode(const nlohmann::json& j, JobResult& out);
Decoded Decode(const nlohmann::json& j, JobStatus& out);
Decoded Decode(const nlohmann::json& j, Job& out);
Decoded Decode(const nlohmann::json& j, SecretEnvForwarding& out);
Decoded Decode(const nlohmann::json& j, ResourcePolicy& out);
Decoded Decode(const nlohmann::json& j, JobClassSpec& out);
Decoded Decode(const nlohmann::json& j, JobClass& out);
Decoded Decode(const nlohmann::json& j, SecretKeyReference& out);

template <class T>
Decoded Decode(const nlohmann::json& j, std::optional<T>& out) {
  out.emplace();
  return Decode(j, *out);
}

template <class T>
Decoded Decode(const nlohmann::json& j, std::vector<T>& out) {
  if (!j.is_array()) return WrongType(j, "an array");
  out.clear();
  out.resize(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    if (Decoded e = Decode(j[i], out[i])) return InElement(std::move(e), i);
  }
  return {};
}

// Reads the fields of one JSON object. Unknown fields are ignored; absent and null fields leave
// the output at its default. After the first error the remaining fields are skipped.
class ObjectDecoder {
 public:
  explicit ObjectDecoder(const nlohmann::json& j) : j_(j) {
    if (!j.is_object()) error_ = WrongType(j, "an object");
  }

  template <class T>
  ObjectDecoder& operator()(const char* name, T& out) {
    return With(name, [&out](const nlohmann::json& value) { return Decode(value, out); });
  }

  // Decodes field `name` with decode(value) -> Decoded.
  template <class F>
  ObjectDecoder& With(const char* name, F&& decode) {
    if (error_) return *this;
    auto it = j_.find(name);
    if (it != j_.end() && !it->is_null()) error_ = InField(decode(*it), name);
    return *this;
  }

  Decoded Done() { return std::move(error_); }

 private:
  const nlohmann::json& j_;
  Decoded error_;
};

// Rejects an object whose kind or apiVersion (execution.ayatori.ddupan.top/v1alpha1) is present
// and is not ours. Both may be absent (in the items of some lists, and in nested use).
Decoded CheckKind(const nlohmann::json& j, const char* kind);

// The shape of every parameters kind: kind and apiVersion checked, metadata, and the spec fields
// read by decode_spec(spec) -> Decoded.
template <class T, class DecodeSpecFn>
Decoded DecodeParameters(const nlohmann::json& j, const char* kind, T& out,
                         DecodeSpecFn&& decode_spec) {
  if (Decoded e = CheckKind(j, kind)) return e;
  return ObjectDecoder(j)("metadata", out.metadata).With("spec", decode_spec).Done();
}

// An enum's wire names.
template <class E>
struct EnumName {
  const char* name;
  E value;
};

template <class E, size_t N>
Decoded DecodeEnum(const nlohmann::json& j, const EnumName<E> (&names)[N], E& out) {
  if (j.is_string()) {
    const std::string& s = j.get_ref<const std::string&>();
    for (const EnumName<E>& n : names) {
      if (s == n.name) {
        out = n.value;
        return {};
      }
    }
  }
  std::string want = "expected one of";
  for (size_t i = 0; i < N; ++i)
    want += std::string(i == 0 ? " \"" : ", \"") + names[i].name + "\"";
  return DecodeFailure(want + ", got " + Excerpt(j));
}

template <class E, size_t N>
const char* EnumToString(const EnumName<E> (&names)[N], E value) {
  for (const EnumName<E>& n : names) {
    if (n.value == value) return n.name;
  }
  return names[0].name;
}

// "cannot decode Job ci/hello-x: spec.task.image: expected a string, got number"
std::string DescribeDecodeError(const char* what, const nlohmann::json& j, const DecodeError& e);

// A whole value of `what` (for messages: "Job", "JobClass") from `j`; a decode
// error is kInvalidArgument with DescribeDecodeError's message.
template <class T>
StatusOr<T> DecodeValue(const nlohmann::json& j, const char* what) {
  T out{};
  if (Decoded e = Decode(j, out)) {
    return Status(StatusCode::kInvalidArgument, DescribeDecodeError(what, j, *e));
  }
  return out;
}

// For nlohmann's from_json ADL hooks, which report errors by exception (json::type_error).
template <class T>
void DecodeOrThrow(const nlohmann::json& j, T& out, const char* what) {
  out = T{};
  if (Decoded e = Decode(j, out)) {
    throw nlohmann::json::type_error::create(302, DescribeDecodeError(what, j, *e), &j);
  }
}

// ---------------------------------------------------------------------------------------------
// Encoding: omit what Go's omitempty would omit.

inline void PutString(nlohmann::json& j, const char* key, const std::string& v) {
  if (!v.empty()) j[key] = v;
}

template <class C>
void PutNonEmpty(nlohmann::json& j, const char* key, const C& v) {
  if (!v.empty()) j[key] = v;
}

template <class T>
void PutOptional(nlohmann::json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

inline void PutNonZero(nlohmann::json& j, const char* key, int64_t v) {
  if (v != 0) j[key] = v;
}

inline void PutTrue(nlohmann::json& j, const char* key, bool v) {
  if (v) j[key] = true;
}

// {"apiVersion": "execution.ayatori.ddupan.top/v1alpha1", "kind": kind}.
nlohmann::json KindHeader(const char* kind);

// A parameters object: KindHeader(kind), metadata and spec (defined in api/json.cc).
nlohmann::json ParametersToJson(const char* kind, const ObjectMeta& metadata, nlohmann::json spec);

}  // namespace ayatori::api
