// Where a stepper stops: on a source line, a cycle, an opcode, an access to an array or one
// element, a change of a register, tile or element, or a counter crossing a value. Each is
// decided from one event (sim/exec/event.h), so the same test serves going forward and back.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/exec/event.h"
#include "sim/lower/program.h"

namespace toysim {

enum class Comparison : std::uint8_t { Less, LessEqual, Greater, GreaterEqual, Equal };

struct Breakpoint {
    enum class Kind : std::uint8_t {
        Line,     // break 33: an instruction on source line 33
        Cycle,    // break cycle 100: the instruction during which cycle 100 passes
        Opcode,   // break STORE
        Access,   // break K, break x[3]: a LOAD or STORE that moves the array or element
        Watch,    // watch R2, watch o, watch out[3]: a write that changes it
        Counter,  // break reads(K) > 64: the instruction that makes it true
        Worker,   // break worker 3: the first instruction of each parallel iteration worker 3 takes
    } kind = Kind::Line;
    int number = 0;    // as `info breakpoints` lists it
    std::string text;  // as typed, normalized: "break x[3]"
    int line = 0;
    std::uint64_t cycle = 0;
    Op op = Op::LOAD;
    int array = -1;              // Access, Watch on DRAM
    std::int64_t address = -1;   // one element; -1: the whole array
    int reg = -1, tile = -1;     // Watch
    CounterRef counter;
    Comparison comparison = Comparison::Greater;
    std::uint64_t value = 0;
    std::uint32_t worker = 0;  // Worker
    std::uint64_t hits = 0;  // times a move stopped here
};

// Parses what follows `break` (watch = false) or `watch` (true). Throws ToyError (no
// location) saying what is wrong and what is accepted.
Breakpoint parse_breakpoint(const Program& program, std::string_view text, bool watch);

// What one event adds to a counter (the counters a breakpoint can follow: every counter but
// registers and arithmetic intensity, which are not sums over steps).
template <class Value>
std::uint64_t counter_delta(const Program& program, const CounterRef& counter, const Event<Value>& event);
bool compare(std::uint64_t actual, Comparison comparison, std::uint64_t value);
// The stepper runs without the program's cache (going back would need the cache's state at
// every step): what it says when asked for one of the cache's counters.
std::string cache_not_stepped(std::string_view counter);
std::string_view comparison_text(Comparison comparison);

// Does `event` stop at `bp`? `counter_before` is the breakpoint's counter before the event (for
// Counter breakpoints; the caller keeps it, adding counter_delta as events pass).
template <class Value>
bool stops_at(const Program& program, const Breakpoint& bp, const Event<Value>& event, std::uint64_t counter_before);

}  // namespace toysim
