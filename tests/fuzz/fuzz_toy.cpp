// libFuzzer target: each input is a .toy program (tests/fuzz/one_input.h runs it through
// every stage). A ToyError is bad input, handled; std::bad_alloc is tolerated; a crash, a
// sanitizer report or any other exception is a bug. scripts/fuzz.sh builds and runs it.
#include <cstddef>
#include <cstdint>
#include <new>

#include "tests/fuzz/one_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        toysim::fuzz::one_input(std::string_view(reinterpret_cast<const char*>(data), size));
    } catch (const std::bad_alloc&) {
    }
    return 0;
}
