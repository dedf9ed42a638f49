// Forked children that run one function each and report through a pipe: one SimGrid engine per
// process (3.32 cannot re-create an engine), so every simulation runs in a child.
// run_in_subprocess waits for one child; tools/worker_pool runs several with spawn/reap.
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "sim/engine.hpp"

namespace clustersim::sim {
namespace {

void write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
}

std::string read_all(int fd) {
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// Child: runs fn, sends a status byte ('O' ok, 'E' error) followed by the payload.
[[noreturn]] void child_main(int fd, const std::function<std::string()>& fn, const std::string& who) {
  std::string payload;
  char status = 'O';
  try {
    payload = fn();
  } catch (const std::exception& e) {
    status = 'E';
    payload = e.what();
  } catch (...) {
    status = 'E';
    payload = "unknown exception in " + who;
  }
  write_all(fd, &status, 1);
  write_all(fd, payload.data(), payload.size());
  ::close(fd);
  // _exit: skip atexit handlers and static destructors inherited from the parent.
  ::_exit(0);
}

}  // namespace

Subprocess spawn_subprocess(const std::function<std::string()>& fn, const std::string& who) {
  std::fflush(nullptr);  // else buffered output would be written by both processes
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(std::string("pipe failed: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::close(fds[0]);
    child_main(fds[1], fn, who);
  }
  ::close(fds[1]);
  return Subprocess{pid, fds[0]};
}

SubprocessResult reap_subprocess(const Subprocess& child, const std::string& data,
                                 const std::string& who) {
  ::close(child.fd);
  int status = 0;
  rusage usage{};
  while (::wait4(child.pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  SubprocessResult r;
  r.cpu_s = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
            1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
  if (data.empty()) {
    const std::string why = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                                : "exit status " + std::to_string(WEXITSTATUS(status));
    r.payload = who + " died without a result (" + why + ")";
    return r;
  }
  r.ok = data[0] == 'O';
  r.payload = data.substr(1);
  return r;
}

std::string run_in_subprocess(const std::function<std::string()>& fn) {
  const std::string who = "simulation process";
  const Subprocess child = spawn_subprocess(fn, who);
  SubprocessResult r = reap_subprocess(child, read_all(child.fd), who);
  if (!r.ok) throw std::runtime_error(r.payload);
  return std::move(r.payload);
}

}  // namespace clustersim::sim
