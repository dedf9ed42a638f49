#include <iostream>

#include "sim/spec_error.hpp"
#include "tools/commands.hpp"

namespace clustersim::tools {

int run_guarded(const std::function<int()>& body) {
  try {
    return body();
  } catch (const SpecError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}

int run_guarded_usage(const std::function<int()>& body) {
  return run_guarded([&] {
    try {
      return body();
    } catch (const std::invalid_argument& e) {
      std::cerr << "error: " << e.what() << "\n";
      return 2;
    }
  });
}

}  // namespace clustersim::tools
