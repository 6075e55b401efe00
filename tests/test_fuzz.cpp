// Robustness: thousands of mutated programs (every shipped program and every bad-input case,
// with seeded random edits) go through parse, compile and run. Each must end in a verdict or
// a ToyError: no crash, no other exception, no hang. Under the sanitize preset the same
// inputs also check memory safety.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <random>

#include "sim/check/run.h"
#include "sim/print/report.h"
#include "support.h"

using namespace toysim;
using namespace toysim::testing;

namespace {

std::vector<std::string> seed_files() {
    std::vector<std::string> out;
    for (const char* dir : {"programs", "tests/bad"})
        for (const auto& e : std::filesystem::recursive_directory_iterator(std::filesystem::path(TOYSIM_SOURCE_DIR) / dir))
            if (e.path().extension() == ".toy") out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
    return out;
}

// One random edit: the kinds of mistakes people make, plus the extremes numbers can reach.
std::string mutate(std::string text, std::mt19937_64& rng) {
    static const std::vector<std::string> pieces = {
        "R", "r9", "R[", "]", "[", "(", ")", "{", "}", ",", "=", "..", "-", "*", "/", "%", "0", "1", "7", "n",
        "i", "x", "a[i][k]", "x[n]", "9223372036854775807", "-9223372036854775808", "4611686018427387904",
        "\n", " ", "#", "for j in 0..n {", "LOAD", "STORE", "MAC", "EXP", "registers", "param", "check", "expect",
        "×", "1e308", "random(", "input", "output", "scratch", "R[i + 1]", "0x", "2.0.5"};
    if (text.empty()) return pieces[rng() % pieces.size()];
    size_t at = rng() % text.size();
    switch (rng() % 4) {
        case 0: return text.erase(at, 1 + rng() % 3);
        case 1: return text.insert(at, pieces[rng() % pieces.size()]);
        case 2: text[at] = static_cast<char>(32 + rng() % 95); return text;
        default: {  // duplicate a line
            size_t start = text.rfind('\n', at);
            start = start == std::string::npos ? 0 : start + 1;
            size_t end = text.find('\n', at);
            std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start + 1);
            return text.insert(start, line);
        }
    }
}

}  // namespace

TEST_CASE("mutated programs end in a verdict or a clear error, never a crash", "[fuzz]") {
    std::mt19937_64 rng(20261121);
    int verdicts = 0, errors = 0;
    for (const auto& path : seed_files()) {
        std::string original = read_text(path);
        for (int round = 0; round < 300; ++round) {
            std::string text = original;
            for (int edits = 1 + static_cast<int>(rng() % 3); edits > 0; --edits) text = mutate(text, rng);
            INFO(path << ", mutation " << round << ":\n" << text);
            try {
                Program p = build(text);
                // Keep the suite fast: a mutation may legitimately ask for gigabytes of DRAM.
                if (p.dram_size > (1 << 20) || p.registers > (1 << 16)) continue;
                RunOptions options;
                options.max_steps = 200'000;
                run(p, options);
                Trace t = trace(p, true, RunOptions::limited_to(2'000));
                CHECK(!format_trace(p, t, TraceOptions{}).empty());
                ++verdicts;
            } catch (const ToyError& e) {
                CHECK(std::string(e.what()).size() > 0);
                ++errors;
            }
        }
    }
    // Both outcomes must occur, or the mutations are not exercising anything.
    CHECK(verdicts > 500);
    CHECK(errors > 5000);
}
