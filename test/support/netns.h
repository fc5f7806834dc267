// A network namespace that a test makes for itself, for a process that must not listen on
// loopback: an aggregated API server, whose Endpoints kube-apiserver refuses to hold loopback
// addresses in. `ip netns add`, a veth pair with two point-to-point TEST-NET-1 addresses
// (192.0.2.128/25, RFC 5737 documentation addresses), removed again by the destructor.
// Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN).
//
// The process inside reaches the test control plane, which listens on 127.0.0.1 of the test's
// namespace, through ForwardLoopbackPort: a relay in the test process that listens on 127.0.0.1
// inside the namespace and connects to 127.0.0.1 outside, so that the ordinary kubeconfig works
// unchanged in there.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ayatori/status.h"

namespace ayatori::testing {

class TestNetns {
 public:
  // Creates namespace "ayatori-<tag>-<pid>" with a veth pair: hostAddress() on this side,
  // innerAddress() inside (a /32 each, chosen from the pid), loopback up inside.
  static StatusOr<std::unique_ptr<TestNetns>> Create(const std::string& tag);
  ~TestNetns();  // stops the relays, deletes the namespace (and with it the veth pair)
  TestNetns(const TestNetns&) = delete;
  TestNetns& operator=(const TestNetns&) = delete;

  const std::string& name() const { return name_; }
  const std::string& hostAddress() const { return hostAddress_; }
  const std::string& innerAddress() const { return innerAddress_; }
  // argv prefix that runs a program inside: {"/usr/sbin/ip", "netns", "exec", name}.
  std::vector<std::string> ExecPrefix() const;

  // 127.0.0.1:port inside the namespace leads to 127.0.0.1:port of the test's namespace.
  Status ForwardLoopbackPort(int port);

 private:
  TestNetns() = default;
  void Relay(int listenFd);

  std::string name_;
  std::string hostVeth_;
  std::string hostAddress_;
  std::string innerAddress_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::vector<int> fds_;  // listening and relayed sockets, shut down on destruction
  std::vector<std::thread> threads_;
};

}  // namespace ayatori::testing
