// Targeted reads of the Secrets and ConfigMaps a Job references, for the Jobs whose adapter cannot
// pass references to its backend (resolvesEnvReferences is false in their descriptors) and whose
// class allows it (docs/api.md § Secret and ConfigMap references). One GET of the one object named:
// the controller never lists or watches the content of Secrets or ConfigMaps; its informers see
// their metadata only (controller/controller.h). What is read lives for one call and is never
// cached.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>

#include "adapters/adapter.h"
#include "ayatori/kube_client.h"
#include "ayatori/status.h"

namespace ayatori::controller {

enum class ReferenceKind { kSecret, kConfigMap };
const char* ReferenceKindName(ReferenceKind kind);  // "Secret", "ConfigMap"

// One Secret or ConfigMap as read: its type ("" for a ConfigMap) and its values by key, decoded
// (Secret data and every binaryData are base64 on the wire; ConfigMap data is text).
struct ReferencedObject {
  std::string type;
  std::string resourceVersion;  // of the object as read
  std::map<std::string, SensitiveString> values;
};

// What acceptance needs of an object: its type ("" for a ConfigMap) and key names, no value.
struct ReferencedKeys {
  std::string type;
  std::set<std::string> names;
};

class ReferenceReader {
 public:
  explicit ReferenceReader(KubeClient& client) : client_(client) {}

  // GET of ns/name. nullopt when it does not exist. kInvalidArgument when a value is not base64
  // (the message names the object and the key, never a value); any other error is the API's,
  // with the object named: the caller's round then ends and is retried with the workqueue's
  // backoff.
  StatusOr<std::optional<ReferencedObject>> Read(ReferenceKind kind, const std::string& ns,
                                                 const std::string& name);

  // The type and key names of ns/name (nullptr when it does not exist; errors as Read).
  // `knownResourceVersion` is the object's resourceVersion in the metadata cache: when the last
  // read of this object was at that version, its key names are still those and no GET is sent.
  // So a waiting Job reconciled again (its own status write, a class change, a restart of the
  // workqueue's backoff) costs a GET only when its object changed. Thread-safe.
  StatusOr<std::shared_ptr<const ReferencedKeys>> ReadKeys(ReferenceKind kind,
                                                           const std::string& ns,
                                                           const std::string& name,
                                                           const std::string& knownResourceVersion);

 private:
  // Key names by object; bounded: past kMaxRemembered objects all are forgotten at once (they are
  // read again when needed).
  static constexpr size_t kMaxRemembered = 10000;
  struct Remembered {
    std::string resourceVersion;
    std::shared_ptr<const ReferencedKeys> keys;
  };

  KubeClient& client_;
  std::mutex mu_;
  std::unordered_map<std::string, Remembered> remembered_;  // "<kind>/<ns>/<name>"
};

// Reads each object at most once per use (one resolution, one request build), however many
// keys of it a Job names. Short-lived: keep it on the stack of that one call.
class ReferenceReads {
 public:
  explicit ReferenceReads(ReferenceReader& reader) : reader_(reader) {}
  // The object, nullptr when it does not exist; errors as ReferenceReader::Read.
  StatusOr<const ReferencedObject*> Get(ReferenceKind kind, const std::string& ns,
                                        const std::string& name);

 private:
  ReferenceReader& reader_;
  std::map<std::pair<ReferenceKind, std::string>, std::optional<ReferencedObject>> read_;
};

}  // namespace ayatori::controller
