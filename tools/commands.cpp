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

}  // namespace clustersim::tools
