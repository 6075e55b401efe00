// The located errors of devices and links (links.h): a device touching another's DRAM, a
// SEND on no link, a RECV of the wrong size, a deadlock, a message nobody received.
#include "sim/exec/links.h"

#include <fmt/format.h>

#include "sim/lower/disasm.h"

namespace toysim {

namespace {

// "device 1 holds rows 16..31 of K": where an array's elements are.
std::string holder_text(const ArrayInfo& a, std::int64_t device) {
    if (!a.split) return fmt::format("{} is not split, so it is all in device 0's DRAM: declare it 'split' to give each device its rows", a.name);
    const std::int64_t first = device * a.rows_per_device;
    if (a.split_dim == 0) return fmt::format("{} is split: device {} holds rows {}..{}", a.name, device, first, first + a.rows_per_device - 1);
    return fmt::format("{} is split on dimension {}: device {} holds indices {}..{} of it", a.name, a.split_dim, device, first,
                       first + a.rows_per_device - 1);
}

}  // namespace

void fail_owner(const Program& p, std::int32_t pc, const MemRef& m, std::int64_t at, std::int64_t device, bool write,
                const std::int64_t* vars) {
    const ArrayInfo& a = p.arrays[static_cast<size_t>(m.array)];
    const std::int64_t owner = p.owner_of(m.array, at - a.base);
    throw ToyError(operand_loc(p, pc, memory_operand_position(p, pc)),
                   fmt::format("device {} {} {}, which is in device {}'s DRAM ({}); a device touches only its own elements: "
                               "move others with SEND and RECV{}",
                               device, write ? "writes" : "reads", p.element_ref_at(at), owner, holder_text(a, device),
                               loop_context(p, pc, vars)));
}

void fail_link(const Program& p, std::int32_t pc, std::int64_t from, std::int64_t to, const std::int64_t* vars) {
    const Loc where = p.origin[static_cast<size_t>(pc)]->operands.back().loc;
    if (from == to)
        throw ToyError(where, fmt::format("device {} sends to itself: a link joins two devices (with 1 device there is none){}", from,
                                          loop_context(p, pc, vars)));
    throw ToyError(where, fmt::format("device {} sends to device {}, but in a ring of {} devices it has links to {} and {} only{}", from, to,
                                      p.devices, (from + p.devices - 1) % p.devices, (from + 1) % p.devices, loop_context(p, pc, vars)));
}

void fail_in_flight(const Program& p, std::int32_t pc, const std::int64_t* vars) {
    throw ToyError(ErrorKind::TooLargeToRun, p.origin[static_cast<size_t>(pc)]->loc,
                   fmt::format("more than {} MiB sent and not yet received: RECV them as they are sent{}", kMaxInFlightBytes >> 20,
                               loop_context(p, pc, vars)));
}

void fail_message_size(const Program& p, std::int32_t pc, std::int64_t device, std::int64_t from, std::int32_t send_pc, std::int64_t sent,
                       std::int64_t wanted, const std::int64_t* vars) {
    throw ToyError(operand_loc(p, pc, memory_operand_position(p, pc)),
                   fmt::format("device {} receives {} element{} here, but the message from device {} (line {}: {}) has {}{}", device, wanted,
                               wanted == 1 ? "" : "s", from, p.origin[static_cast<size_t>(send_pc)]->loc.line,
                               render_instruction(p, send_pc), sent, loop_context(p, pc, vars)));
}

void fail_deadlock(const Program& p, const std::vector<std::int64_t>& waiting, const std::vector<std::int32_t>& waiting_pc) {
    std::string who;
    Loc where;
    for (size_t k = 0; k < waiting.size(); ++k) {
        if (waiting[k] < 0) continue;
        const std::int32_t pc = waiting_pc[k];
        if (who.empty()) where = p.origin[static_cast<size_t>(pc)]->loc;
        who += fmt::format("{}device {} at line {} ({}) waits for device {}", who.empty() ? "" : "; ", k,
                           p.origin[static_cast<size_t>(pc)]->loc.line, render_instruction(p, pc), waiting[k]);
    }
    throw ToyError(where, fmt::format("deadlock: every device still running waits for a message that no device will send: {}. "
                                      "A RECV waits for the SEND on its link: send before receiving, on at least one side",
                                      who));
}

void fail_unreceived(const Program& p, std::int32_t send_pc, std::int64_t from, std::int64_t to, std::int64_t elements) {
    throw ToyError(p.origin[static_cast<size_t>(send_pc)]->loc,
                   fmt::format("device {} sent {} element{} to device {} here, and device {} finished without receiving them: "
                               "each SEND needs a RECV on the device it sends to",
                               from, elements, elements == 1 ? "" : "s", to, to));
}

}  // namespace toysim
