// Devices and the links between them (`devices D [ring] [link C] [latency L]`).
//
// Each device is a machine of its own: its registers, tiles and DRAM. The machine runs the
// body of `on devices r { ... }` as a grid of D iterations interleaved on D workers (see
// interleave.h), iteration k on worker k, which is device k. An array that is `split` has its
// rows spread over the devices' DRAM, D equal parts in order; one that is not is device 0's,
// but for an input, of which every device holds a copy. A device touches only its own
// elements: anything else is a located error that names the device that holds it.
//
// SEND src, @to reads its slice from the sender's DRAM and hands it to the link from the sender
// to `to` (device numbers are taken modulo D, so @r+1 is the next device round the ring). It
// goes on at once: the link carries the elements one after another, C cycles each, from when
// it is free, and the last arrives L cycles after it left. RECV @from, dst takes the oldest
// message on the link from `from` (links keep their order, as NCCL's point-to-point calls
// between two ranks do) and writes it to dst, waiting until it has arrived; when nothing has
// been sent yet, the device waits and the others go on. When every device still running
// waits, that is a deadlock, and a message that no RECV took by the end of the block is an
// error at its SEND: both located, both naming the devices.
//
// Time: a device's clock is a worker's (the cycles of its instructions), plus what its RECVs
// waited. `cycles` is the latest device's clock; each link's elements are counted per
// direction (Counters::link_elements).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "sim/exec/faults.h"
#include "sim/exec/state.h"

