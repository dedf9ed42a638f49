#include <iostream>

#include "sim/spec_error.hpp"
#include "tools/commands.hpp"

namespace clustersim::tools {

const CLI::Validator& decimal_integer() {
  static const CLI::Validator kDecimal(
      [](std::string& text) -> std::string {
        const std::size_t digits = !text.empty() && text[0] == '+' ? 1 : 0;
        bool ok = digits < text.size() && (text[digits] != '0' || text.size() == digits + 1);
        for (std::size_t i = digits; ok && i < text.size(); ++i) ok = text[i] >= '0' && text[i] <= '9';
        return ok ? std::string() : "'" + text + "' is not a plain decimal integer (no leading zeros, no 0x)";
      },
      "DECIMAL");
  return kDecimal;
}

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
