// The sim module's logger ("sim"). Libraries never print to stdout; logs go to stderr.
#pragma once

#include <memory>
#include <string>

#include <spdlog/spdlog.h>

namespace clustersim {

/// Returns (creating on first use) the stderr logger named `module`. Thread-safe.
std::shared_ptr<spdlog::logger> module_logger(const std::string& module);

}  // namespace clustersim
