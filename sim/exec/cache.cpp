// The cache model (cache.h).
#include "sim/exec/cache.h"

#include <algorithm>
#include <bit>
#include <functional>
#include <stdexcept>

namespace toysim {

Cache::Cache(const CacheConfig& config, std::uint32_t owners) : config_(config) {
    if (std::string why = config.problem(); !why.empty()) throw std::invalid_argument(why);
    if (owners == 0) throw std::invalid_argument("a cache needs at least one owner");
    sets_ = config.sets();
    sparse_ = sets_ * config.ways > kDenseBytes / sizeof(Way);
    if (!sparse_) ways_.assign(sets_ * config.ways, Way{});
    by_owner_.assign(owners, CacheStats{});
    dirty_limit_lines_ = config.dirty_limit_bytes / config.line_bytes;
    eager_ = config.dirty_ways != 0 && config.dirty_ways < config.ways;
    if (eager_) {
        uses_.resize(config.ways);
        newest_start_.assign(sparse_ ? 0 : sets_, 0);
    }
}

void Cache::unlink_dirty(Way& way) {
    (way.older == kNone ? oldest_dirty_ : ways_[way.older].newer) = way.newer;
    (way.newer == kNone ? newest_dirty_ : ways_[way.newer].older) = way.older;
    way.older = way.newer = kNone;
    --dirty_lines_;
}

void Cache::append_dirty(Way& way) {
    const auto at = static_cast<std::uint64_t>(&way - ways_.data());
    way.older = newest_dirty_;
    way.newer = kNone;
    (newest_dirty_ == kNone ? oldest_dirty_ : ways_[newest_dirty_].newer) = at;
    newest_dirty_ = at;
    ++dirty_lines_;
}

void Cache::clean(Way& way) {
    by_owner_[way.owner].dram_write_bytes += static_cast<std::uint64_t>(std::popcount(way.dirty)) * config_.sector_bytes;
    way.dirty = 0;
    if (dirty_limit_lines_) unlink_dirty(way);
}

void Cache::clean_below(std::uint64_t first) {
    Way* set = ways_.data() + first;
    const std::uint32_t keep = config_.dirty_ways;
    std::uint64_t* uses = uses_.data();
    std::uint32_t valid = 0;
    for (std::uint32_t w = 0; w < config_.ways; ++w)
        if (set[w].last_use != 0) uses[valid++] = set[w].last_use;
    std::uint64_t& newest_start = newest_start_[first / config_.ways];
    if (valid <= keep) {
        newest_start = 0;  // every line is among the newest
        return;
    }
    std::nth_element(uses, uses + keep, uses + valid, std::greater<>());
    newest_start = *std::min_element(uses, uses + keep);
    const std::uint64_t newest_out = uses[keep];  // the most recently used line not among the `keep` newest
    for (std::uint32_t w = 0; w < config_.ways; ++w)
        if (set[w].dirty && set[w].last_use != 0 && set[w].last_use <= newest_out) clean(set[w]);
}

Cache::Way& Cache::touch(std::uint64_t line, std::uint32_t owner) {
    const std::uint64_t index = config_.index_key(line, sets_) % sets_;
    std::uint64_t first = index * config_.ways;
    if (sparse_) {
        auto [at, added] = set_block_.try_emplace(index, ways_.size());
        if (added) {
            ways_.resize(ways_.size() + config_.ways);
            if (eager_) newest_start_.push_back(0);
        }
        first = at->second;
    }
    Way* set = ways_.data() + first;
    Way* victim = set;
    for (std::uint32_t w = 0; w < config_.ways; ++w) {
        Way& way = set[w];
        if (way.last_use != 0 && way.tag == line) {
            // A line from below the newest dirty_ways moves up, and the last of them moves down.
            const bool from_below = eager_ && way.last_use < newest_start_[first / config_.ways];
            way.last_use = ++tick_;
            if (way.dirty && dirty_limit_lines_) {  // now the most recently used dirty line
                unlink_dirty(way);
                append_dirty(way);
            }
            if (from_below) clean_below(first);
            return way;
        }
        if (way.last_use < victim->last_use) victim = &way;  // an empty way (0) first, then the oldest
    }
    by_owner_[victim->owner].dram_write_bytes += static_cast<std::uint64_t>(std::popcount(victim->dirty)) * config_.sector_bytes;
    if (victim->dirty && dirty_limit_lines_) unlink_dirty(*victim);
    *victim = Way{line, ++tick_, 0, 0, owner};
    if (eager_) clean_below(first);  // every other line moved down a place
    return *victim;
}

void Cache::access(std::uint64_t address, std::uint64_t bytes, bool write, std::uint32_t owner) {
    if (bytes == 0) return;
    CacheStats& mine = by_owner_.at(owner);
    const std::uint64_t first = address / config_.sector_bytes, last = (address + bytes - 1) / config_.sector_bytes;
    const std::uint32_t per_line = config_.sectors_per_line();
    for (std::uint64_t sector = first; sector <= last;) {
        // One lookup per line for the run of its sectors the access covers.
        const std::uint64_t line = sector / per_line;
        const std::uint64_t end = std::min(last + 1, (line + 1) * per_line);
        Way& way = touch(line, owner);
        for (; sector < end; ++sector) {
            const std::uint32_t bit = std::uint32_t{1} << (sector % per_line);
            const bool hit = way.valid & bit;
            if (write) {
                (hit ? mine.write_hits : mine.write_misses) += 1;
                if (way.dirty == 0 && dirty_limit_lines_) {  // one more dirty line: at the limit, the oldest is written back first
                    if (dirty_lines_ == dirty_limit_lines_) clean(ways_[oldest_dirty_]);
                    append_dirty(way);
                }
                way.dirty |= bit;
                way.valid |= bit;
            } else {
                (hit ? mine.read_hits : mine.read_misses) += 1;
                if (!hit) {  // the whole fill group comes in
                    const std::uint32_t fill = config_.sectors_per_fill();
                    const auto group = static_cast<std::uint32_t>(((std::uint64_t{1} << fill) - 1) << ((sector % per_line) / fill * fill));
                    mine.dram_read_bytes += static_cast<std::uint64_t>(fill) * config_.sector_bytes;
                    way.valid |= group;
                }
            }
        }
    }
}

CacheStats& CacheStats::operator+=(const CacheStats& more) {
    read_hits += more.read_hits;
    read_misses += more.read_misses;
    write_hits += more.write_hits;
    write_misses += more.write_misses;
    dram_read_bytes += more.dram_read_bytes;
    dram_write_bytes += more.dram_write_bytes;
    return *this;
}

CacheStats Cache::stats() const {
    CacheStats total;
    for (const CacheStats& s : by_owner_) total += s;
    return total;
}

void Cache::read(std::uint64_t address, std::uint64_t bytes, std::uint32_t owner) { access(address, bytes, false, owner); }
void Cache::write(std::uint64_t address, std::uint64_t bytes, std::uint32_t owner) { access(address, bytes, true, owner); }

void Cache::flush() {
    for (std::uint32_t o = 0; o < by_owner_.size(); ++o) by_owner_[o].dram_write_bytes += dirty_bytes(o);
    std::fill(ways_.begin(), ways_.end(), Way{});
    dirty_lines_ = 0;
    oldest_dirty_ = newest_dirty_ = kNone;
    if (eager_) newest_start_.assign(sparse_ ? 0 : sets_, 0);
    if (sparse_) {
        ways_.clear();
        set_block_.clear();
    }
}

std::uint64_t Cache::dirty_bytes(std::uint32_t owner) const {
    std::uint64_t sectors = 0;
    for (const Way& w : ways_)
        if (w.owner == owner) sectors += static_cast<std::uint64_t>(std::popcount(w.dirty));
    return sectors * config_.sector_bytes;
}

std::uint64_t Cache::dirty_bytes() const {
    std::uint64_t sectors = 0;
    for (const Way& w : ways_) sectors += static_cast<std::uint64_t>(std::popcount(w.dirty));
    return sectors * config_.sector_bytes;
}

}  // namespace toysim
