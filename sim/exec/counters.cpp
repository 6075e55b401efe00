#include "sim/exec/counters.h"

#include <algorithm>
#include <stdexcept>

namespace toysim {

CounterValue Counters::value(const CounterRef& c) const {
    auto count = [](std::uint64_t n) { return CounterValue{n, 0, false}; };
    // A cache counter of a run without a cache is a caller's mistake (counters_of lists them
    // only for a program with one): never a silent zero.
    auto stats = [&]() -> const CacheStats& {
        if (!cache) throw std::logic_error("a cache counter of a run without a cache");
        return c.array >= 0 ? cache->arrays.at(static_cast<size_t>(c.array)) : cache->total;
    };
    switch (c.kind) {
        case CounterKind::Cycles: return count(cycles);
        case CounterKind::Instructions: return count(instructions);
        case CounterKind::Opcode: return count(by_opcode[static_cast<size_t>(c.op)]);
        case CounterKind::Work: return count(work_by_opcode[static_cast<size_t>(c.op)]);
        case CounterKind::Reads: return count(dram_reads);
        case CounterKind::Writes: return count(dram_writes);
        case CounterKind::Traffic: return count(dram_reads + dram_writes);
        case CounterKind::ArrayReads: return count(arrays[static_cast<size_t>(c.array)].reads);
        case CounterKind::ArrayWrites: return count(arrays[static_cast<size_t>(c.array)].writes);
        case CounterKind::Registers: return count(static_cast<std::uint64_t>(peak_registers));
        case CounterKind::Compute: return count(compute_ops);
        case CounterKind::ArithmeticIntensity: return CounterValue{0, arithmetic_intensity(), true};
        case CounterKind::TotalWork: return count(work);
        case CounterKind::Sent: return count(sent());
        case CounterKind::BusiestLink: return count(busiest_link());
        case CounterKind::ArraySent: return count(arrays[static_cast<size_t>(c.array)].sent);
        case CounterKind::Utilization: return CounterValue{0, utilization(), true};
        case CounterKind::CacheHits:
        case CounterKind::ArrayCacheHits: return count(stats().hits());
        case CounterKind::CacheMisses:
        case CounterKind::ArrayCacheMisses: return count(stats().misses());
        case CounterKind::CacheHitRate: {
            const std::uint64_t hits = stats().hits(), all = hits + stats().misses();
            return CounterValue{0, all ? static_cast<double>(hits) / static_cast<double>(all) : 0.0, true};
        }
        case CounterKind::CacheDramRead:
        case CounterKind::ArrayCacheDramRead: return count(stats().dram_read_bytes);
        case CounterKind::CacheDramWritten:
        case CounterKind::ArrayCacheDramWritten: return count(stats().dram_write_bytes);
        case CounterKind::CacheDirty: stats(); return count(cache->dirty_bytes);
    }
    return {};
}

std::uint64_t Counters::sent() const {
    std::uint64_t total = 0;
    for (std::uint64_t e : link_elements) total += e;
    return total;
}

std::uint64_t Counters::busiest_link() const {
    return link_elements.empty() ? 0 : *std::max_element(link_elements.begin(), link_elements.end());
}

OpcodeSet opcodes_used(const Program& p) {
    OpcodeSet used{};
    for (const auto& row : all_ops()) used[static_cast<size_t>(row.op)] = p.uses(row.op);
    return used;
}

std::vector<CounterRef> counters_of(const Program& p, const OpcodeSet* opcodes) {
    OpcodeSet own = opcodes_used(p);
    if (!opcodes) opcodes = &own;
    std::vector<CounterRef> out;
    for (const auto& row : all_counters()) {
        switch (row.scope) {
            case CounterScope::Run:
                // Work and utilization say something only when there is more than one worker.
                if ((row.kind == CounterKind::TotalWork || row.kind == CounterKind::Utilization) && p.workers == 1) break;
                if (is_cache_counter(row.kind) && !p.cache) break;
                if (is_link_counter(row.kind) && !p.devices) break;
                out.push_back({row.kind});
                break;
            case CounterScope::PerOpcode:
                // Units of work differ from instruction counts only for tile instructions.
                if (row.kind == CounterKind::Work && !p.has_tiles()) break;
                for (const auto& op : all_ops())  // (SEND and RECV only with devices)
                    if ((*opcodes)[static_cast<size_t>(op.op)] && (p.devices || !is_transfer(op.op))) out.push_back({row.kind, op.op});
                break;
            case CounterScope::PerArray:
                if (is_cache_counter(row.kind) && !p.cache) break;
                if (is_link_counter(row.kind) && !p.devices) break;
                for (size_t a = 0; a < p.arrays.size(); ++a)
                    if ((row.kind != CounterKind::ArrayWrites && row.kind != CounterKind::ArrayCacheDramWritten) ||
                        p.arrays[a].role != ast::Role::Input)
                        out.push_back({row.kind, Op::LOAD, static_cast<int>(a)});
                break;
        }
    }
    return out;
}

}  // namespace toysim
