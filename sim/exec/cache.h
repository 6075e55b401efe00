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
//  - dirty sectors reach DRAM when their line is evicted, or at flush().
// The set of a line is its number modulo the sets, or with `index=hash` a hash of it modulo the
// sets: the H100 indexes its L2 by a hash (no stride from 4 KiB to 128 MiB makes 256 lines
// conflict there, gpu/README.md), so its preset hashes. Nothing here knows about arrays or
// elements: accesses are byte ranges.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace toysim {

struct CacheConfig {
    std::uint64_t size_bytes = 0;
    std::uint32_t line_bytes = 128;
    std::uint32_t sector_bytes = 32;
    std::uint32_t ways = 16;
    std::uint32_t fill_bytes = 0;  // what a read miss fetches; 0: one sector
    bool hashed_index = false;     // a line's set: a hash of its number (else the number) modulo the sets

    // What is wrong with it, or "" when it describes a cache: every size positive, the sector
    // dividing the line into at most 32 sectors, the fill a whole number of sectors dividing
    // the line, the size a whole number of sets (line × ways), at most 2^40 bytes.
    std::string problem() const;
    std::uint64_t sets() const { return size_bytes / (static_cast<std::uint64_t>(line_bytes) * ways); }
    std::uint32_t sectors_per_line() const { return line_bytes / sector_bytes; }
    std::uint32_t sectors_per_fill() const { return fill_bytes == 0 ? 1 : fill_bytes / sector_bytes; }
    // The set of `line`: index_key(line) modulo the sets (a Cache keeps the sets' count).
    std::uint64_t index_key(std::uint64_t line) const;
    std::uint64_t set_of(std::uint64_t line) const { return index_key(line) % sets(); }
};

// A named configuration: `cache h100`, `--cache h100`.
struct CachePreset {
    std::string_view name;
    CacheConfig config;
    std::string_view models;  // what it stands for, and how far it is calibrated
};
const std::vector<CachePreset>& cache_presets();

// A cache as the user writes it: a preset, settings, or a preset then settings that change
// it: "h100", "size=50MiB line=128 sector=32 ways=16 fill=64 index=hash", "h100 ways=8". Sizes
// take B, KiB, MiB or GiB; index is mod or hash. Either the configuration (with no problem()) or
// what is wrong, as a message.
struct ParsedCache {
    CacheConfig config;
    std::string error;  // "" when config is good
};
ParsedCache parse_cache(std::string_view text);

// Counted in sectors (hits, misses) and bytes (DRAM).
struct CacheStats {
    std::uint64_t read_hits = 0, read_misses = 0;
    std::uint64_t write_hits = 0, write_misses = 0;
    std::uint64_t dram_read_bytes = 0, dram_write_bytes = 0;
    bool operator==(const CacheStats&) const = default;
};

class Cache {
public:
    // The config must have no problem() (checked: throws std::invalid_argument).
    explicit Cache(const CacheConfig& config);

    // `bytes` bytes from byte address `address`: every sector they touch, in order.
    void read(std::uint64_t address, std::uint64_t bytes);
    void write(std::uint64_t address, std::uint64_t bytes);
    // Writes every dirty sector back (counted) and empties the cache.
    void flush();

    const CacheStats& stats() const { return stats_; }
    const CacheConfig& config() const { return config_; }
    std::uint64_t dirty_bytes() const;

private:
    struct Way {
        std::uint64_t tag = 0;        // the line's number
        std::uint64_t last_use = 0;   // 0: empty
        std::uint32_t valid = 0, dirty = 0;  // one bit per sector
    };
    // The way holding `line`, allocated (evicting the least recently used) if absent.
    Way& touch(std::uint64_t line);
    void access(std::uint64_t address, std::uint64_t bytes, bool write);

    CacheConfig config_;
    std::uint64_t sets_ = 0;
    std::vector<Way> ways_;  // set-major: set s holds ways_[s·ways .. s·ways + ways)
    std::uint64_t tick_ = 0;
    CacheStats stats_;
};

}  // namespace toysim
