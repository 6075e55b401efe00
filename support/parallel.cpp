#include "support/parallel.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <vector>

#ifndef __EMSCRIPTEN__
#include <thread>
#endif

namespace toysim {

void for_each_index(std::size_t count, const std::function<void(std::size_t)>& fn) {
    std::vector<std::exception_ptr> failed(count);
    const auto one = [&](std::size_t k) {
        try {
            fn(k);
        } catch (...) {
            failed[k] = std::current_exception();
        }
    };
#ifdef __EMSCRIPTEN__
    for (std::size_t k = 0; k < count; ++k) one(k);
#else
    const std::size_t workers = std::min<std::size_t>(count, std::max(1u, std::thread::hardware_concurrency()));
    if (workers <= 1) {
        for (std::size_t k = 0; k < count; ++k) one(k);
    } else {
        std::atomic<std::size_t> next{0};
        std::vector<std::thread> threads;
        for (std::size_t w = 0; w < workers; ++w)
            threads.emplace_back([&] {
                for (std::size_t k = next++; k < count; k = next++) one(k);
            });
        for (std::thread& t : threads) t.join();
    }
#endif
    for (const std::exception_ptr& e : failed)
        if (e) std::rethrow_exception(e);
}

}  // namespace toysim
