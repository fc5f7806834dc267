// The fixture of the unit tests that run the OpenSandbox adapter on FakeOpenSandbox
// (opensandbox_adapter_test.cc, command_poller_test.cc, command_output_test.cc): the fake, an
// adapter on it, a request for one of its Jobs and the key the controller keeps for it.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "adapters/opensandbox/opensandbox_adapter.h"
#include "api/quantity.h"
#include "test/adapters/opensandbox/fake_opensandbox.h"

namespace ayatori::adapters::opensandbox::testing {

inline constexpr const char* kApiKey = "the-api-key-0123";

class FakeOpenSandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_ = std::make_shared<FakeOpenSandbox>();
    adapter_ = NewAdapter();
  }

  // Options for an adapter on the fake server, which reads the API key kApiKey.
  OpenSandboxAdapterOptions Options() const {
    OpenSandboxAdapterOptions o;
    o.transport = fake_;
    o.apiKey = [](const api::SecretKeyReference&) -> StatusOr<SensitiveString> {
      return SensitiveString(kApiKey);
    };
    o.execdReadyTimeout = std::chrono::milliseconds(50);
    return o;
  }
  // A fresh adapter on the same fake server: a restarted controller.
  std::unique_ptr<OpenSandboxAdapter> NewAdapter() const {
    return std::make_unique<OpenSandboxAdapter>(Options());
  }

  static ExecutionRequest Request() {
    ExecutionRequest r;
    r.job.metadata.namespace_ = "ci";
    r.job.metadata.name = "hello";
    r.job.metadata.uid = "1f0c9a2e-1234-4bcd-9abc-0123456789ab";
    r.job.spec.task.image = "ayatori-test/workload:1";
    r.job.spec.task.command = {"/bin/sh", "-c", "echo hi"};
    r.resources.limits.cpu = api::Quantity::MustParse("500m");
    r.parameters = {{"apiVersion", "execution.ayatori.ddupan.top/v1alpha1"},
                    {"kind", "OpenSandboxExecutionParameters"},
                    {"metadata", {{"name", "p"}}},
                    {"spec",
                     {{"endpoint", FakeOpenSandbox::kServer},
                      {"insecure", true},  // the fake's http:// URL
                      {"apiKeySecretRef", {{"namespace", "s"}, {"name", "k"}, {"key", "key"}}}}}};
    return r;
  }

  static ExecutionKey KeyOf(const ExecutionRequest& r, const Observation& o = {}) {
    ExecutionKey k;
    k.uid = r.job.metadata.uid;
    k.namespace_ = r.job.metadata.namespace_;
    k.name = r.job.metadata.name;
    k.references = o.references;
    k.parameters = r.parameters;
    return k;
  }

  static std::string Describe(const Observation& o) {
    return std::string(ExecutionPhaseName(o.phase)) + "/" + o.reason + " " + o.message;
  }

  std::shared_ptr<FakeOpenSandbox> fake_;
  std::unique_ptr<OpenSandboxAdapter> adapter_;
};

}  // namespace ayatori::adapters::opensandbox::testing
