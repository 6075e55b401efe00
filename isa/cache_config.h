// A cache's description: its geometry and policy, the named presets and how a user writes one
// (`cache h100` in a program, `--cache h100` on the command line). The model itself, which
// takes accesses, is sim/exec/cache.h; this part is the machine's description, like its
// register count, so the compiler can check a program's `cache` line.
#pragma once

#include <cstddef>
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
    // At most this many bytes of lines dirty (whole lines: a line with one dirty sector counts
    // its line_bytes); past it, the least recently used dirty line is written back and stays.
    // 0: no limit, dirty lines leave only when evicted.
    std::uint64_t dirty_limit_bytes = 0;
    // A dirty line is written back (and stays, clean) once it is no longer among the dirty_ways
    // most recently used lines of its set. 0: off.
    std::uint32_t dirty_ways = 0;

    // What is wrong with it, or "" when it describes a cache: every size positive, the sector
    // dividing the line into at most 32 sectors, the fill a whole number of sectors dividing
    // the line, the size a whole number of sets (line × ways), at most 2^40 bytes.
    std::string problem() const;
    std::uint64_t sets() const { return size_bytes / (static_cast<std::uint64_t>(line_bytes) * ways); }
    std::uint32_t sectors_per_line() const { return line_bytes / sector_bytes; }
    std::uint32_t sectors_per_fill() const { return fill_bytes == 0 ? 1 : fill_bytes / sector_bytes; }
    // The set of `line`: index_key(line, sets) modulo the sets (a Cache keeps the sets' count).
    std::uint64_t index_key(std::uint64_t line, std::uint64_t sets) const;
    std::uint64_t set_of(std::uint64_t line) const { return index_key(line, sets()) % sets(); }
};

// A named configuration: `cache h100`, `--cache h100`.
struct CachePreset {
    std::string_view name;
    CacheConfig config;
    std::string_view models;  // what it stands for, and how far it is calibrated
};
const std::vector<CachePreset>& cache_presets();

// A cache as the user writes it: a preset, settings, or a preset then settings that change
// it: "h100", "size=50MiB line=128 sector=32 ways=16 fill=64 index=hash", "h100 ways=8",
// "h100 dirty=0 dirty_ways=0". Sizes (and dirty) take B, KiB, MiB or GiB; index is mod or
// hash. Either the configuration (with no problem()) or what is wrong, as a message.
struct ParsedCache {
    CacheConfig config;
    std::string error;                  // "" when config is good
    std::size_t error_at = 0, error_length = 0;  // the part of the text it is about (all of it: 0, size)
};
ParsedCache parse_cache(std::string_view text);

}  // namespace toysim
