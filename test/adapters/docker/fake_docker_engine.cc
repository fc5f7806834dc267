#include "fake_docker_engine.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <sstream>

namespace ayatori::adapters::docker::testing {

namespace {

// The API version prefix the client puts before every path but /version.
std::string WithoutVersionPrefix(const std::string& path) {
  if (!path.starts_with("/v")) return path;
  size_t slash = path.find('/', 1);
  if (slash == std::string::npos) return path;
  const std::string version = path.substr(2, slash - 2);
  const bool numeric = !version.empty() && std::all_of(version.begin(), version.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0 || c == '.';
  });
  return numeric ? path.substr(slash) : path;
}

}  // namespace

FakeDockerEngine::FakeDockerEngine() {
  std::string pattern = (std::filesystem::temp_directory_path() / "ayatori-fake-engine-XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) {
    ADD_FAILURE() << "cannot create a directory for the fake engine's socket";
    return;
  }
  dir_ = pattern;
  socketPath_ = dir_ + "/docker.sock";
  Answer("GET /version", 200, R"({"ApiVersion": "1.41"})");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socketPath_.c_str(), sizeof addr.sun_path - 1);
  fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(fd_, 16) != 0) {
    ADD_FAILURE() << "cannot listen on " << socketPath_;
    return;
  }
  thread_ = std::thread([this] { Serve(); });
}

FakeDockerEngine::~FakeDockerEngine() {
  done_ = true;
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) close(fd_);
  if (!dir_.empty()) std::filesystem::remove_all(dir_);
}

void FakeDockerEngine::Answer(const std::string& methodAndPath, int status, std::string body) {
  std::lock_guard lock(mu_);
  answers_[methodAndPath] = {status, std::move(body)};
}

std::vector<FakeDockerEngine::Request> FakeDockerEngine::Requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

int FakeDockerEngine::Count(const std::string& methodAndPath) const {
  std::lock_guard lock(mu_);
  return static_cast<int>(std::count_if(requests_.begin(), requests_.end(), [&](const Request& r) {
    return (r.method + " " + r.path).starts_with(methodAndPath);
  }));
}

void FakeDockerEngine::Serve() {
  while (!done_) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    int connection = accept(fd_, nullptr, nullptr);
    if (connection < 0) continue;
    Handle(connection);
    close(connection);
  }
}

namespace {

// The request line and headers of one request, its body read and dropped; nullopt when the
// client closed the connection before.
std::optional<FakeDockerEngine::Request> ReadRequest(int connection) {
  std::string in;
  char buf[4096];
  size_t headerEnd = std::string::npos;
  while (headerEnd == std::string::npos) {
    ssize_t n = read(connection, buf, sizeof buf);
    if (n <= 0) return std::nullopt;
    in.append(buf, static_cast<size_t>(n));
    headerEnd = in.find("\r\n\r\n");
  }
  std::istringstream head(in.substr(0, headerEnd));
  FakeDockerEngine::Request request;
  std::string line;
  std::getline(head, line);
  std::istringstream first(line);
  first >> request.method >> request.path;
  request.path = WithoutVersionPrefix(request.path);
  while (std::getline(head, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const size_t start = line.find_first_not_of(' ', colon + 1);
    request.headers[name] = start == std::string::npos ? "" : line.substr(start);
  }
  const size_t bodyBytes = request.headers.contains("content-length")
                               ? std::stoul(request.headers["content-length"])
                               : 0;
  for (size_t have = in.size() - headerEnd - 4; have < bodyBytes;) {
    ssize_t n = read(connection, buf, sizeof buf);
    if (n <= 0) return std::nullopt;
    have += static_cast<size_t>(n);
  }
  return request;
}

void WriteAll(int connection, const std::string& out) {
  for (size_t sent = 0; sent < out.size();) {
    ssize_t n = write(connection, out.data() + sent, out.size() - sent);
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
}

}  // namespace

// One request per connection (the answer says Connection: close).
void FakeDockerEngine::Handle(int connection) {
  auto request = ReadRequest(connection);
  if (!request) return;
  std::pair<int, std::string> answer{404, R"({"message": "not found in the fake engine"})"};
  {
    std::lock_guard lock(mu_);
    const std::string key = request->method + " " + request->path;
    size_t longest = 0;
    for (const auto& [prefix, canned] : answers_) {
      if (key.starts_with(prefix) && prefix.size() >= longest) {
        longest = prefix.size();
        answer = canned;
      }
    }
    requests_.push_back(std::move(*request));
  }
  WriteAll(connection, "HTTP/1.1 " + std::to_string(answer.first) +
                           " Fake\r\nContent-Type: application/json\r\nContent-Length: " +
                           std::to_string(answer.second.size()) + "\r\nConnection: close\r\n\r\n" +
                           answer.second);
}

}  // namespace ayatori::adapters::docker::testing
