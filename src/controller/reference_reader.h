// Targeted reads of the Secrets and ConfigMaps a Job references, for the Jobs whose adapter cannot
// pass references to its backend (Docker, OpenSandbox: AdapterPassesReferences is false) and whose
// class allows it (docs/api.md § Secret and ConfigMap references). One GET of the one object named:
// the controller never lists or watches the content of Secrets or ConfigMaps; its informers see
// their metadata only (controller/controller.h). What is read lives for one call and is never
// cached.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>

#include "ayatori/adapter.h"
#include "ayatori/kube_client.h"
#include "ayatori/status.h"

namespace ayatori::controller {

enum class ReferenceKind { kSecret, kConfigMap };
const char* ReferenceKindName(ReferenceKind kind);  // "Secret", "ConfigMap"

// One Secret or ConfigMap as read: its type ("" for a ConfigMap) and its values by key, decoded
// (Secret data and every binaryData are base64 on the wire; ConfigMap data is text).
struct ReferencedObject {
  std::string type;
  std::map<std::string, SensitiveString> values;
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

 private:
  KubeClient& client_;
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
