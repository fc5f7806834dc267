#include "test/adapters/opensandbox/fake_opensandbox.h"

#include <cstdio>
#include <cstdlib>

namespace ayatori::adapters::opensandbox::testing {

namespace {

using nlohmann::json;

kube::HttpResponse Json(int status, const json& body) { return {status, body.dump(), ""}; }

kube::HttpResponse NotFound(const std::string& what) {
  return Json(404, {{"code", "DOCKER::SANDBOX_NOT_FOUND"}, {"message", what + " not found."}});
}

std::string UidInMarker(const std::string& content) {
  constexpr std::string_view kMarker = "/tmp/.ayatori-task-";
  size_t p = content.find(kMarker);
  if (p == std::string::npos) return "";
  p += kMarker.size();
  size_t e = content.find('\'', p);
  return content.substr(p, e - p);
}

}  // namespace

std::optional<FakeOpenSandbox::Fault> FakeOpenSandbox::TakeFault(const kube::HttpRequest& r) {
  std::lock_guard lock(mu_);
  requests_.push_back(r);
  for (auto it = faults_.begin(); it != faults_.end(); ++it) {
    if (r.method == it->method && r.url.find(it->urlContains) != std::string::npos &&
        r.body.find(it->bodyContains) != std::string::npos) {
      Fault f = *it;
      faults_.erase(it);
      return f;
    }
  }
  return std::nullopt;
}

StatusOr<kube::HttpResponse> FakeOpenSandbox::Respond(const kube::HttpRequest& r) {
  auto fault = TakeFault(r);
  if (fault && fault->kind == Fault::Kind::kFailBefore) {
    return Status(StatusCode::kUnavailable, "injected: connection refused");
  }
  if (fault && fault->kind == Fault::Kind::kHttp) {
    return kube::HttpResponse{fault->httpStatus, fault->httpBody, ""};
  }
  kube::HttpResponse resp = Handle(r);
  if (resp.status == 0) return Status(StatusCode::kUnavailable, "injected: server down");
  if (fault) return Status(StatusCode::kUnavailable, "injected: the answer was lost");
  return resp;
}

StatusOr<kube::HttpResponse> FakeOpenSandbox::Do(const kube::HttpRequest& r) { return Respond(r); }

StatusOr<kube::HttpResponse> FakeOpenSandbox::Stream(
    const kube::HttpRequest& r, std::stop_token,
    const std::function<bool(std::string_view)>& onData) {
  auto answer = Respond(r);
  if (!answer.ok() || answer->status != 200) return answer;
  const kube::HttpResponse& resp = *answer;
  bool cut;
  {
    std::lock_guard lock(mu_);
    cut = cutStream_;
  }
  // Hand the body over in small pieces: the parser must join frames split anywhere.
  for (size_t i = 0; i < resp.body.size(); i += 7) {
    if (!onData(std::string_view(resp.body).substr(i, 7))) return kube::HttpResponse{200, "", ""};
  }
  if (cut) return Status(StatusCode::kUnavailable, "injected: incomplete chunked read");
  return kube::HttpResponse{200, "", ""};
}

kube::HttpResponse FakeOpenSandbox::Handle(const kube::HttpRequest& r) {
  std::lock_guard lock(mu_);
  const std::string server = kServer;
  const std::string execd = "http://" + endpoint_;
  if (r.url.rfind(server, 0) == 0) {
    if (serverDown_) return {0, "", ""};
    return Server(r.method, r.url.substr(server.size()), r.body);
  }
  if (r.url.rfind(execd, 0) == 0) return Execd(r.method, r.url.substr(execd.size()), r.body);
  return {0, "", ""};
}

kube::HttpResponse FakeOpenSandbox::Server(const std::string& method, const std::string& path,
                                           const std::string& body) {
  if (method == "POST" && path == "/sandboxes") {
    json req = json::parse(body, nullptr, false);
    lastCreate_ = req;
    char id[40];
    snprintf(id, sizeof(id), "00000000-0000-4000-8000-%012d", nextId_++);
    json sandbox = {{"id", id},
                    {"status", {{"state", "Running"}, {"reason", "CONTAINER_RUNNING"}}},
                    {"metadata", req.value("metadata", json::object())},
                    {"createdAt", "2026-01-01T00:00:0" + std::to_string(nextId_ % 10) + "Z"}};
    if (req.contains("timeout") && req["timeout"].is_number()) {
      sandbox["expiresAt"] = "2099-01-01T00:00:00Z";
    }
    sandboxes_[id] = sandbox;
    return Json(202, sandbox);
  }
  if (method == "GET" && path.rfind("/sandboxes?", 0) == 0) {
    std::string uid;
    constexpr std::string_view kKey = "job-uid%3D";
    if (size_t p = path.find(kKey); p != std::string::npos) {
      size_t e = path.find('&', p);
      uid = path.substr(p + kKey.size(), e == std::string::npos ? e : e - p - kKey.size());
    }
    json items = json::array();
    for (const auto& [id, s] : sandboxes_) {
      if (uid.empty() || s["metadata"].value("execution.ayatori.ddupan.top/job-uid", "") == uid) {
        items.push_back(s);
      }
    }
    return Json(200, {{"items", items}, {"pagination", {{"totalItems", items.size()}}}});
  }
  constexpr std::string_view kPrefix = "/sandboxes/";
  if (path.rfind(kPrefix, 0) == 0) {
    std::string rest = path.substr(kPrefix.size());
    std::string id = rest.substr(0, rest.find('/'));
    auto it = sandboxes_.find(id);
    if (it == sandboxes_.end()) return NotFound("Sandbox " + id);
    if (method == "GET" && rest == id) return Json(200, it->second);
    if (method == "DELETE" && rest == id) {
      sandboxes_.erase(it);
      return {204, "", ""};
    }
    if (method == "GET" && rest.rfind(id + "/endpoints/44772", 0) == 0) {
      return Json(200, {{"endpoint", endpoint_}});
    }
  }
  return Json(404, {{"detail", "Not Found"}});
}

kube::HttpResponse FakeOpenSandbox::Execd(const std::string& method, const std::string& path,
                                          const std::string& body) {
  if (method == "GET" && path == "/ping") return {200, "", ""};
  if (method == "POST" && path == "/command") {
    json req = json::parse(body, nullptr, false);
    const std::string content = req.value("command", "");
    char id[33];
    snprintf(id, sizeof(id), "%032d", nextId_++);
    Command c;
    c.content = content;
    const std::string uid = UidInMarker(content);
    if (foreign_ && content.find("AYATORI_JOB_UID") != std::string::npos) {
      // The sandbox's AYATORI_JOB_UID is another Job's: the identity check refuses.
      c.running = false;
      if (content.find("printf absent") != std::string::npos) {
        c.output = "foreign";
      } else {
        c.exitCode = kForeignSandboxExitCode;
        c.error = "exit status 124";
        c.output = ForeignSandboxLine(uid) + "\n";
      }
    } else if (content.find("set -C") != std::string::npos) {
      if (markers_.count(uid) == 0) {
        markers_[uid] = id;
        ++taskStarts_;
      } else {
        c.running = false;
        c.exitCode = kGuardExitCode;
        c.error = "exit status 125";
        c.output = GuardLine(uid) + "\n";
      }
    } else if (content.find("printf absent") != std::string::npos) {
      c.running = false;
      auto m = markers_.find(uid);
      c.output = m == markers_.end() ? "absent" : "started:/tmp/" + m->second + ".output\n";
    } else {
      c.running = false;  // any other command (e.g. preparing the working directory) succeeds
    }
    commands_[id] = c;
    const std::string prefix = dataPrefix_ ? "data: " : "";
    return {200,
            prefix + json{{"type", "init"}, {"text", id}, {"timestamp", 1}}.dump() + "\n\n" +
                prefix + json{{"type", "execution_complete"}, {"execution_time", 1}}.dump() +
                "\n\n",
            ""};
  }
  constexpr std::string_view kStatus = "/command/status/";
  if (method == "GET" && path.rfind(kStatus, 0) == 0) {
    std::string id = path.substr(kStatus.size());
    auto it = commands_.find(id);
    if (it == commands_.end()) {
      return Json(404, {{"code", "INVALID_REQUEST_BODY"}, {"message", "command not found: " + id}});
    }
    json s = {{"id", id},
              {"content", it->second.content},
              {"running", it->second.running},
              {"started_at", "2026-01-01T00:00:00.5Z"}};
    if (!it->second.running) {
      s["exit_code"] = it->second.exitCode;
      s["finished_at"] = "2026-01-01T00:00:02Z";
      if (!it->second.error.empty()) s["error"] = it->second.error;
    }
    return Json(200, s);
  }
  if (method == "GET" && path.rfind("/command/", 0) == 0 &&
      path.find("/logs") != std::string::npos) {
    std::string id = path.substr(9, path.find("/logs") - 9);
    auto it = commands_.find(id);
    if (it == commands_.end()) return Json(400, {{"code", "INVALID_REQUEST_BODY"}});
    // Like execd: the output from the byte offset `cursor` (non-numeric = 0) to its end.
    size_t cursor = 0;
    if (size_t q = path.find("cursor="); q != std::string::npos) {
      cursor = std::strtoull(path.c_str() + q + 7, nullptr, 10);
    }
    const std::string& out = it->second.output;
    return {200, cursor < out.size() ? out.substr(cursor) : std::string(), ""};
  }
  if (method == "DELETE" && path.rfind("/command?id=", 0) == 0) {
    auto it = commands_.find(path.substr(12));
    if (it == commands_.end() || !it->second.running) {
      return Json(500,
                  {{"code", "RUNTIME_ERROR"}, {"message", "error interruptting code context."}});
    }
    it->second.running = false;
    it->second.exitCode = -1;
    it->second.error = "signal: terminated";
    return {200, "", ""};
  }
  return {404, "404 page not found", ""};
}

}  // namespace ayatori::adapters::opensandbox::testing
