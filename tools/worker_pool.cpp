#include "tools/worker_pool.hpp"

#include <poll.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace clustersim::tools {
namespace {

void write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

// Child side: status byte ('O' or 'E') then the payload; _exit skips the parent's atexit work.
[[noreturn]] void worker_main(int fd, const std::function<std::string()>& task) {
  std::string payload;
  char status = 'O';
  try {
    payload = task();
  } catch (const std::exception& e) {
    status = 'E';
    payload = e.what();
  } catch (...) {
    status = 'E';
    payload = "unknown exception in worker process";
  }
  write_all(fd, &status, 1);
  write_all(fd, payload.data(), payload.size());
  ::close(fd);
  ::_exit(0);
}

struct Running {
  std::size_t task = 0;
  pid_t pid = -1;
  int fd = -1;
  std::string data;
};

Running start(std::size_t index, const std::function<std::string()>& task) {
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
    worker_main(fds[1], task);
  }
  ::close(fds[1]);
  return Running{index, pid, fds[0], {}};
}

TaskResult finish(Running& r) {
  ::close(r.fd);
  int status = 0;
  rusage usage{};
  while (::wait4(r.pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  const double cpu = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                     1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
  if (r.data.empty()) {
    const std::string why = WIFSIGNALED(status)
                                ? "killed by signal " + std::to_string(WTERMSIG(status))
                                : "exit status " + std::to_string(WEXITSTATUS(status));
    return TaskResult{false, "worker process died without a result (" + why + ")", cpu};
  }
  return TaskResult{r.data[0] == 'O', r.data.substr(1), cpu};
}

// Reads what is available from every running worker; returns the index of one that reached
// end of file, or -1.
int poll_once(std::vector<Running>& running) {
  std::vector<pollfd> fds;
  for (const auto& r : running) fds.push_back(pollfd{r.fd, POLLIN, 0});
  if (::poll(fds.data(), fds.size(), -1) < 0) {
    if (errno == EINTR) return -1;
    throw std::runtime_error(std::string("poll failed: ") + std::strerror(errno));
  }
  for (std::size_t i = 0; i < fds.size(); ++i) {
    if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
    char buf[65536];
    const ssize_t n = ::read(running[i].fd, buf, sizeof buf);
    if (n > 0) {
      running[i].data.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

}  // namespace

std::vector<TaskResult> run_in_workers(const std::vector<std::function<std::string()>>& tasks,
                                       int jobs, const ProgressFn& progress) {
  if (jobs < 1) throw std::invalid_argument("worker count must be at least 1");
  std::vector<TaskResult> results(tasks.size());
  std::vector<Running> running;
  std::size_t next = 0;
  std::size_t done = 0;
  while (done < tasks.size()) {
    while (next < tasks.size() && running.size() < static_cast<std::size_t>(jobs)) {
      running.push_back(start(next, tasks[next]));
      ++next;
    }
    const int ended = poll_once(running);
    if (ended < 0) continue;
    Running r = std::move(running[static_cast<std::size_t>(ended)]);
    running.erase(running.begin() + ended);
    results[r.task] = finish(r);
    ++done;
    if (progress) progress(done, tasks.size());
  }
  return results;
}

int default_worker_count() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

}  // namespace clustersim::tools
