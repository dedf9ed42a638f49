#include "tools/csv.hpp"

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
  std::vector<std::vector<std::string>> records;
  std::vector<int> record_lines;
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false;
  bool any = false;
  int line = 1;
  int record_line = 1;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '"') {
      quoted = true;
      any = true;
    } else if (c == ',') {
      fields.push_back(field);
      field.clear();
      any = true;
    } else if (c == '\n') {
      if (any || !field.empty()) {
        fields.push_back(field);
        records.push_back(fields);
        record_lines.push_back(record_line);
      }
      fields.clear();
      field.clear();
      any = false;
      record_line = ++line;
    } else if (c != '\r') {
      field += c;
      any = true;
    }
  }
  if (quoted) throw SpecError(origin, record_line, "", "unterminated quoted field");
  if (any || !field.empty()) {
    fields.push_back(field);
    records.push_back(fields);
    record_lines.push_back(record_line);
  }
  if (records.empty()) throw SpecError(origin, 0, "", "empty CSV file (no header)");
  CsvTable table;
  table.header = records.front();
  for (std::size_t r = 1; r < records.size(); ++r) {
    if (records[r].size() != table.header.size()) {
      throw SpecError(origin, record_lines[r], "",
                      "row has " + std::to_string(records[r].size()) + " fields, the header " +
                          std::to_string(table.header.size()));
    }
    table.rows.push_back(records[r]);
  }
  return table;
}

std::string csv_number(double value, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << value;
  return s.str();
}

}  // namespace clustersim::tools
