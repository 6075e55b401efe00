// A cache level between the workers and DRAM: the model of a GPU's L2 (issue "A modeled L2").
//
// Sectored, set-associative, write-back and write-allocate, with least-recently-used
// replacement, as NVIDIA describes its L2: a line (tag) of 128 bytes holds four 32-byte
// sectors, each filled from DRAM on its own. So:
//  - a read of a sector that is there is a hit; one that is not is a miss that reads its fill
//    group (the aligned `fill_bytes` around it: the H100 fetches 64 bytes, two sectors, per
//    miss; gpu/README.md) from DRAM, all of which becomes valid; a line not there first takes
//    the least recently used way of its set, writing back that line's dirty sectors;
//  - a write allocates the same way but reads nothing: the sector becomes valid and dirty
//    (the GPU keeps byte masks, so even a partial write needs no fill);
//  - dirty sectors reach DRAM when their line is evicted, or at flush();
//  - with a dirty limit (CacheConfig::dirty_limit_bytes), at most that many bytes of lines hold
//    dirty sectors: a write that would make one line more dirty first writes back the dirty
//    sectors of the least recently used dirty line, which stays, clean. The H100 does this: a
//    launch that writes 64 MiB leaves only about 24 MiB of it dirty in its 50 MiB L2 and writes
//    the rest to DRAM while it runs, even with nothing else to evict (gpu/README.md);
//  - with dirty_ways, a dirty line's sectors are written back once it is no longer among the
//    dirty_ways most recently used lines of its set; it stays, clean, for reads. The H100's
//    launches that read as much as they write end with less dirty than the limit: the reads
//    push the oldest writes out before their lines are evicted.
// The set of a line is its number modulo the sets, or with `index=hash` that number rotated by
// a hash of which run of `sets` lines it is in (CacheConfig::index_key): the H100 indexes its
// L2 by a hash (no stride from 4 KiB to 128 MiB makes 256 lines conflict there, gpu/README.md)
// that spreads a contiguous array evenly, so its preset hashes. Nothing here knows about arrays or
// elements: accesses are byte ranges, each with an owner (a number the caller gives: the
// machine's array), so that hits, misses and DRAM bytes, write-backs included, are also
// counted per owner. A line belongs to the owner of the access that brought it in.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "isa/cache_config.h"

namespace toysim {

// Counted in sectors (hits, misses) and bytes (DRAM).
struct CacheStats {
    std::uint64_t read_hits = 0, read_misses = 0;
    std::uint64_t write_hits = 0, write_misses = 0;
    std::uint64_t dram_read_bytes = 0, dram_write_bytes = 0;
    bool operator==(const CacheStats&) const = default;
    std::uint64_t hits() const { return read_hits + write_hits; }
    std::uint64_t misses() const { return read_misses + write_misses; }
    CacheStats& operator+=(const CacheStats& more);
};

class Cache {
public:
    // The config must have no problem() (checked: throws std::invalid_argument). Accesses
    // name owners 0 .. owners − 1.
    explicit Cache(const CacheConfig& config, std::uint32_t owners = 1);

    // `bytes` bytes from byte address `address`: every sector they touch, in order.
    void read(std::uint64_t address, std::uint64_t bytes, std::uint32_t owner = 0);
    void write(std::uint64_t address, std::uint64_t bytes, std::uint32_t owner = 0);
    // Writes every dirty sector back (counted) and empties the cache.
    void flush();

    // In all (every owner's, summed), or one owner's.
    CacheStats stats() const;
    const CacheStats& stats(std::uint32_t owner) const { return by_owner_[owner]; }
    const CacheConfig& config() const { return config_; }
    // Bytes written to the cache and not yet to DRAM: all, or one owner's.
    std::uint64_t dirty_bytes() const;
    std::uint64_t dirty_bytes(std::uint32_t owner) const;

private:
    static constexpr std::uint64_t kNone = ~std::uint64_t{0};
    struct Way {
        std::uint64_t tag = 0;        // the line's number
        std::uint64_t last_use = 0;   // 0: empty
        std::uint32_t valid = 0, dirty = 0;  // one bit per sector
        std::uint32_t owner = 0;
        // With a dirty limit: the dirty lines' list, least recently used first (indices in ways_).
        std::uint64_t older = kNone, newer = kNone;
    };
    // The way holding `line`, allocated (evicting the least recently used) if absent.
    Way& touch(std::uint64_t line, std::uint32_t owner);
    void access(std::uint64_t address, std::uint64_t bytes, bool write, std::uint32_t owner);
    // The dirty lines' list (only with a dirty limit).
    void unlink_dirty(Way& way);
    void append_dirty(Way& way);
    // Its dirty sectors to DRAM; it stays, clean.
    void clean(Way& way);
    // With dirty_ways, after a line of the set whose ways start at `first` moved up from below
    // the newest dirty_ways (or came in): cleans the dirty lines no longer among them.
    void clean_below(std::uint64_t first);

    CacheConfig config_;
    std::uint64_t sets_ = 0;
    // Set-major: set s holds ways_[s·ways .. s·ways + ways). A cache whose records would take
    // more than kDenseBytes (a modeled cache may be up to 1 TiB) keeps only the sets a run
    // touches, in the order it touches them, found through set_block_: memory follows what
    // the program uses, not what the cache could hold.
    static constexpr std::uint64_t kDenseBytes = std::uint64_t{64} << 20;
    std::vector<Way> ways_;
    bool sparse_ = false;
    std::unordered_map<std::uint64_t, std::uint64_t> set_block_;  // sparse: set -> its first way in ways_
    std::uint64_t tick_ = 0;
    std::uint64_t dirty_limit_lines_ = 0;  // 0: no limit
    std::uint64_t dirty_lines_ = 0;        // with a limit: lines holding a dirty sector
    std::uint64_t oldest_dirty_ = kNone, newest_dirty_ = kNone;
    bool eager_ = false;                   // dirty_ways is on
    std::vector<std::uint64_t> uses_;      // clean_below's scratch: a set's last uses
    // With dirty_ways, per set (in the order of ways_): a last use that the set's dirty_ways
    // newest lines have reached and its other lines have not (0: it has no others), so that a
    // hit among the newest needs no look at the rest.
    std::vector<std::uint64_t> newest_start_;
    std::vector<CacheStats> by_owner_;  // every access has an owner: the total is their sum
};

}  // namespace toysim
