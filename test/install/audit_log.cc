#include "test/install/audit_log.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "test/support/testenv.h"

namespace ayatori::install_e2e {

using nlohmann::json;
using testing::TestenvVar;

std::string Request::Summary() const {
  return verb + " " + (group.empty() ? "" : group + "/") + resource +
         (ns.empty() ? "" : " -n " + ns) + (name.empty() ? "" : " " + name) + " -> " +
         std::to_string(code) + (code == 403 ? " (" + message.substr(0, 160) + ")" : "");
}

size_t AuditOffset() {
  struct stat st {};
  if (stat(TestenvVar("TESTENV_AUDIT_LOG").c_str(), &st) != 0) return 0;
  return static_cast<size_t>(st.st_size);
}

std::vector<Request> RequestsOf(const std::string& user, size_t offset) {
  std::ifstream in(TestenvVar("TESTENV_AUDIT_LOG"));
  EXPECT_TRUE(in) << "no audit log at " << TestenvVar("TESTENV_AUDIT_LOG");
  in.seekg(static_cast<std::streamoff>(offset));
  std::vector<Request> out;
  for (std::string line; std::getline(in, line);) {
    json e = json::parse(line, nullptr, false);
    if (!e.is_object() || e.value("/user/username"_json_pointer, "") != user) continue;
    const std::string stage = e.value("stage", "");
    if (stage != "ResponseComplete" && stage != "ResponseStarted") continue;
    Request r;
    r.verb = e.value("verb", "");
    r.group = e.value("/objectRef/apiGroup"_json_pointer, "");
    r.resource = e.value("/objectRef/resource"_json_pointer, "");
    const std::string sub = e.value("/objectRef/subresource"_json_pointer, "");
    if (!sub.empty()) r.resource += "/" + sub;
    r.ns = e.value("/objectRef/namespace"_json_pointer, "");
    r.name = e.value("/objectRef/name"_json_pointer, "");
    r.code = e.value("/responseStatus/code"_json_pointer, 0);
    r.message = e.value("/responseStatus/message"_json_pointer, "");
    out.push_back(r);
  }
  return out;
}

std::vector<Request> Denied(const std::vector<Request>& requests) {
  std::vector<Request> denied;
  for (const auto& r : requests) {
    if (r.code == 403) denied.push_back(r);
  }
  return denied;
}

std::string Summaries(const std::vector<Request>& requests, size_t max) {
  std::string s;
  for (size_t i = 0; i < requests.size() && i < max; ++i) s += "\n  " + requests[i].Summary();
  return s;
}

}  // namespace ayatori::install_e2e
