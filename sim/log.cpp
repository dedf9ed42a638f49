#include "sim/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace clustersim {

std::shared_ptr<spdlog::logger> module_logger(const std::string& module) {
  if (auto existing = spdlog::get(module)) return existing;
  auto logger = spdlog::stderr_color_mt(module);
  logger->set_level(spdlog::level::warn);
  return logger;
}

}  // namespace clustersim
