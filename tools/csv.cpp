#include "tools/csv.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <stdexcept>

#include "sim/spec_error.hpp"

namespace clustersim::tools {
namespace {

std::string quote(const std::string& field) {
  if (field.find_first_of(",\"\n\r") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// One CSV record and the line it starts on.
struct Record {
  std::vector<std::string> fields;
  int line = 0;
};

// Splits RFC 4180 text into records (quoted fields may hold commas, quotes and newlines).
std::vector<Record> tokenize(const std::string& text, const std::string& origin) {
  std::vector<Record> records;
  Record current{{}, 1};
  std::string field;
  bool quoted = false;
  bool any = false;
  int line = 1;
  auto end_record = [&] {
    if (any || !field.empty()) {
      current.fields.push_back(field);
      records.push_back(current);
    }
    current = Record{{}, line};
    field.clear();
    any = false;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        line += c == '\n' ? 1 : 0;
        field += c;
      }
    } else if (c == '"' || c == ',') {
      if (c == ',') {
        current.fields.push_back(field);
        field.clear();
      }
      quoted = c == '"';
      any = true;
    } else if (c == '\n') {
      ++line;
      end_record();
    } else if (c != '\r') {
      field += c;
      any = true;
    }
  }
  if (quoted) throw SpecError(origin, current.line, "", "unterminated quoted field");
  end_record();
  return records;
}

}  // namespace

std::size_t CsvTable::column(const std::string& name) const {
  for (std::size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return i;
  }
  throw std::out_of_range("no column '" + name + "'");
}

std::string to_csv(const CsvTable& table) {
  std::string out;
  auto line = [&out](const std::vector<std::string>& fields) {
    for (std::size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + quote(fields[i]);
    out += "\n";
  };
  line(table.header);
  for (const auto& row : table.rows) line(row);
  return out;
}

CsvTable parse_csv(const std::string& text, const std::string& origin) {
  const std::vector<Record> records = tokenize(text, origin);
  if (records.empty()) throw SpecError(origin, 0, "", "empty CSV file (no header)");
  CsvTable table;
  table.header = records.front().fields;
  for (std::size_t r = 1; r < records.size(); ++r) {
    if (records[r].fields.size() != table.header.size()) {
      throw SpecError(origin, records[r].line,  "",
                      "row has " + std::to_string(records[r].fields.size()) +
                          " fields, the header " + std::to_string(table.header.size()));
    }
    table.rows.push_back(records[r].fields);
    table.row_lines.push_back(records[r].line);
  }
  return table;
}

std::optional<double> parse_number(const std::string& text) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used != text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::string csv_number(double value, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << value;
  return s.str();
}

std::string significant_number(double value, int significant) {
  if (!std::isfinite(value) || value == 0) return csv_number(value, significant - 1);
  const int magnitude = static_cast<int>(std::floor(std::log10(std::fabs(value))));
  return csv_number(value, std::max(0, significant - 1 - magnitude));
}

}  // namespace clustersim::tools
