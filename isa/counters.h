// The machine's counters: the one table every output reads.
//
// Each row: X(KIND, name, scope, JSON pointer, label, unit, traffic, meaning)
//   name     how `expect` lines, CSV, compare, sweep and cost name it; "{}" is the opcode or
//            array of a per-opcode or per-array counter: reads(K), work(MAC), LOAD
//   scope    Run (one value), PerOpcode (one per ISA opcode) or PerArray (one per DRAM array)
//   JSON     where run and trace JSON put it, under "counters"; "{}" as in the name
//   label    how text tables show it
//   traffic  counted in elements moved through DRAM: bytes = elements × element size
//
// Adding a counter is one row here, plus its value in Counters::value (sim/exec/counters.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#define TOYSIM_COUNTERS(X)                                                                                                    \
    X(Cycles, "cycles", Run, "/cycles", "cycles", "cycles", false,                                                            \
      "each instruction's units of work times its opcode's cycles per unit, summed (the seed: one cycle per instruction); "   \
      "with workers P > 1, the makespan: when the last worker finishes")                                                     \
    X(Instructions, "instructions", Run, "/instructions", "instructions", "instructions", false,                              \
      "ISA instructions executed; loop control is free")                                                                     \
    X(Opcode, "{}", PerOpcode, "/by_opcode/{}", "  {}", "instructions", false, "instructions of one opcode executed")        \
    X(Work, "work({})", PerOpcode, "/work_by_opcode/{}", "work({})", "units of work", false,                                 \
      "units of work of one opcode: elements moved or produced, multiply-adds, or elements reduced")                        \
    X(Reads, "reads", Run, "/dram/reads", "DRAM reads", "elements", true, "elements read from DRAM by LOAD, STORE_ADD and SEND")                 \
    X(Writes, "writes", Run, "/dram/writes", "DRAM writes", "elements", true, "elements written to DRAM by STORE, STORE_ADD and RECV")           \
    X(Traffic, "traffic", Run, "/dram/traffic", "DRAM traffic", "elements", true, "reads + writes")                          \
    X(ArrayReads, "reads({})", PerArray, "/dram/arrays/{}/reads", "reads({})", "elements", true,                             \
      "elements of one array read from DRAM")                                                                                 \
    X(ArrayWrites, "writes({})", PerArray, "/dram/arrays/{}/writes", "writes({})", "elements", true,                         \
      "elements of one array written to DRAM")                                                                                \
    X(Registers, "registers", Run, "/registers", "peak registers", "registers", false,                                       \
      "distinct registers the run wrote, tile registers included")                                                           \
    X(Compute, "compute", Run, "/compute", "compute work", "units of work", false,                                           \
      "units of work of the Compute opcodes (a scalar instruction is one unit)")                                             \
    X(ArithmeticIntensity, "arithmetic_intensity", Run, "/arithmetic_intensity",                                              \
      "arithmetic intensity (compute ops per DRAM access)", "ratio", false, "compute / traffic; 0 without traffic")           \
    X(TotalWork, "work", Run, "/workers/work", "work (cycles on all workers)", "cycles", false,                               \
      "every worker's busy cycles summed: cycles on one worker (shown with workers P > 1, where cycles is the makespan)")     \
    X(Utilization, "utilization", Run, "/workers/utilization", "utilization (work / (workers × cycles))", "ratio", false,      \
      "work / (workers × cycles): 1 when no worker is ever idle (shown with workers P > 1)")                                 \
    X(Sent, "sent", Run, "/links/sent", "elements sent over links", "elements", false,                                       \
      "elements SEND put on the links between devices, all links summed (shown with devices)")                               \
    X(BusiestLink, "busiest_link", Run, "/links/busiest", "elements on the busiest link", "elements", false,                  \
      "the most elements one link carried in one direction (shown with devices)")                                            \
    X(ArraySent, "sent({})", PerArray, "/links/arrays/{}/sent", "sent({})", "elements", false,                               \
      "elements of one array sent over links (shown with devices)")                                                          \
    X(CacheHits, "l2_hits", Run, "/l2/hits", "L2 hits", "sectors", false,                                                     \
      "sectors read or written that the modeled cache held (shown with a cache)")                                            \
    X(CacheMisses, "l2_misses", Run, "/l2/misses", "L2 misses", "sectors", false,                                             \
      "sectors read or written that the cache did not hold: a read miss fills from DRAM, a write miss allocates")            \
    X(CacheHitRate, "l2_hit_rate", Run, "/l2/hit_rate", "L2 hit rate", "ratio", false, "hits / (hits + misses)")             \
    X(CacheDramRead, "dram_bytes_read", Run, "/l2/dram_bytes_read", "DRAM bytes read (past the L2)", "bytes", false,         \
      "bytes the cache read from DRAM: each read miss's fill")                                                               \
    X(CacheDramWritten, "dram_bytes_written", Run, "/l2/dram_bytes_written", "DRAM bytes written (past the L2)", "bytes",    \
      false, "dirty sectors written back when their lines were evicted, during the run (what CUPTI measures in a launch)")   \
    X(CacheDirty, "l2_dirty_bytes", Run, "/l2/dirty_bytes", "L2 bytes dirty at the end", "bytes", false,                      \
      "bytes written to the cache and still there when the run ends: not in dram_bytes_written")                             \
    X(ArrayCacheHits, "l2_hits({})", PerArray, "/l2/arrays/{}/hits", "L2 hits({})", "sectors", false,                         \
      "sectors of one array the cache held when accessed")                                                                   \
    X(ArrayCacheMisses, "l2_misses({})", PerArray, "/l2/arrays/{}/misses", "L2 misses({})", "sectors", false,                 \
      "sectors of one array the cache did not hold when accessed")                                                           \
    X(ArrayCacheDramRead, "dram_bytes_read({})", PerArray, "/l2/arrays/{}/dram_bytes_read", "DRAM bytes read({})", "bytes",  \
      false, "bytes of one array the cache read from DRAM")                                                                  \
    X(ArrayCacheDramWritten, "dram_bytes_written({})", PerArray, "/l2/arrays/{}/dram_bytes_written", "DRAM bytes written({})", \
      "bytes", false, "bytes of one array the cache wrote back to DRAM during the run")

