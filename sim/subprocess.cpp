// run_in_subprocess: one SimGrid engine per process (3.32 cannot re-create an engine), so each
// simulation runs in a forked child that writes its result to a pipe.
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
[[noreturn]] void child_main(int fd, const std::function<std::string()>& fn) {
  std::string payload;
  char status = 'O';
  try {
    payload = fn();
  } catch (const std::exception& e) {
    status = 'E';
    payload = e.what();
  } catch (...) {
    status = 'E';
    payload = "unknown exception in simulation process";
  }
  write_all(fd, &status, 1);
  write_all(fd, payload.data(), payload.size());
  ::close(fd);
  // _exit: skip atexit handlers and static destructors inherited from the parent.
  ::_exit(0);
}

}  // namespace

std::string run_in_subprocess(const std::function<std::string()>& fn) {
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
    child_main(fds[1], fn);
  }
  ::close(fds[1]);
  std::string data = read_all(fds[0]);
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (data.empty()) {
    std::string why = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                          : "exit status " + std::to_string(WEXITSTATUS(status));
    throw std::runtime_error("simulation process died without a result (" + why + ")");
  }
  if (data[0] == 'E') throw std::runtime_error(data.substr(1));
  return data.substr(1);
}

}  // namespace clustersim::sim
