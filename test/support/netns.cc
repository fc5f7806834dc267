#include "test/support/netns.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "test/support/process.h"

namespace ayatori::testing {
namespace {

Status Ip(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"ip"};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessResult r = RunProcess(argv);
  if (r.exitCode == 0) return Status::Ok();
  std::string cmd;
  for (const auto& a : argv) cmd += a + " ";
  return Status(StatusCode::kInternal, cmd + "failed: " + r.err);
}

// Copies between two connected sockets until either side closes.
void Pump(int a, int b) {
  std::array<pollfd, 2> fds{pollfd{a, POLLIN, 0}, pollfd{b, POLLIN, 0}};
  std::array<char, 16384> buf{};
  for (;;) {
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    bool done = false;
    for (int i = 0; i < 2 && !done; ++i) {
      if (fds[i].revents == 0) continue;
      ssize_t n = read(fds[i].fd, buf.data(), buf.size());
      if (n <= 0) {
        done = true;
        break;
      }
      const int to = fds[1 - i].fd;
      for (ssize_t off = 0; off < n;) {
        ssize_t w = write(to, buf.data() + off, static_cast<size_t>(n - off));
        if (w <= 0) {
          done = true;
          break;
        }
        off += w;
      }
    }
    if (done) break;
  }
  shutdown(a, SHUT_RDWR);
  shutdown(b, SHUT_RDWR);
}

}  // namespace

StatusOr<std::unique_ptr<TestNetns>> TestNetns::Create(const std::string& tag) {
  std::unique_ptr<TestNetns> ns(new TestNetns());
  const int pid = static_cast<int>(getpid());
  ns->name_ = "ayatori-" + tag + "-" + std::to_string(pid);
  ns->hostVeth_ = "ayh" + std::to_string(pid);  // at most 15 characters
  const std::string innerVeth = "ayi" + std::to_string(pid);
  // Point-to-point /32 addresses from the upper half of TEST-NET-1: the machine's own interface
  // may sit on 192.0.2.0/24 (this one does, with its gateway on 192.0.2.1), so a subnet route
  // here could take its traffic; two host routes for unused addresses take nothing else.
  // 192.0.2.130-199 only: the real node's pods take 192.0.2.200-250 (hack/testenv/realnode.sh).
  const int inner = 130 + (pid % 35) * 2;
  ns->hostAddress_ = "192.0.2." + std::to_string(inner + 1);
  ns->innerAddress_ = "192.0.2." + std::to_string(inner);
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"netns", "add", ns->name_},
           {"link", "add", ns->hostVeth_, "type", "veth", "peer", "name", innerVeth},
           {"link", "set", innerVeth, "netns", ns->name_},
           {"addr", "add", ns->hostAddress_, "peer", ns->innerAddress_ + "/32", "dev",
            ns->hostVeth_},
           {"link", "set", ns->hostVeth_, "up"},
           {"-n", ns->name_, "addr", "add", ns->innerAddress_, "peer", ns->hostAddress_ + "/32",
            "dev", innerVeth},
           {"-n", ns->name_, "link", "set", innerVeth, "up"},
           {"-n", ns->name_, "link", "set", "lo", "up"},
       }) {
    if (Status s = Ip(args); !s.ok()) return s;  // the destructor removes what was made
  }
  return ns;
}

TestNetns::~TestNetns() {
  stopping_ = true;
  {
    std::lock_guard lock(mu_);
    for (int fd : fds_) shutdown(fd, SHUT_RDWR);
  }
  for (auto& t : threads_) t.join();
  for (int fd : fds_) close(fd);
  if (!name_.empty()) (void)Ip({"netns", "delete", name_});
  // Normally gone with its peer; left only when the namespace was never made.
  if (!hostVeth_.empty()) (void)RunProcess({"ip", "link", "delete", hostVeth_});
}

std::vector<std::string> TestNetns::ExecPrefix() const {
  return {"/usr/sbin/ip", "netns", "exec", name_};
}

Status TestNetns::ForwardLoopbackPort(int port) {
  // The listening socket is made by a thread that enters the namespace (setns changes only the
  // calling thread); it stays in that namespace when the thread ends.
  int listenFd = -1;
  std::string error;
  std::thread([&] {
    int target = open(("/var/run/netns/" + name_).c_str(), O_RDONLY | O_CLOEXEC);
    if (target < 0 || setns(target, CLONE_NEWNET) != 0) {
      error = std::string("entering ") + name_ + ": " + std::strerror(errno);
      if (target >= 0) close(target);
      return;
    }
    close(target);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 64) != 0) {
      error = std::string("listening in ") + name_ + ": " + std::strerror(errno);
      close(fd);
      return;
    }
    listenFd = fd;
  }).join();
  if (listenFd < 0) return Status(StatusCode::kInternal, error);
  std::lock_guard lock(mu_);
  fds_.push_back(listenFd);
  threads_.emplace_back([this, listenFd, port] {
    for (;;) {
      int in = accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC);
      if (in < 0) {
        if (errno == EINTR) continue;
        return;  // shut down
      }
      int out = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(static_cast<uint16_t>(port));
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (connect(out, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        close(in);
        close(out);
        continue;
      }
      std::lock_guard inner(mu_);
      if (stopping_) {
        close(in);
        close(out);
        return;
      }
      fds_.push_back(in);
      fds_.push_back(out);
      threads_.emplace_back([in, out] { Pump(in, out); });
    }
  });
  return Status::Ok();
}

}  // namespace ayatori::testing
