// A setuid-root program for the hostile-workload tests (test/e2e/docker_hostile_e2e_test.cc):
// installed mode 4755 owned by root in an image of its own (FROM scratch: linked statically), it
// tries to become root and prints what it got. Under no-new-privileges the exec does not raise
// the effective uid, so setuid(0) fails with EPERM; with privilege escalation allowed it
// succeeds. Exit 0 when it became root, 1 when it did not.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

int main() {
  std::printf("before: uid=%d euid=%d\n", static_cast<int>(getuid()), static_cast<int>(geteuid()));
  if (setuid(0) != 0) {
    std::printf("setuid(0) failed: %s\n", std::strerror(errno));
    return 1;
  }
  std::printf("setuid(0) succeeded: uid=%d euid=%d\n", static_cast<int>(getuid()),
              static_cast<int>(geteuid()));
  return 0;
}
