#include "sim/exec/counters.h"

namespace toysim {

CounterValue Counters::value(const CounterRef& c) const {
    auto count = [](std::uint64_t n) { return CounterValue{n, 0, false}; };
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
        case CounterKind::Utilization: return CounterValue{0, utilization(), true};
    }
    return {};
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
                out.push_back({row.kind});
                break;
            case CounterScope::PerOpcode:
                // Units of work differ from instruction counts only for tile instructions.
                if (row.kind == CounterKind::Work && !p.has_tiles()) break;
                for (const auto& op : all_ops())
                    if ((*opcodes)[static_cast<size_t>(op.op)]) out.push_back({row.kind, op.op});
                break;
            case CounterScope::PerArray:
                for (size_t a = 0; a < p.arrays.size(); ++a)
                    if (row.kind != CounterKind::ArrayWrites || p.arrays[a].role != ast::Role::Input)
                        out.push_back({row.kind, Op::LOAD, static_cast<int>(a)});
                break;
        }
    }
    return out;
}

}  // namespace toysim
