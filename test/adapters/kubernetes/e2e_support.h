// What the Kubernetes adapter's e2e tests share: a client of the test control plane, and the
// Ayatori Job that owns a batch Job made by an adapter-level test.
//
// The adapter names the Job's uid as the batch Job's controller ownerReference. Once the control
// plane serves the Job CRD (another e2e test installed it), kube-controller-manager's garbage
// collector deletes a batch Job whose owner does not exist, within a fraction of a second: a test
// that made up the uid would then see its execution vanish. So a test names a real Job.
#pragma once

#include <memory>
#include <string>

#include "ayatori/kube_client.h"
#include "kube/rest_client.h"

namespace ayatori::testing {

// A client of the e2e control plane (its KUBECONFIG) with room for a test's bursts (200 qps);
// fails the calling test and returns nullptr when the kubeconfig cannot be loaded.
std::unique_ptr<kube::RestClient> NewTestenvClient();

// Creates the Job ns/name (a minimal valid task; nothing runs it) and returns its uid; a fresh
// made-up uid when the control plane does not serve the CRD (then no collector knows the kind).
// Fails the calling test on any other error.
std::string OwnerJobUid(KubeClient& client, const std::string& ns, const std::string& name);

// A fresh uid in Kubernetes' format, for owners that must not exist.
std::string NewKubernetesUid();

}  // namespace ayatori::testing
