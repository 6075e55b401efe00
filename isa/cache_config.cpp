// Cache descriptions (cache_config.h).
#include "isa/cache_config.h"

#include <algorithm>
#include <optional>
#include <fmt/format.h>

#include "support/text.h"

namespace toysim {

std::string CacheConfig::problem() const {
    constexpr std::uint64_t kMaxSize = std::uint64_t{1} << 40;
    if (size_bytes == 0 || line_bytes == 0 || sector_bytes == 0 || ways == 0)
        return "the cache's size, line, sector and ways must all be positive";
    if (size_bytes > kMaxSize) return fmt::format("a cache of {} bytes is larger than the {} bytes a cache may have", size_bytes, kMaxSize);
    if (sector_bytes > line_bytes) return fmt::format("a sector of {} bytes is larger than the line ({} bytes)", sector_bytes, line_bytes);
    if (line_bytes % sector_bytes != 0) return fmt::format("a line of {} bytes is not a whole number of {}-byte sectors", line_bytes, sector_bytes);
    if (line_bytes / sector_bytes > 32) return fmt::format("a line may have at most 32 sectors, not {}", line_bytes / sector_bytes);
    if (fill_bytes != 0 && (fill_bytes % sector_bytes != 0 || fill_bytes > line_bytes || line_bytes % fill_bytes != 0))
        return fmt::format("a fill of {} bytes is not a whole number of {}-byte sectors dividing the {}-byte line", fill_bytes, sector_bytes,
                           line_bytes);
    if (dirty_limit_bytes != 0 && dirty_limit_bytes < line_bytes)
        return fmt::format("a dirty limit of {} bytes is less than one {}-byte line (0: no limit)", dirty_limit_bytes, line_bytes);
    const std::uint64_t set_bytes = static_cast<std::uint64_t>(line_bytes) * ways;
    if (set_bytes > size_bytes || size_bytes % set_bytes != 0)
        return fmt::format("a cache of {} bytes is not a whole number of sets of {} ways × {}-byte lines ({} bytes each)", size_bytes, ways,
                           line_bytes, set_bytes);
    return {};
}

std::uint64_t CacheConfig::index_key(std::uint64_t line, std::uint64_t sets) const {
    if (!hashed_index) return line;
    // Each run of `sets` consecutive lines covers every set once, as the GPU's XOR hash spreads
    // a contiguous array evenly (a random hash would leave some sets a few lines over their
    // ways, and a loop that sweeps such an array again and again would miss on them every
    // time: FA1 at fp32 read 3× its arrays that way, where the H100 read them once); each run
    // is rotated by a hash of its number (splitmix64's finalizer), so that strides that share a
    // set under modulo indexing spread over all of them.
    std::uint64_t run = line / sets;
    run ^= run >> 30;
    run *= 0xbf58476d1ce4e5b9u;
    run ^= run >> 27;
    run *= 0x94d049bb133111ebu;
    run ^= run >> 31;
    return line + run;
}

// What the H100's L2 does with dirty lines during a launch (gpu/README.md, "Writes"), each from
// a committed measurement:
// - it keeps at most kH100DirtyBytes dirty: a launch that only writes 64 MiB, after toysim's
//   flush, makes DRAM write 42,405,888 bytes while it runs (gpu/results/l2_probe_h100.txt, row
//   "write 64 MiB"), so 24,702,976 bytes (23.6 MiB) stay dirty, even with 26 MiB of L2 to spare;
// - a dirty line's data goes to DRAM once 12 of the 16 lines of its set were used after it (the
//   line stays, clean): 37.5 MiB, where a stream spread over every SM finds half of what it
//   read before gone (gpu/results/l2_capacity_h100.txt, rows "37 dense" 0.456 missed and
//   "38 dense" 0.605). Reads keep the whole 50 MiB, least recently used first, as before.
constexpr std::uint64_t kH100DirtyBytes = (std::uint64_t{64} << 20) - 42405888;
constexpr std::uint32_t kH100DirtyWays = 12;
// The H200's, measured the same way (gpu/results/l2_probe_h200.txt, l2_capacity_h200.txt): a
// launch that only writes 64 MiB makes DRAM write 37,572,864 bytes while it runs, so 29,536,000
// (28.2 MiB, 47% of its 60 MiB, as the H100's 23.6 of 50) stay dirty; a stream over every SM
// finds half of what it read gone between 43 MiB (0.428 missed) and 44 (0.517), 0.73 of the L2,
// as the H100's 37.5 of 50 (0.75): 12 of 16 ways again.
constexpr std::uint64_t kH200DirtyBytes = (std::uint64_t{64} << 20) - 37572864;
constexpr std::uint32_t kH200DirtyWays = 12;

const std::vector<CachePreset>& cache_presets() {
    static const std::vector<CachePreset> presets = {
        {"h100", CacheConfig{50u << 20, 128, 32, 16, 64, true, kH100DirtyBytes, kH100DirtyWays},
         "NVIDIA H100 (SXM/PCIe): 50 MiB L2, 128-byte lines of 32-byte sectors, 64-byte fills, a hashed set index, at most 23.6 MiB "
         "dirty (measured, gpu/README.md); a dirty line written back once 12 of its set's 16 ways were used after it (from the "
         "measured capacity); 16 ways and LRU assumed"},
        {"h200", CacheConfig{60u << 20, 128, 32, 16, 64, true, kH200DirtyBytes, kH200DirtyWays},
         "NVIDIA H200: 60 MiB L2, 128-byte lines of 32-byte sectors, 64-byte fills, a hashed set index, at most 28.2 MiB dirty "
         "(measured, gpu/results/l2_probe_h200.txt); a dirty line written back once 12 of its set's 16 ways were used after it "
         "(from the measured capacity); 16 ways and LRU assumed, as on the H100"},
        {"a100", CacheConfig{40u << 20, 128, 32, 16, 32, true},
         "NVIDIA A100: 40 MiB L2, 128-byte lines of 32-byte sectors; ways, fills, the hashed index and LRU assumed, not measured"},
    };
    return presets;
}

namespace {

// "50MiB", "4096", "64B": bytes; nullopt for anything else or past 2^40 · 1024.
std::optional<std::uint64_t> parse_bytes(std::string_view text) {
    static const std::pair<std::string_view, std::uint64_t> units[] = {{"GiB", 1u << 30}, {"MiB", 1u << 20}, {"KiB", 1u << 10}, {"B", 1}};
    std::uint64_t scale = 1;
    for (const auto& [unit, bytes] : units)
        if (text.size() > unit.size() && text.substr(text.size() - unit.size()) == unit) {
            text.remove_suffix(unit.size());
            scale = bytes;
            break;
        }
    auto n = parse_whole_number(text);
    if (!n || *n > (std::uint64_t{1} << 50) / scale) return std::nullopt;
    return *n * scale;
}

}  // namespace

ParsedCache parse_cache(std::string_view text) {
    ParsedCache out;
    out.error_length = text.size();
    auto about = [&](std::string_view part) {  // part is a piece of text
        out.error_at = static_cast<std::size_t>(part.data() - text.data());
        out.error_length = part.size();
    };
    std::vector<std::string_view> words;
    for (size_t at = 0; at < text.size();) {
        size_t end = text.find_first_of(" \t,", at);
        if (end == std::string_view::npos) end = text.size();
        if (end > at) words.push_back(text.substr(at, end - at));
        at = end + 1;
    }
    std::vector<std::string_view> preset_names;
    for (const auto& preset : cache_presets()) preset_names.push_back(preset.name);
    bool sized = false;
    for (size_t k = 0; k < words.size(); ++k) {
        const std::string_view word = words[k];
        const size_t eq = word.find('=');
        if (eq == std::string_view::npos) {
            const CachePreset* found = nullptr;
            for (const auto& preset : cache_presets())
                if (preset.name == word) found = &preset;
            if (!found) {
                out.error = fmt::format("unknown cache preset {}{}", quoted_name(word), did_you_mean(word, preset_names));
                if (did_you_mean(word, preset_names).empty()) out.error += fmt::format(" (presets: {})", fmt::join(preset_names, ", "));
                about(word);
                return out;
            }
            if (k != 0) {
                out.error = fmt::format("the preset {} comes first, before the settings that change it", quoted_name(word));
                about(word);
                return out;
            }
            out.config = found->config;
            sized = true;
            continue;
        }
        const std::string_view key = word.substr(0, eq), value = word.substr(eq + 1);
        static const std::vector<std::string_view> keys = {"size", "line", "sector", "ways", "fill", "index", "dirty", "dirty_ways"};
        if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
            out.error = fmt::format("unknown cache setting {}{}", quoted_name(key), did_you_mean(key, keys));
            about(key);
            return out;
        }
        if (key == "index") {
            if (value != "mod" && value != "hash") {
                out.error = fmt::format("cache index {} is not mod or hash", quoted_name(value));
                about(value);
                return out;
            }
            out.config.hashed_index = value == "hash";
            continue;
        }
        const bool count = key == "ways" || key == "dirty_ways";
        auto bytes = count ? parse_whole_number(value) : parse_bytes(value);
        if (!bytes || (key != "size" && key != "dirty" && *bytes > 0xffffffffu)) {
            out.error = fmt::format("cache {} {} is not a {}", key, quoted_name(value),
                                    count ? "whole number" : "byte count (a whole number, optionally with B, KiB, MiB or GiB)");
            about(value);
            return out;
        }
        if (key == "size") out.config.size_bytes = *bytes, sized = true;
        if (key == "dirty") out.config.dirty_limit_bytes = *bytes;
        if (key == "dirty_ways") out.config.dirty_ways = static_cast<std::uint32_t>(*bytes);
        if (key == "line") out.config.line_bytes = static_cast<std::uint32_t>(*bytes);
        if (key == "sector") out.config.sector_bytes = static_cast<std::uint32_t>(*bytes);
        if (key == "ways") out.config.ways = static_cast<std::uint32_t>(*bytes);
        if (key == "fill") out.config.fill_bytes = static_cast<std::uint32_t>(*bytes);
    }
    if (!sized) {
        out.error = fmt::format("a cache needs a size (size=50MiB) or a preset ({})", fmt::join(preset_names, ", "));
        return out;
    }
    out.error = out.config.problem();
    return out;
}

}  // namespace toysim
