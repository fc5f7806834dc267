#include "test/adapters/docker/e2e_support.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <random>

#include "adapters/docker/engine.h"
#include "base/url.h"
#include "test/support/process.h"
#include "test/support/testenv.h"
#include "test/support/wait.h"

namespace ayatori::adapters::docker::e2e {

using nlohmann::json;

std::map<std::string, std::string> ReadEnvFile(const std::string& path) {
  std::map<std::string, std::string> vars;
  std::ifstream in(path);
  if (!in) {
    ADD_FAILURE() << path << " does not exist: the service it describes is not running";
    return vars;
  }
  std::string line;
  const std::string prefix = "export ";
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) != 0) continue;
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    vars[line.substr(prefix.size(), eq - prefix.size())] = line.substr(eq + 1);
  }
  return vars;
}

std::string DockerHostOf(const std::string& dockerdDir) {
  auto vars = ReadEnvFile(dockerdDir + "/env.sh");
  auto it = vars.find("DOCKER_HOST");
  if (it == vars.end()) {
    ADD_FAILURE() << dockerdDir << "/env.sh has no DOCKER_HOST (hack/dockerd.sh up writes it)";
    return "unix:///nonexistent/docker.sock";
  }
  return it->second;
}

std::string FixtureEndpoint() {
  std::string dir = testing::RequiredEnv("AYATORI_DOCKERD_DIR");
  return DockerHostOf(dir);
}

std::string NewUid() {
  static std::mt19937_64 rng{std::random_device{}()};
  char buf[40];
  uint64_t a = rng(), b = rng();
  std::snprintf(buf, sizeof buf, "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(a >> 32),
                static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(a & 0xffff),
                static_cast<unsigned>(b >> 48),
                static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return buf;
}

json Parameters(const std::string& endpoint, const json& spec) {
  json s = spec;
  s["endpoint"] = endpoint;
  return json{{"apiVersion", "execution.ayatori.ddupan.top/v1alpha1"},
              {"kind", "DockerExecutionParameters"},
              {"metadata", {{"name", "e2e"}}},
              {"spec", s}};
}

ExecutionRequest MakeRequest(const std::string& endpoint, const std::string& name,
                             const std::string& image, std::vector<std::string> command,
                             std::vector<std::string> args, const json& spec) {
  ExecutionRequest r;
  r.job.metadata.namespace_ = "e2e-docker";
  r.job.metadata.name = name;
  r.job.metadata.uid = NewUid();
  r.job.spec.task.image = image;
  r.job.spec.task.command = std::move(command);
  r.job.spec.task.args = std::move(args);
  r.parameters = Parameters(endpoint, spec);
  return r;
}

ExecutionKey KeyOf(const ExecutionRequest& request, const Observation& observed) {
  ExecutionKey k;
  k.uid = request.job.metadata.uid;
  k.namespace_ = request.job.metadata.namespace_;
  k.name = request.job.metadata.name;
  k.references = observed.references;
  k.parameters = request.parameters;
  return k;
}

std::string PhaseName(const Observation& o) {
  return std::string(ExecutionPhaseName(o.phase)) + (o.reason.empty() ? "" : "/" + o.reason) +
         (o.message.empty() ? "" : " (" + o.message + ")");
}

Observation WaitFor(Adapter& adapter, const ExecutionKey& key,
                    const std::function<bool(const Observation&)>& done,
                    std::chrono::milliseconds deadline, const std::string& what) {
  Observation o;
  const bool reached = ayatori::testing::Eventually(
      [&] {
        o = adapter.Observe(key);
        return done(o);
      },
      deadline, std::chrono::milliseconds(50));
  if (reached) return o;
  ADD_FAILURE() << "timed out after " << deadline.count() << "ms waiting for " << what
                << "; last observation: " << PhaseName(o);
  return o;
}

Observation WaitForStopped(Adapter& adapter, const ExecutionKey& key,
                           std::chrono::milliseconds deadline) {
  return WaitFor(
      adapter, key, [](const Observation& o) { return IsStopped(o.phase); }, deadline,
      "the container to stop");
}

namespace {

EngineClient Client(const std::string& endpoint) {
  auto ep = ParseEngineEndpoint(endpoint, false);
  EXPECT_TRUE(ep.ok()) << ep.status().ToString();
  return EngineClient(ep.ok() ? *ep : EngineEndpoint{}, {}, "1.41", {});
}

}  // namespace

int CountContainers(const std::string& endpoint, const std::string& uid) {
  EngineClient client = Client(endpoint);
  json filters = {{"label", {std::string(api::kJobUidLabel) + "=" + uid}}};
  auto r =
      client.Call("GET", "/containers/json?all=1&filters=" + base::PercentEncode(filters.dump()));
  if (!r.ok() || r->status != 200) {
    ADD_FAILURE() << "listing containers failed: " << (r.ok() ? r->body : r.status().ToString());
    return -1;
  }
  return static_cast<int>(json::parse(r->body).size());
}

void RemoveImage(const std::string& endpoint, const std::string& image) {
  EngineClient client = Client(endpoint);
  auto r = client.Call("DELETE", "/images/" + image + "?force=1");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->status == 200 || r->status == 404) << r->status << " " << r->body;
}

TcpListener::TcpListener() {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(fd_, 16) != 0 || getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ADD_FAILURE() << "cannot listen on 127.0.0.1";
    return;
  }
  port_ = ntohs(addr.sin_port);
}

TcpListener::~TcpListener() {
  if (fd_ >= 0) close(fd_);
}

PongServer::PongServer()
    : thread_([this] {
        while (!done_) {
          int c = listener_.Accept(std::chrono::milliseconds(100));
          if (c < 0) continue;
          (void)!write(c, "pong\n", 5);
          close(c);
        }
      }) {}

PongServer::~PongServer() { Stop(); }

void PongServer::Stop() {
  done_ = true;
  if (thread_.joinable()) thread_.join();
}

int TcpListener::Accept(std::chrono::milliseconds deadline) {
  pollfd p{fd_, POLLIN, 0};
  if (poll(&p, 1, static_cast<int>(deadline.count())) <= 0) return -1;
  int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (c >= 0) ++accepted_;
  return c;
}

bool WaitForPeerClose(int fd, std::chrono::milliseconds deadline) {
  auto until = std::chrono::steady_clock::now() + deadline;
  char buf[256];
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) return true;
  }
}

bool RunHackScript(const std::string& script, const std::vector<std::string>& args,
                   const std::vector<std::string>& extraEnv, std::string* out) {
  std::string source = testing::RequiredEnv("AYATORI_SOURCE_DIR");
  std::vector<std::string> argv = {source + "/hack/" + script};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = testing::RunProcess(argv, "", extraEnv);
  if (r.exitCode != 0) {
    ADD_FAILURE() << "hack/" << script << " failed (" << r.exitCode << "):\n" << r.out << r.err;
    return false;
  }
  if (out != nullptr) *out = r.out;
  return true;
}

}  // namespace ayatori::adapters::docker::e2e
