// The batch/v1 Job that runs one Ayatori Job: a pure function of the ExecutionRequest and the
// class's KubernetesExecutionParameters, so that what is sent to the apiserver is unit-tested.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "adapters/adapter.h"
#include "adapters/kubernetes/parameters.h"
#include "api/types.h"
#include "ayatori/status.h"

namespace ayatori::adapters::kubernetes {

// Name of the single container of the pod.
inline constexpr const char* kContainerName = "main";
// Label on batch Jobs and pods saying which program made them.
inline constexpr const char* kManagedByLabel = "app.kubernetes.io/managed-by";
inline constexpr const char* kManagedByValue = "ayatori";
// Always-present annotation with the Ayatori Job's name (a name may be longer than a label value).
inline constexpr const char* kJobNameAnnotation = "execution.ayatori.ddupan.top/job-name";
// The Ayatori Job's acceptance (ExecutionRequest::acceptance), on a batch Job created before the
// controller wrote it: read back by KubernetesAdapter::RecordedAcceptance after a restart.
inline constexpr const char* kAcceptanceAnnotation = "execution.ayatori.ddupan.top/acceptance";
// The Ayatori Job's resourceVersion the create was decided and confirmed on
// (ExecutionRequest::confirmCreate): for diagnosis and for the test that a create racing a
// cancel was decided on the latest state (docs/api.md § Decisions on the spec).
inline constexpr const char* kConfirmedVersionAnnotation =
    "execution.ayatori.ddupan.top/confirmed-job-resource-version";

// The pod's memory-backed emptyDir volumes: /tmp, and the working directory when the root
// filesystem is read-only.
inline constexpr const char* kTmpVolume = "ayatori-tmp";
inline constexpr const char* kWorkdirVolume = "ayatori-workdir";
// The batch Job's activeDeadlineSeconds is the Ayatori Job's plus this: batch/v1 counts from the
// batch Job's start (scheduling and image pull included), the controller from the task's start.
inline constexpr int64_t kActiveDeadlineMarginSeconds = 300;

// "ayj-" + the Ayatori Job UID: unique per UID (the idempotency key), 40 characters for a UUID,
// so the pod names the Job controller derives from it stay valid.
std::string BatchJobName(std::string_view jobUid);

// The label selector (query-string form) of everything this adapter creates, for informers.
std::string ManagedSelector();
// The label selector of the batch Job and pod of one Ayatori Job.
std::string SelectorForUid(std::string_view jobUid);

// request.parameters (the KubernetesExecutionParameters object as JSON; null or {} = all defaults)
// decoded. kInvalidArgument naming the field when it is malformed, including the CRD's rules on
// securityProfile (uid 0 without runAsRoot, seccompProfile, capability names, tmpSizeMiB) and
// automountServiceAccountToken without serviceAccountName, for objects that got past the CRD.
StatusOr<KubernetesExecutionParameters> ParseParameters(const nlohmann::json& parameters);

// Checks what the apiserver would reject later, with a message for the Job's author: the
// extra labels and annotations of the parameters (keys and values) and the Job's identity.
Status ValidateRequest(const ExecutionRequest& request,
                       const KubernetesExecutionParameters& params);

// The batch/v1 Job for the request, ready to POST:
//  - metadata: name BatchJobName(uid), the Job's namespace, labels (params.extraLabels, then
//    job-uid, job-namespace, job-name when it fits a label value, managed-by), annotations
//    (params.extraAnnotations + job-name), a controller ownerReference to the Ayatori Job with
//    blockOwnerDeletion, so deleting the Job garbage-collects it;
//  - spec: backoffLimit 0, podReplacementPolicy Failed, one completion, and a pod template with the
//    same labels/annotations, restartPolicy Never, the scheduling fields of the parameters, the
//    task's imagePullSecrets and one container "main" with image, command, args, workingDir,
//    resources and env: the task's env passed through untouched (secretKeyRef / configMapKeyRef
//    stay references, resolved by the kubelet) followed by AYATORI_JOB_NAMESPACE/NAME/UID;
//  - least privilege from params.securityProfile (Pod Security Standard "restricted" with the
//    defaults): pod runAsNonRoot (unless runAsRoot), runAsUser/runAsGroup, seccompProfile;
//    container allowPrivilegeEscalation, capabilities drop ALL + addCapabilities,
//    readOnlyRootFilesystem; a memory emptyDir of tmpSizeMiB at /tmp (and at workingDir when the
//    root filesystem is read-only); automountServiceAccountToken false unless the parameters
//    name a serviceAccountName and ask for it;
//  - activeDeadlineSeconds = the Job's + kActiveDeadlineMarginSeconds, when the Job has one.
nlohmann::json BuildBatchJob(const ExecutionRequest& request,
                             const KubernetesExecutionParameters& params);

// True when `batchJob` was made by this adapter for the Ayatori Job with UID `jobUid`: it carries
// the UID label and a controller ownerReference to that UID. Anything else is a stranger's
// object that must never be adopted, cancelled or deleted.
bool IsOwnedBy(const nlohmann::json& batchJob, std::string_view jobUid);

}  // namespace ayatori::adapters::kubernetes
