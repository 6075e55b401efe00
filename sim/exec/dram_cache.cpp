// The program's DRAM behind its cache (dram_cache.h).
#include "sim/exec/dram_cache.h"

namespace toysim {

DramCache::DramCache(const Program& program, std::int64_t heads, const std::vector<int>& element_bytes)
    : program_(&program),
      cache_(program.cache.value().config, static_cast<std::uint32_t>(std::max<size_t>(program.arrays.size(), 1))),
      layout_(cache_layout(program, heads, element_bytes)),
      proved_(program.arrays.size()) {}

// Modulo 2^64, as the element's address is computed (Affine::eval).
std::uint64_t DramCache::byte_address(int array, std::int64_t element, std::int64_t head) const {
    const auto a = static_cast<size_t>(array);
    const std::uint64_t offset = static_cast<std::uint64_t>(element) - static_cast<std::uint64_t>(program_->arrays[a].base);
    return layout_.base[a] + static_cast<std::uint64_t>(head) * layout_.head_bytes[a] + offset * layout_.element_bytes[a];
}

void DramCache::move(int array, std::uint64_t address, std::int64_t elements, bool write) {
    const std::uint64_t bytes = static_cast<std::uint64_t>(elements) * layout_.element_bytes[static_cast<size_t>(array)];
    lookups_ += 1 + bytes / cache_.config().line_bytes;  // within one of the lines the cache looks up, in one division
    const auto owner = static_cast<std::uint32_t>(array);
    if (write) cache_.write(address, bytes, owner);
    else cache_.read(address, bytes, owner);
}

void DramCache::access(const DramAccess& d, std::int64_t head) {
    for (bool write : {false, true}) {
        if (write ? !writes_dram(d.kind) : !reads_dram(d.kind)) continue;
        for (std::int64_t i = 0; i < d.rows; ++i) {
            if (d.col_stride == 1 || d.cols == 1) {
                move(d.array, byte_address(d.array, d.at(i, 0), head), d.cols, write);
                continue;
            }
            for (std::int64_t j = 0; j < d.cols; ++j) move(d.array, byte_address(d.array, d.at(i, j), head), 1, write);
        }
    }
}

void DramCache::add_hits(int array, std::uint64_t read_sectors, std::uint64_t write_sectors) {
    CacheStats& s = proved_[static_cast<size_t>(array)];
    s.read_hits += read_sectors;
    s.write_hits += write_sectors;
}

CacheCounts DramCache::counts() const {
    CacheCounts c;
    c.total = cache_.stats();
    for (size_t a = 0; a < program_->arrays.size(); ++a) {
        c.arrays.push_back(cache_.stats(static_cast<std::uint32_t>(a)));
        c.arrays.back() += proved_[a];
        c.total += proved_[a];
    }
    c.dirty_bytes = cache_.dirty_bytes();
    return c;
}

}  // namespace toysim
