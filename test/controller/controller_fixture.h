// The fixture of the controller's integration tests: a namespace of its own per test, the
// in-process controller started on the real API server (test/support/controller_harness.h), the
// test backend reset, and the namespace's Jobs cleaned up through the controller afterwards.
#pragma once

#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "api/types.h"
#include "controller/kinds.h"
#include "controller/reconciler.h"
#include "test/support/controller_harness.h"

namespace ayatori::testing {

using api::ConditionStatus;

inline std::function<bool(const api::Job&)> SucceededIs(ConditionStatus status,
                                                        std::string reason) {
  return [status, reason = std::move(reason)](const api::Job& j) {
    return HasCondition(j, api::kConditionSucceeded, status, reason);
  };
}

inline std::function<bool(const api::Job&)> AcceptedIs(ConditionStatus status, std::string reason) {
  return [status, reason = std::move(reason)](const api::Job& j) {
    return HasCondition(j, api::kConditionAccepted, status, reason);
  };
}

// Scheduled=True and the execution's references persisted.
inline bool IsScheduled(const api::Job& j) {
  return api::IsConditionTrue(j.status.conditions, api::kConditionScheduled) &&
         j.status.execution && !j.status.execution->references.empty();
}

// startTime set and Succeeded=Unknown/Running.
inline bool IsRunning(const api::Job& j) {
  return j.status.startTime.has_value() &&
         HasCondition(j, api::kConditionSucceeded, ConditionStatus::kUnknown, "Running");
}

inline bool HasOurFinalizer(const api::Job& j) {
  for (const auto& f : j.metadata.finalizers) {
    if (f == api::kFinalizer) return true;
  }
  return false;
}

class ControllerTest : public ::testing::Test {
 protected:
  static ControllerHarness& H() { return ControllerHarness::Instance(); }
  adapters::InProcessTestAdapter& Backend() { return H().backend(); }
  int Calls(const std::string& uid, Call call) { return H().calls().Calls(uid, call); }

  // Whether SetUp starts the controller (tests that create Jobs before it runs say false).
  virtual bool StartControllerInSetUp() const { return true; }

  void SetUp() override {
    ASSERT_TRUE(H().ok()) << H().setupError();
    H().ResetBackend();
    ns_ = H().CreateNamespace("ctl");
    ASSERT_FALSE(ns_.empty());
    if (StartControllerInSetUp()) {
      Status s = H().StartController();
      ASSERT_TRUE(s.ok()) << "the controller did not start: " << s.ToString();
    }
  }

  void TearDown() override {
    H().ResetBackend();
    std::string note = H().CleanupNamespace(ns_);
    if (!note.empty()) std::cout << "[cleanup of " << ns_ << "] " << note << "\n";
    if (HasFailure() && !sensitive_) {
      std::cout << "---- controller log lines of " << ns_ << " ----\n"
                << H().logs().LinesWith(ns_) << "----\n";
    }
    H().StopController();
  }

  // Creates the Job ns_/name; records a failure and returns an empty Job if that failed.
  api::Job Create(const std::string& name, const nlohmann::json& spec = nlohmann::json::object()) {
    auto job = H().CreateJob(JobManifest(ns_, name, spec));
    EXPECT_TRUE(job.ok()) << "cannot create Job " << name << ": " << job.status().ToString();
    return job.ok() ? *job : api::Job{};
  }

  // API writes the controller sent for the Job ns_/name (finalizer, status, delete), counted by
  // the harness's WriteCountingKubeClient.
  uint64_t ControllerWrites(const std::string& name) const {
    return H().controllerClient().Writes(controller::kJobs, ns_, name);
  }
  // The controller's writes to the Job, one per line, for a failure message.
  std::string ControllerWriteLog(const std::string& name) const {
    std::string log;
    for (const auto& write : H().controllerClient().WriteLog(controller::kJobs, ns_, name)) {
      (log += "\n  ") += write;
    }
    return log;
  }

  api::Job Get(const std::string& name) {
    auto job = H().GetJob(ns_, name);
    EXPECT_TRUE(job.ok()) << "cannot get Job " << name << ": " << job.status().ToString();
    return job.ok() ? *job : api::Job{};
  }

  ::testing::AssertionResult WaitFor(const std::string& name,
                                     const std::function<bool(const api::Job&)>& done,
                                     const std::string& what, api::Job* out = nullptr,
                                     std::chrono::milliseconds timeout = 20s) {
    api::Job last;
    if (H().WaitForJob(ns_, name, done, timeout, &last)) {
      if (out != nullptr) *out = last;
      return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure()
           << "Job " << name << " did not become " << what << " within " << timeout.count()
           << " ms; last seen: " << Describe(last);
  }

  ::testing::AssertionResult WaitGone(const std::string& name,
                                      std::chrono::milliseconds timeout = 20s) {
    if (H().WaitForJobGone(ns_, name, timeout)) return ::testing::AssertionSuccess();
    auto job = H().GetJob(ns_, name);
    return ::testing::AssertionFailure()
           << "Job " << name << " still exists after " << timeout.count()
           << " ms: " << (job.ok() ? Describe(*job) : job.status().ToString());
  }

  ::testing::AssertionResult Patch(const std::string& name, const nlohmann::json& patch) {
    auto r = H().PatchJob(ns_, name, patch);
    if (r.ok()) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "patch of " << name << " failed: " << r.status().ToString();
  }

  ::testing::AssertionResult Cancel(const std::string& name) {
    return Patch(name, {{"spec", {{"desiredState", "Cancelled"}}}});
  }

  ::testing::AssertionResult Delete(const std::string& name) {
    Status s = H().DeleteJob(ns_, name);
    if (s.ok()) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "delete of " << name << " failed: " << s.ToString();
  }

  ::testing::AssertionResult Touch(const std::string& name) {
    Status s = H().TouchJob(ns_, name);
    if (s.ok()) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "touch of " << name << " failed: " << s.ToString();
  }

  // A Job whose pending execution the test started: Scheduled, then Running.
  ::testing::AssertionResult CreateRunning(const std::string& name, api::Job* out,
                                           const nlohmann::json& spec = nlohmann::json::object()) {
    api::Job job = Create(name, spec);
    if (job.metadata.uid.empty()) return ::testing::AssertionFailure() << "not created";
    if (auto r = WaitFor(name, IsScheduled, "Scheduled", &job); !r) return r;
    Backend().StartExecution(job.metadata.uid);
    return WaitFor(name, IsRunning, "Running", out);
  }

  std::string ns_;
  bool sensitive_ = false;  // the captured logs may hold a Secret value: never print them
};

}  // namespace ayatori::testing
