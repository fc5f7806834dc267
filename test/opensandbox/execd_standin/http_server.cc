#include "test/opensandbox/execd_standin/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <thread>

namespace execd_standin {
namespace {

constexpr size_t kMaxHeaderBytes = size_t{64} * 1024;
constexpr size_t kMaxBodyBytes = size_t{4} * 1024 * 1024;
constexpr int kIdleTimeoutMs = 120 * 1000;

const char* StatusText(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 411:
      return "Length Required";
    case 413:
      return "Payload Too Large";
    case 500:
      return "Internal Server Error";
    default:
      return "Unknown";
  }
}

bool WriteAll(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// Appends what the socket has to `buf`; false on EOF, error or idle timeout.
bool ReadMore(int fd, std::string& buf) {
  pollfd p{fd, POLLIN, 0};
  int r = poll(&p, 1, kIdleTimeoutMs);
  if (r <= 0) return false;
  char tmp[16384];
  ssize_t n = recv(fd, tmp, sizeof(tmp), 0);
  if (n < 0 && errno == EINTR) return true;
  if (n <= 0) return false;
  buf.append(tmp, static_cast<size_t>(n));
  return true;
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  size_t e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

void ParseQuery(const std::string& q, std::map<std::string, std::string>& out) {
  size_t start = 0;
  while (start <= q.size()) {
    size_t amp = q.find('&', start);
    std::string part = q.substr(start, amp == std::string::npos ? std::string::npos : amp - start);
    if (!part.empty()) {
      size_t eq = part.find('=');
      std::string k = part.substr(0, eq);
      std::string v = eq == std::string::npos ? "" : part.substr(eq + 1);
      std::replace(k.begin(), k.end(), '+', ' ');
      std::replace(v.begin(), v.end(), '+', ' ');
      out[PercentDecode(k)] = PercentDecode(v);
    }
    if (amp == std::string::npos) break;
    start = amp + 1;
  }
}

std::string Head(const Response& r, bool chunked, bool close) {
  std::string h = "HTTP/1.1 " + std::to_string(r.status) + " " + StatusText(r.status) + "\r\n";
  bool hasType = false;
  for (const auto& [k, v] : r.headers) {
    h += k;
    h += ": ";
    h += v;
    h += "\r\n";
    if (Lower(k) == "content-type") hasType = true;
  }
  if (!hasType && !r.body.empty()) h += "Content-Type: text/plain; charset=utf-8\r\n";
  if (chunked) {
    h += "Transfer-Encoding: chunked\r\n";
  } else {
    h += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
  }
  if (close) h += "Connection: close\r\n";
  return h + "\r\n";
}

void SendError(int fd, int status, const std::string& message) {
  Response r{status,
             {{"Content-Type", "application/json"}},
             R"({"code":"INVALID_REQUEST_BODY","message":")" + message + "\"}"};
  WriteAll(fd, Head(r, false, true) + r.body);
}

void ServeConnection(int fd, const Handler& handler) {
  std::string buf;
  while (true) {
    size_t end;
    while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
      if (buf.size() > kMaxHeaderBytes) return SendError(fd, 413, "headers too large");
      if (!ReadMore(fd, buf)) return;
    }
    Request req;
    std::string head = buf.substr(0, end);
    buf.erase(0, end + 4);
    size_t lineEnd = head.find("\r\n");
    std::string requestLine = head.substr(0, lineEnd);
    size_t sp1 = requestLine.find(' ');
    size_t sp2 = requestLine.rfind(' ');
    if (sp1 == std::string::npos || sp2 == sp1) return SendError(fd, 400, "bad request line");
    req.method = requestLine.substr(0, sp1);
    std::string target = requestLine.substr(sp1 + 1, sp2 - sp1 - 1);
    std::string version = requestLine.substr(sp2 + 1);
    size_t qm = target.find('?');
    req.path = PercentDecode(target.substr(0, qm));
    if (qm != std::string::npos) ParseQuery(target.substr(qm + 1), req.query);
    size_t pos = lineEnd == std::string::npos ? head.size() : lineEnd + 2;
    while (pos < head.size()) {
      size_t next = head.find("\r\n", pos);
      std::string line =
          head.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
      size_t colon = line.find(':');
      if (colon != std::string::npos) {
        req.headers[Lower(line.substr(0, colon))] = Trim(line.substr(colon + 1));
      }
      if (next == std::string::npos) break;
      pos = next + 2;
    }
    if (req.headers.count("transfer-encoding") != 0) {
      return SendError(fd, 411, "chunked request bodies are not supported; send Content-Length");
    }
    size_t length = 0;
    if (auto it = req.headers.find("content-length"); it != req.headers.end()) {
      char* e = nullptr;
      unsigned long long n = std::strtoull(it->second.c_str(), &e, 10);
      if (e == it->second.c_str() || *e != '\0') return SendError(fd, 400, "bad Content-Length");
      if (n > kMaxBodyBytes) return SendError(fd, 413, "body too large");
      length = static_cast<size_t>(n);
    }
    while (buf.size() < length) {
      if (!ReadMore(fd, buf)) return;
    }
    req.body = buf.substr(0, length);
    buf.erase(0, length);
    bool close = version == "HTTP/1.0" || Lower(req.headers["connection"]) == "close";

    Reply reply = handler(req);
    if (reply.stream) {
      if (!WriteAll(fd, Head(reply.response, true, close))) return;
      bool alive = true;
      reply.stream([&](const std::string& data) {
        if (!alive || data.empty()) return alive;
        char size[32];
        snprintf(size, sizeof(size), "%zx\r\n", data.size());
        alive = WriteAll(fd, size + data + "\r\n");
        return alive;
      });
      if (!alive || !WriteAll(fd, "0\r\n\r\n")) return;
    } else if (!WriteAll(fd, Head(reply.response, false, close) + reply.response.body)) {
      return;
    }
    if (close) return;
  }
}

}  // namespace

std::string PercentDecode(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool Serve(const std::string& host, int port, const Handler& handler, std::string& error) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = std::string("socket: ") + strerror(errno);
    return false;
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    error = "not a numeric IPv4 address: " + host;
    return false;
  }
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 128) != 0) {
    error = "listen on " + host + ":" + std::to_string(port) + ": " + strerror(errno);
    close(fd);
    return false;
  }
  // Only now: a sandbox's output then says whether execd got its port (docs/opensandbox.md).
  std::cerr << "execd-standin: listening on " << host << ":" << port << "\n";
  while (true) {
    int c = accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) {
      if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE) continue;
      error = std::string("accept: ") + strerror(errno);
      return false;
    }
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    std::thread([c, &handler] {
      ServeConnection(c, handler);
      close(c);
    }).detach();
  }
}

}  // namespace execd_standin
