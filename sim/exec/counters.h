// What a run counted, in the shape of the counter table (isa/counters.h).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "sim/exec/cache.h"
#include "sim/lower/program.h"

namespace toysim {

struct ArrayStats {
    std::uint64_t reads = 0, writes = 0;
    std::uint64_t elements_read = 0;   // distinct elements read at least once
    std::uint64_t max_reads = 0;       // the most any one element was read (reuse from DRAM)
    std::uint64_t sent = 0;            // elements SEND put on a link (devices)
    std::map<std::uint64_t, std::uint64_t> read_histogram;  // reads per element -> elements
};

// What the modeled cache counted (a program with a cache): in all and per array.
struct CacheCounts {
    CacheStats total;
    std::vector<CacheStats> arrays;  // parallel to Program::arrays
    std::uint64_t dirty_bytes = 0;   // left dirty at the end: not written to DRAM
    bool operator==(const CacheCounts&) const = default;
};

// A counter's value: a count, or for a ratio (arithmetic intensity) a real number.
struct CounterValue {
    std::uint64_t count = 0;
    double ratio = 0;
    bool is_ratio = false;
};

struct Counters {
    std::uint64_t cycles = 0;
    std::uint64_t instructions = 0;
    std::array<std::uint64_t, kOpCount> by_opcode{};       // instructions
    std::array<std::uint64_t, kOpCount> work_by_opcode{};  // units of work: elements, multiply-adds
    std::uint64_t dram_reads = 0, dram_writes = 0;
    std::vector<ArrayStats> arrays;  // parallel to Program::arrays
    int peak_registers = 0;          // distinct registers the run wrote (tile registers included)
    std::uint64_t compute_ops = 0;   // work of class Compute (a scalar instruction is one unit)
    // Workers (`workers P`): cycles is the makespan; work is every worker's busy cycles summed
    // (what cycles is on one worker), busy is each worker's.
    std::uint64_t work = 0;
    std::int64_t workers = 1;
    std::vector<std::uint64_t> busy;
    std::optional<CacheCounts> cache;  // a run with a cache (Program::cache)
    // Devices (`devices D`): elements each link carried, link from·D + to (empty without devices).
    std::int64_t devices = 0;
    std::vector<std::uint64_t> link_elements;
    std::uint64_t sent() const;
    std::uint64_t busiest_link() const;
    double utilization() const {
        return cycles ? static_cast<double>(work) / (static_cast<double>(workers) * static_cast<double>(cycles)) : 0.0;
    }
    double arithmetic_intensity() const {
        std::uint64_t traffic = dram_reads + dram_writes;
        return traffic ? static_cast<double>(compute_ops) / static_cast<double>(traffic) : 0.0;
    }
    // One counter of the table.
    CounterValue value(const CounterRef& counter) const;
};

// Every counter of a program, in the table's order: per-opcode rows for the opcodes in
// `opcodes` (by default those the program uses), per-array rows for its arrays (writes only
// for arrays that are not inputs, which are never written).
using OpcodeSet = std::array<bool, kOpCount>;
OpcodeSet opcodes_used(const Program& program);
std::vector<CounterRef> counters_of(const Program& program, const OpcodeSet* opcodes = nullptr);

}  // namespace toysim
