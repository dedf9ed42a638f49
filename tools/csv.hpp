// CSV tables for scale and sweep outputs (RFC 4180 quoting), and the reader that
// `clustersim sweep merge` uses to combine shard outputs.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace clustersim::tools {

/// A table: a header and rows with one field per header column.
struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  /// 1-based line of the file where each row starts (parse_csv fills it; empty for a table
  /// built in memory).
  std::vector<int> row_lines;

  /// Index of column `name`. @throws std::out_of_range when absent.
  std::size_t column(const std::string& name) const;
};

/// The table as CSV text: fields with a comma, quote or newline are quoted, quotes doubled.
std::string to_csv(const CsvTable& table);

/// Parses CSV text written by to_csv (or any RFC 4180 file). @throws SpecError(origin, line,
/// "", reason) for an unterminated quote or a row whose field count differs from the header's.
CsvTable parse_csv(const std::string& text, const std::string& origin);

/// The finite number that the whole of `text` spells ("1.5", "2e3"); nothing for an empty text, a
/// text with anything after the number ("1.5x", "x.1"), or nan / inf.
std::optional<double> parse_number(const std::string& text);

/// A number with `digits` digits after the point ("12.345"); deterministic.
std::string csv_number(double value, int digits);

/// A number to `significant` significant digits in fixed notation, never fewer than 0 digits
/// after the point ("0.00400", "18.4", "318"); zero and non-finite values with significant - 1.
std::string significant_number(double value, int significant);

}  // namespace clustersim::tools
