// A program's DRAM behind its modeled cache (Program::cache): the machine's accesses, which
// name arrays and elements, turned into the byte ranges the cache sees, in the order the
// machine makes them (with workers, interleaved one instruction at a time: sim/exec/interleave.h).
//
// The bytes are laid out as a GPU run lays its arrays out (Program's cache_array_bases): each
// array row-major from its own aligned base, element_bytes an element. The cache starts empty
// (a cold L2), and nothing is written back at the end: dram_bytes_written is what the run
// evicted while it ran, which is what CUPTI measures during a launch, and what is still dirty
// is counted apart (l2_dirty_bytes).
#pragma once

#include <cstdint>
#include <vector>

#include "sim/exec/cache.h"
#include "sim/exec/counters.h"
#include "sim/exec/event.h"

namespace toysim {

class DramCache {
public:
    // The program must have a cache. `heads` and per-array element sizes as cache_layout takes them.
    explicit DramCache(const Program& program, std::int64_t heads = 1, const std::vector<int>& element_bytes = {});

    // One LOAD's or STORE's block, in head `head`'s copy of its array: each row a run of
    // contiguous bytes where the row is contiguous, else element by element. An accumulation
    // (STORE_ADD) reads, then writes.
    void access(const DramAccess& access, std::int64_t head = 0);
    CacheCounts counts() const;

    // For a walk that counts runs of accesses at once (cached_count.cpp): where one element
    // of head `head`'s copy of `array` is in bytes (its first byte; element_bytes(array) of
    // them), the cache's shape, and hits the caller proved without the cache seeing them
    // (counted in the array's stats as the cache's own are).
    std::uint64_t byte_address(int array, std::int64_t element, std::int64_t head) const;
    std::uint64_t element_bytes(int array) const { return layout_.element_bytes[static_cast<size_t>(array)]; }
    const CacheConfig& config() const { return cache_.config(); }
    void add_hits(int array, std::uint64_t read_sectors, std::uint64_t write_sectors);
    // About the lines looked up in the cache so far (within one per access): the cache's part of
    // the work a walk's limit counts.
    std::uint64_t lookups() const { return lookups_; }

private:
    void move(int array, std::uint64_t address, std::int64_t elements, bool write);
    const Program* program_;
    Cache cache_;
    CacheLayout layout_;
    std::vector<CacheStats> proved_;  // add_hits, per array
    std::uint64_t lookups_ = 0;
};

// Feeds every event's accesses to a DramCache, then passes the event on (to a trace's
// recorder, say).
template <class Value>
struct CacheSink final : EventSink<Value> {
    DramCache* cache;
    EventSink<Value>* next = nullptr;
    CacheSink(DramCache& c, EventSink<Value>* then = nullptr) : cache(&c), next(then) {}
    void on_event(const Event<Value>& e) override {
        for (const DramAccess& a : e.accesses) cache->access(a);
        if (next) next->on_event(e);
    }
};

}  // namespace toysim
