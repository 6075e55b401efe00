// Independent pieces of work spread over the host's cores.
#pragma once

#include <cstddef>
#include <functional>

namespace toysim {

// fn(0), ..., fn(count − 1), each once, over the host's cores (one after another where there is
// one core, or no threads: the browser's engine). Each call must write only what is its own
// (its index's slot of a result). When calls throw, every call still runs, and the exception of
// the lowest index is rethrown: the same one whatever the threads' order.
void for_each_index(std::size_t count, const std::function<void(std::size_t)>& fn);

}  // namespace toysim
