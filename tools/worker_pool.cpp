#include "tools/worker_pool.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "sim/engine.hpp"

namespace clustersim::tools {
namespace {

const char* const kWho = "worker process";

struct Running {
  std::size_t task = 0;
  sim::Subprocess child;
  std::string data;
};

// Reads what is available from every running worker; returns the index of one that reached
// end of file, or -1.
int poll_once(std::vector<Running>& running) {
  std::vector<pollfd> fds;
  for (const auto& r : running) fds.push_back(pollfd{r.child.fd, POLLIN, 0});
  if (::poll(fds.data(), fds.size(), -1) < 0) {
    if (errno == EINTR) return -1;
    throw std::runtime_error(std::string("poll failed: ") + std::strerror(errno));
  }
  for (std::size_t i = 0; i < fds.size(); ++i) {
    if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
    char buf[65536];
    const ssize_t n = ::read(running[i].child.fd, buf, sizeof buf);
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
      running.push_back(Running{next, sim::spawn_subprocess(tasks[next], kWho), {}});
      ++next;
    }
    const int ended = poll_once(running);
    if (ended < 0) continue;
    Running r = std::move(running[static_cast<std::size_t>(ended)]);
    running.erase(running.begin() + ended);
    const sim::SubprocessResult out = sim::reap_subprocess(r.child, r.data, kWho);
    results[r.task] = TaskResult{out.ok, out.payload, out.cpu_s};
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
