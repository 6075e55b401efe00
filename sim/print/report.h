// Printers: results in, text out (plain tables, Markdown, CSV, JSON). The core never prints.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/check/run.h"
#include "sim/exec/cached_count.h"
#include "sim/print/format.h"

namespace toysim {

// The flat list of counters, zeros included, named as the counter table names them (isa/counters.h):
// cycles, instructions, one row per opcode in `shown` (by default the opcodes the program
// uses), work(OPCODE) for tile programs, reads, writes, traffic, reads(ARRAY), writes(ARRAY),
// registers, compute, arithmetic_intensity. Values stay numbers until a printer formats them.
struct CounterRow {
    CounterRef counter;
    std::string name;  // "reads(K)"
    CounterValue value;
};
std::vector<CounterRow> counter_rows(const Program& program, const Counters& counters, const OpcodeSet* shown = nullptr);
std::string counter_text(const CounterValue& value);  // "1024", "0.25"
// The "counters" object of run and trace JSON: every counter of the table at its JSON path,
// every opcode zeros included, plus per-array detail (role, shape, reuse histogram).
nlohmann::ordered_json counters_json(const Program& program, const Counters& counters);
// "h100: 52428800 B, 128-byte lines of 32-byte sectors, 16 ways, ..." and the cache's table
// (per array and in total), for a run with a cache.
std::string cache_summary(const ProgramCache& cache);
std::string format_cache_counts(const Program& program, const CacheCounts& counts, Format format);
// Devices: what each link carried, one direction a row (links that carried nothing left out).
struct LinkCount {
    std::int64_t from = 0, to = 0;
    std::uint64_t elements = 0;
};
std::vector<LinkCount> link_counts(const Program& program, const Counters& counters);
std::string format_links(const Program& program, const Counters& counters, Format format);
// The cache's counters as JSON (what goes under "counters"/"l2"), with the cache's description.
nlohmann::ordered_json cache_counters_json(const Program& program, const CacheCounts& counts);
// `toysim cost --cache`: the count-only walk's counts (cached_count.h), in any format.
std::string format_cached_count(const Program& program, const CachedCount& counted, const CachedCountOptions& options, Format format);
// A cache's description as JSON: its text, geometry, element size and the arrays' alignment.
nlohmann::ordered_json cache_json(const ProgramCache& cache);

std::string format_run(const Program& program, const RunResult& result, Format format, bool stats);
nlohmann::ordered_json run_json(const Program& program, const RunResult& result, bool stats);

struct TraceOptions {
    Format format = Format::Table;
    bool ditto = false;  // print " for a cell unchanged since the row above
};
std::string format_trace(const Program& program, const Trace& trace, const TraceOptions& options);

// Side by side: one column per program, one row per counter (the seed's "Inner product |
// Outer product" table).
std::string format_compare(const std::vector<std::string>& names, const std::vector<const Program*>& programs,
                           const std::vector<const RunResult*>& results, Format format);

std::string format_params(const Program& program);

// An array's final values as a block of rows with 4 decimals ("—" where nothing was stored).
std::string format_array(const Program& program, const RunResult& result, int array);  // "n = 4, b = 2" or "none"

}  // namespace toysim