namespace toysim {

// Bytes a run may hold on its links at once (sent and not yet received: each message's values
// and its own record): what the DRAM's limit holds in values, 512 MiB.
inline constexpr std::uint64_t kMaxInFlightBytes = static_cast<std::uint64_t>(kMaxRunDram) * sizeof(double);

TOYSIM_FAULT void fail_owner(const Program& p, std::int32_t pc, const MemRef& m, std::int64_t at, std::int64_t device, bool write,
                             const std::int64_t* vars);
TOYSIM_FAULT void fail_link(const Program& p, std::int32_t pc, std::int64_t from, std::int64_t to, const std::int64_t* vars);
TOYSIM_FAULT void fail_in_flight(const Program& p, std::int32_t pc, const std::int64_t* vars);
TOYSIM_FAULT void fail_message_size(const Program& p, std::int32_t pc, std::int64_t device, std::int64_t from, std::int32_t send_pc,
                                    std::int64_t sent, std::int64_t wanted, const std::int64_t* vars);
// Every device still running waits in a RECV (waiting[k] >= 0): names each and whom it waits for.
TOYSIM_FAULT void fail_deadlock(const Program& p, const std::vector<std::int64_t>& waiting, const std::vector<std::int32_t>& waiting_pc);
TOYSIM_FAULT void fail_unreceived(const Program& p, std::int32_t send_pc, std::int64_t from, std::int64_t to, std::int64_t elements);

// The device running now: the running worker inside `on devices`, else device 0.
template <class Value>
inline std::int64_t running_device(const MachineState<Value>& s) {
    return s.parallel.interleaved ? static_cast<std::int64_t>(s.parallel.worker) : 0;
}

// SEND's and RECV's @device, modulo D.
inline std::int64_t device_operand(const Program& p, const Inst& in, const std::int64_t* vars) {
    const std::int64_t d = p.device_operands[static_cast<size_t>(in.jump)].eval(vars) % p.devices;
    return d < 0 ? d + p.devices : d;
}

// The elements at addresses first..last of one MemRef's array (a slice's first and last) are
// the running device's to touch.
template <class Value>
inline void check_owner(const Program& p, const MachineState<Value>& s, std::int32_t pc, const MemRef& m, std::int64_t first,
                        std::int64_t last, bool write, const std::int64_t* vars) {
    const ArrayInfo& a = p.arrays[static_cast<size_t>(m.array)];
    const std::int64_t device = running_device(s);
    for (std::int64_t at : {first, last}) {
        const std::int64_t owner = p.owner_of(m.array, at - a.base);
        if (owner >= 0 && owner != device) fail_owner(p, pc, m, at, device, write, vars);
    }
}

template <class Value>
void start_links(const Program& p, LinkState<Value>& l) {
    const auto d = static_cast<size_t>(p.devices);
    l.queue.assign(d * d, {});
    l.head.assign(d * d, 0);
    l.free_at.assign(d * d, 0);
    l.elements.assign(d * d, 0);
    l.waiting.assign(d, -1);
    l.waiting_pc.assign(d, -1);
    l.in_flight = 0;
}

// The running device sends `values` (rows × cols, read by the SEND at pc) to device `to`.
// A device waiting for this link goes back to the workers that run.
template <class Value>
void link_send(const Program& p, MachineState<Value>& m, std::int32_t pc, std::int64_t to, std::vector<Value> values, std::int64_t rows,
               std::int64_t cols, const std::int64_t* vars) {
    ParallelState& s = m.parallel;
    LinkState<Value>& l = m.links;
    const std::int64_t from = running_device(m);
    const std::int64_t d = p.devices;
    const bool neighbours = (to - from + d) % d == 1 || (from - to + d) % d == 1;
    if (to == from || (p.ring && !neighbours)) fail_link(p, pc, from, to, vars);
    const auto elements = static_cast<std::uint64_t>(values.size());
    const std::uint64_t bytes = sizeof(Message<Value>) + elements * sizeof(Value);
    if (l.in_flight + bytes > kMaxInFlightBytes) fail_in_flight(p, pc, vars);
    const auto link = static_cast<size_t>(from * d + to);
    const std::uint64_t now = s.worker_free.empty() ? 0 : s.worker_free[static_cast<size_t>(from)];
    const std::uint64_t start = std::max(now, l.free_at[link]);
    l.free_at[link] = start + elements * static_cast<std::uint64_t>(p.link_cycles);
    l.elements[link] += elements;
    l.in_flight += bytes;
    l.queue[link].push_back(Message<Value>{static_cast<std::uint32_t>(from), pc, l.free_at[link] + static_cast<std::uint64_t>(p.link_latency),
                                           rows, cols, std::move(values)});
    if (l.waiting[static_cast<size_t>(to)] == from) {
        l.waiting[static_cast<size_t>(to)] = -1;
        l.waiting_pc[static_cast<size_t>(to)] = -1;
        s.ready.push_back(static_cast<std::uint32_t>(to));
        s.reheap = true;
    }
}

// The oldest message on the link from `from` to the running device, or null: none sent yet.
template <class Value>
const Message<Value>* link_peek(const Program& p, const MachineState<Value>& m, std::int64_t from) {
    const auto link = static_cast<size_t>(from * p.devices + running_device(m));
    const LinkState<Value>& l = m.links;
    return l.head[link] < l.queue[link].size() ? &l.queue[link][l.head[link]] : nullptr;
}

// Takes that message off its link (its values move out).
template <class Value>
Message<Value> link_take(const Program& p, MachineState<Value>& m, std::int64_t from) {
    const auto link = static_cast<size_t>(from * p.devices + running_device(m));
    LinkState<Value>& l = m.links;
    Message<Value> out = std::move(l.queue[link][l.head[link]]);
    if (++l.head[link] == l.queue[link].size()) {  // drained: its storage goes
        l.queue[link].clear();
        l.head[link] = 0;
    }
    l.in_flight -= sizeof(Message<Value>) + out.values.size() * sizeof(Value);
    return out;
}

// Once every device has finished the block: a message still on a link was never received.
template <class Value>
void check_links_drained(const Program& p, const LinkState<Value>& l) {
    for (size_t link = 0; link < l.queue.size(); ++link)
        if (l.head[link] < l.queue[link].size()) {
            const Message<Value>& msg = l.queue[link][l.head[link]];
            fail_unreceived(p, msg.pc, static_cast<std::int64_t>(link) / p.devices, static_cast<std::int64_t>(link) % p.devices,
                            static_cast<std::int64_t>(msg.values.size()));
        }
}

}  // namespace toysim
