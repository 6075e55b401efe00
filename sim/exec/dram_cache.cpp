// The program's DRAM behind its cache (dram_cache.h).
#include "sim/exec/dram_cache.h"

namespace toysim {

DramCache::DramCache(const Program& program, std::int64_t heads, const std::vector<int>& element_bytes)
    : program_(&program),
      cache_(program.cache.value().config, static_cast<std::uint32_t>(std::max<size_t>(program.arrays.size(), 1))),
      layout_(cache_layout(program, heads, element_bytes)) {}

void DramCache::move(int array, std::uint64_t head_base, std::int64_t first_element, std::int64_t elements, bool write) {
    const ArrayInfo& a = program_->arrays[static_cast<size_t>(array)];
    const std::uint64_t size = layout_.element_bytes[static_cast<size_t>(array)];
    const std::uint64_t address = head_base + static_cast<std::uint64_t>(first_element - a.base) * size;
    const std::uint64_t bytes = static_cast<std::uint64_t>(elements) * size;
    const auto owner = static_cast<std::uint32_t>(array);
    if (write) cache_.write(address, bytes, owner);
    else cache_.read(address, bytes, owner);
}

void DramCache::access(const DramAccess& d, std::int64_t head) {
    const auto a = static_cast<size_t>(d.array);
    const std::uint64_t head_base = layout_.base[a] + static_cast<std::uint64_t>(head) * layout_.head_bytes[a];
    for (bool write : {false, true}) {
        if (write ? !writes_dram(d.kind) : !reads_dram(d.kind)) continue;
        for (std::int64_t i = 0; i < d.rows; ++i) {
            if (d.col_stride == 1 || d.cols == 1) {
                move(d.array, head_base, d.at(i, 0), d.cols, write);
                continue;
            }
            for (std::int64_t j = 0; j < d.cols; ++j) move(d.array, head_base, d.at(i, j), 1, write);
        }
    }
}

CacheCounts DramCache::counts() const {
    CacheCounts c;
    c.total = cache_.stats();
    for (size_t a = 0; a < program_->arrays.size(); ++a) c.arrays.push_back(cache_.stats(static_cast<std::uint32_t>(a)));
    c.dirty_bytes = cache_.dirty_bytes();
    return c;
}

}  // namespace toysim