namespace toysim {

enum class CounterKind : std::uint8_t {
#define X(KIND, NAME, SCOPE, JSON, LABEL, UNIT, TRAFFIC, MEANING) KIND,
    TOYSIM_COUNTERS(X)
#undef X
};

inline constexpr int kCounterKinds = 0
#define X(KIND, NAME, SCOPE, JSON, LABEL, UNIT, TRAFFIC, MEANING) +1
    TOYSIM_COUNTERS(X)
#undef X
    ;

enum class CounterScope : std::uint8_t { Run, PerOpcode, PerArray };

struct CounterInfo {
    CounterKind kind;
    std::string_view name;
    CounterScope scope;
    std::string_view json;
    std::string_view label;
    std::string_view unit;
    bool traffic;
    std::string_view meaning;

    // The name with its opcode or array filled in: "reads(K)", "LOAD", "cycles".
    std::string name_for(std::string_view subject = {}) const;
    std::string label_for(std::string_view subject = {}) const;
    // The JSON pointer under "counters": "/dram/arrays/K/reads".
    std::string json_for(std::string_view subject = {}) const;
};

const std::array<CounterInfo, kCounterKinds>& all_counters();
// Counted by the modeled cache: shown, and allowed in `expect`, only with a cache.
inline bool is_cache_counter(CounterKind k) {
    switch (k) {
        case CounterKind::CacheHits: case CounterKind::CacheMisses: case CounterKind::CacheHitRate:
        case CounterKind::CacheDramRead: case CounterKind::CacheDramWritten: case CounterKind::CacheDirty:
        case CounterKind::ArrayCacheHits: case CounterKind::ArrayCacheMisses: case CounterKind::ArrayCacheDramRead:
        case CounterKind::ArrayCacheDramWritten: return true;
        default: return false;
    }
}
// Counted on the links between devices: shown, and allowed in `expect`, only with devices.
inline bool is_link_counter(CounterKind k) { return k == CounterKind::Sent || k == CounterKind::BusiestLink || k == CounterKind::ArraySent; }
const CounterInfo& info(CounterKind kind);

// A traffic counter's elements as bytes at a given element size (4 for fp32, 2 for bf16): what
// a comparison with a GPU's byte counts needs.
inline std::uint64_t traffic_bytes(std::uint64_t elements, int element_bytes) {
    return elements * static_cast<std::uint64_t>(element_bytes);
}

// A counter name as `expect` writes it, split: "reads(K)" -> the per-array reads and "K";
// "LOAD" -> the per-opcode count and "LOAD"; "cycles" -> cycles and "". The subject is not
// checked against the program (the caller knows its arrays); an opcode subject is checked.
struct CounterName {
    CounterKind kind;
    std::string subject;
};
std::optional<CounterName> parse_counter_name(std::string_view counter, std::string_view argument);
// Every spelling parse_counter_name accepts, for "did you mean".
std::string counter_names_help();

// How `expect` compares a counter with its figure.
enum class Relation : std::uint8_t { Equal, AtMost, AtLeast };
std::string_view relation_text(Relation r);  // "=", "<=", ">="

}  // namespace toysim
