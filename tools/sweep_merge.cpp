// `clustersim sweep merge`: shard outputs checked row by row and as a whole (one sweep, every
// configuration once, values that follow the configuration numbers), then re-ranked.
#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sim/spec_error.hpp"
#include "tools/sweep.hpp"

namespace clustersim::tools {
namespace {

// The configurations 0 .. space-1 that no shard holds, as "3, 7, 11 (and 5 more)"; stops after
// the first eight (the rest are counted), so a huge space costs no more than the rows.
std::string missing_configs(const std::set<std::size_t>& seen, std::size_t space) {
  const std::size_t in_space = static_cast<std::size_t>(
      std::count_if(seen.begin(), seen.end(), [&](std::size_t id) { return id < space; }));
  const std::size_t n = space - in_space;
  std::string list;
  std::size_t listed = 0;
  for (std::size_t id = 0; id < space && listed < std::min<std::size_t>(n, 8); ++id) {
    if (seen.count(id) == 0) list += (listed++ > 0 ? ", " : "") + std::to_string(id);
  }
  if (n > 8) list += " (and " + std::to_string(n - 8) + " more)";
  return list;
}

// The sweep the first shard row belongs to: its fingerprint, its space as written and as a count.
struct SweepOfRows {
  std::string fingerprint;
  std::string space;
  std::size_t total = 0;
};

bool is_sweep_status(const std::string& s) {
  return s == kSweepOk || s == kSweepFailed || s == kSweepOutOfMemory || s == kSweepInvalid;
}

// A simulated row's figures that merge ranks and prints: finite and non-negative. MFU is not
// capped at 1: below a moe_capacity_factor of 1 the dropped tokens' expert FLOPs are counted but
// not executed, and a simulated MFU can exceed 1 (docs/outputs.md, mfu_convention).
void check_figures(const std::string& file, int line, const CsvTable& table, const std::vector<std::string>& row) {
  for (const char* c : {"tokens_per_s_per_gpu", "mfu", "step_time_s", "compute_s", "exposed_comm_s", "bubble_s"}) {
    const std::string& cell = row[table.column(c)];
    const std::optional<double> v = parse_number(cell);
    if (!v || *v < 0) {
      throw SpecError(file, line, c, "'" + cell + "' is not a non-negative number (a simulated configuration's figure)");
    }
  }
}

// Checks one shard row against the sweep of the first row (taken from this row when there is
// none yet) and returns its configuration number. @throws SpecError at the row's line and column.
std::size_t check_shard_row(const std::string& file, int line, const CsvTable& table,
                            const std::vector<std::string>& row, std::optional<SweepOfRows>& sweep) {
  const auto number = [&](const char* column) {
    try {
      return parse_count(row[table.column(column)], column);
    } catch (const std::invalid_argument& e) {
      throw SpecError(file, line, column, e.what());
    }
  };
  const std::string& id = row[table.column("config")];
  const std::string& fingerprint = row[table.column("sweep")];
  const std::string& space = row[table.column("space")];
  if (fingerprint.empty()) throw SpecError(file, line, "sweep", "configuration " + id + " has no sweep fingerprint");
  if (!sweep) {
    sweep = SweepOfRows{fingerprint, space, number("space")};
    if (sweep->total == 0) throw SpecError(file, line, "space", "a sweep's space holds at least one configuration");
  }
  if (fingerprint != sweep->fingerprint) {
    throw SpecError(file, line, "sweep", "configuration " + id + " comes from sweep " + fingerprint +
                    ", the first shard's rows from " + sweep->fingerprint + ": the job file, --gpus, "
                    "--space, --replicas or --memory-margin differ, so these are not shards of one sweep");
  }
  if (space != sweep->space) {
    throw SpecError(file, line, "space", "configuration " + id + " counts a space of '" + space +
                    "' configurations, the first shard's rows " + sweep->space + " (an edited file?)");
  }
  const std::size_t config = number("config");
  if (config >= sweep->total) {
    throw SpecError(file, line, "config", "configuration " + id + " lies beyond the sweep's " + sweep->space +
                    " configurations (0.." + std::to_string(sweep->total - 1) + ")");
  }
  const std::string& status = row[table.column("status")];
  if (!is_sweep_status(status)) {
    throw SpecError(file, line, "status", "'" + status + "' is not a sweep status (" + kSweepOk + ", " +
                    kSweepFailed + ", " + kSweepOutOfMemory + ", " + kSweepInvalid + ")");
  }
  if (status == kSweepOk) check_figures(file, line, table, row);
  return config;
}

// Where a merged row came from, for errors found once every shard is read.
struct RowPlace {
  std::string file;
  int line = 0;
  std::size_t config = 0;
};

[[noreturn]] void edited_row(const RowPlace& at, const std::string& column, const std::string& why) {
  throw SpecError(at.file, at.line, column, "configuration " + std::to_string(at.config) + " " + why +
                  ": the rows do not follow their configuration numbers (an edited file?)");
}

// The swept values of a complete space follow the configuration numbers (config_values: the
// last axis varies fastest). The shards do not carry the --space lists, but a complete space gives
// them back: each axis' distinct values, each in space / count rows, their counts multiplying to
// the space; then every number has one value per position on each axis.
void check_axis_values(const CsvTable& table, const std::vector<RowPlace>& places, std::size_t total) {
  const std::size_t first = table.column("config") + 1;
  const std::size_t last = table.column("dp");  // one past the axes
  std::vector<std::size_t> radix(last - first);
  std::size_t product = 1;
  for (std::size_t c = first; c < last; ++c) {
    std::map<std::string, std::size_t> count;
    for (const auto& row : table.rows) ++count[row[c]];
    radix[c - first] = count.size();
    product *= count.size();
    const auto rarest = std::min_element(count.begin(), count.end(),
                                         [](const auto& a, const auto& b) { return a.second < b.second; });
    if (total % count.size() != 0 || rarest->second != total / count.size()) {
      std::string counts;
      for (const auto& [value, n] : count) counts += (counts.empty() ? "" : ", ") + value + ": " + std::to_string(n);
      const std::size_t r = static_cast<std::size_t>(std::distance(
          table.rows.begin(), std::find_if(table.rows.begin(), table.rows.end(),
                                           [&](const auto& row) { return row[c] == rarest->first; })));
      edited_row(places[r], table.header[c], "has " + table.header[c] + " '" + rarest->first + "', and the " +
                 std::to_string(total) + " rows hold " + table.header[c] + "'s values unequally (" + counts +
                 " rows) where a complete space holds each as often");
    }
    if (product > total) break;  // checked as it grows, so it cannot overflow: each factor is <= total
  }
  if (product != total) {  // a complete space's value lists multiply to its size
    const std::string combinations = product > total ? "more than " + std::to_string(total) : std::to_string(product);
    throw SpecError(places.front().file, 0, "space", "the swept columns' distinct values make " + combinations +
                    " combinations for the sweep's " + std::to_string(total) + " configurations (an edited file?)");
  }
  std::size_t stride = 1;
  for (std::size_t c = last; c-- > first;) {
    std::vector<std::optional<std::size_t>> holder(radix[c - first]);  // a row at each position
    for (std::size_t r = 0; r < table.rows.size(); ++r) {
      auto& seen = holder[(places[r].config / stride) % radix[c - first]];
      if (!seen) {
        seen = r;
      } else if (table.rows[*seen][c] != table.rows[r][c]) {
        edited_row(places[r], table.header[c], "has " + table.header[c] + " '" + table.rows[r][c] +
                   "' where configuration " + std::to_string(places[*seen].config) + " (" + places[*seen].file +
                   ":" + std::to_string(places[*seen].line) + "), at the same position of that axis, has '" +
                   table.rows[*seen][c] + "'");
      }
    }
    stride *= radix[c - first];
  }
}

}  // namespace

CsvTable merge_sweep_tables(const std::vector<std::pair<std::string, CsvTable>>& shards) {
  if (shards.empty()) throw SpecError("", 0, "", "no shard outputs to merge");
  CsvTable merged;
  merged.header = shards.front().second.header;
  // Every column merge reads or ranks by: a file without one (another CSV, or one whose first
  // name a byte-order mark hides) is named here, not by a bare "no column" later.
  for (const char* c : {"rank", "config", "sweep", "space", "status", "tokens_per_s_per_gpu", "mfu", "step_time_s",
                        "compute_s", "exposed_comm_s", "bubble_s", "joules_per_token"}) {
    if (std::find(merged.header.begin(), merged.header.end(), c) == merged.header.end()) {
      throw SpecError(shards.front().first, 1, c, std::string("no '") + c + "' column: not the CSV of "
                      "a 'clustersim sweep' of this version (re-run the shards)");
    }
  }
  std::set<std::size_t> seen;
  std::vector<RowPlace> places;  // of merged.rows
  std::optional<SweepOfRows> sweep;  // the first row's
  for (const auto& [file, table] : shards) {
    if (table.header != merged.header) {
      throw SpecError(file, 1, "", "header differs from " + shards.front().first +
                                       "'s: shards must come from the same sweep");
    }
    for (std::size_t r = 0; r < table.rows.size(); ++r) {
      const int line = r < table.row_lines.size() ? table.row_lines[r] : 0;
      const std::size_t config = check_shard_row(file, line, table, table.rows[r], sweep);
      if (!seen.insert(config).second) {
        throw SpecError(file, line, "config", "configuration " + std::to_string(config) +
                                                  " appears in more than one shard output");
      }
      merged.rows.push_back(table.rows[r]);
      places.push_back({file, line, config});
    }
  }
  if (!sweep) throw SpecError(shards.front().first, 0, "", "the shard outputs hold no configuration (headers only)");
  const std::string missing = missing_configs(seen, sweep->total);
  if (!missing.empty()) {
    throw SpecError("<command line>", 0, "files", "the shard outputs do not cover the sweep's " + sweep->space +
                    " configurations: none holds " + missing +
                    " (a shard's output is missing: --shard K/N writes the ids with id % N == K-1)");
  }
  check_axis_values(merged, places, sweep->total);
  rank_sweep_table(merged);
  return merged;
}


}  // namespace clustersim::tools
