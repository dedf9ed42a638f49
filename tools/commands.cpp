#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <stdexcept>

#include "sim/spec_error.hpp"
#include "tools/commands.hpp"
#include "tools/csv.hpp"

namespace clustersim::tools {

const CLI::Validator& decimal_integer() {
  static const CLI::Validator kDecimal(
      [](std::string& text) -> std::string {
        bool ok = !text.empty() && (text[0] != '0' || text.size() == 1);
        for (std::size_t i = 0; ok && i < text.size(); ++i) ok = text[i] >= '0' && text[i] <= '9';
        return ok ? std::string() : "'" + text + "' is not a plain decimal integer (no sign, no leading zeros, no 0x)";
      },
      "DECIMAL");
  return kDecimal;
}

const CLI::Validator& finite_number() {
  static const CLI::Validator kFinite(
      [](std::string& text) -> std::string {
        return parse_number(text) ? std::string() : "'" + text + "' is not a finite number";
      },
      "NUMBER");
  return kFinite;
}

namespace {

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> items;
  std::size_t start = 0;
  for (std::size_t comma = text.find(','); comma != std::string::npos; comma = text.find(',', start)) {
    items.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  items.push_back(text.substr(start));
  return items;
}

// Whether two paths name one file; a path that does not exist yet is compared by its
// normalized absolute form.
bool same_file(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec);
  const fs::path ca = fs::weakly_canonical(a, ec);
  if (ec) return a == b;
  const fs::path cb = fs::weakly_canonical(b, ec);
  return ec ? a == b : ca == cb;
}

// Whether `path` can be written, asked before a simulation that may take minutes: its folder
// exists and is writable, and the path is not a folder.
void check_writable(const std::string& option, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    throw SpecError("<command line>", 0, option, "'" + path + "' is a folder, not a file");
  }
  const fs::path parent = fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  if (!fs::is_directory(parent, ec)) {
    throw SpecError("<command line>", 0, option, "cannot write '" + path + "': no folder '" + parent.string() + "'");
  }
  // An existing file (or device: /dev/null, /dev/stdout) needs its own write permission only; a
  // new one its folder's.
  const bool exists = fs::exists(path, ec);
  if (::access(exists ? path.c_str() : parent.c_str(), W_OK) != 0) {
    throw SpecError("<command line>", 0, option, "cannot write '" + path + "': permission denied");
  }
}

}  // namespace

void check_output_paths(const std::vector<std::pair<std::string, std::string>>& outputs,
                        const std::vector<std::string>& inputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const auto& [option, path] = outputs[i];
    if (path.empty()) continue;
    check_writable(option, path);
    for (const std::string& input : inputs) {
      std::error_code ec;
      if (!input.empty() && std::filesystem::exists(input, ec) && same_file(path, input)) {
        throw SpecError("<command line>", 0, option,
                        "'" + path + "' is an input of this command; writing it would overwrite it");
      }
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (!outputs[j].second.empty() && same_file(path, outputs[j].second)) {
        throw SpecError("<command line>", 0, option, "'" + path + "' is also the " + outputs[j].first + " output");
      }
    }
  }
}

CLI::Validator decimal_integer_list(std::int64_t min, std::int64_t max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        if (text.empty()) return "is empty (a comma-separated list, e.g. 64,128)";
        for (std::string item : split_commas(text)) {
          if (item.empty()) return "'" + text + "' has an empty item (separate the values with single commas)";
          const std::string bad = decimal_integer()(item);
          if (!bad.empty()) return bad;
          const std::string& digits = item;
          // Digits only, no leading zero: longer than max's digits is out of range for sure.
          if (digits.size() > std::to_string(max).size() || std::stoll(digits) < min || std::stoll(digits) > max)
            return "value " + item + " not in range [" + std::to_string(min) + " - " + std::to_string(max) + "]";
        }
        return "";
      },
      "INT,...");
}

std::vector<std::int64_t> parse_integer_list(const std::vector<std::string>& raw) {
  std::vector<std::int64_t> values;
  for (const std::string& text : raw) {
    for (const std::string& item : split_commas(text)) {
      try {
        values.push_back(std::stoll(item));
      } catch (const std::exception&) {
        throw std::invalid_argument("'" + item + "' is not an integer");
      }
    }
  }
  return values;
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
