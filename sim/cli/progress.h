// A sign of life for long runs: one line on a terminal's stderr, rewritten in place ("\r"),
// shown only once a run has lasted a couple of seconds, and erased when it ends.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

namespace toysim::cli {

class Progress {
public:
    // Nothing is printed unless `enabled` (stderr is a terminal) and `delay` has passed.
    // `expected_steps`, if not 0, is the run's instructions: the line then says how far it is.
    Progress(std::ostream& err, bool enabled, std::string label, std::uint64_t expected_steps = 0,
             std::chrono::milliseconds delay = std::chrono::seconds(2));
    ~Progress();  // erases the line, if one was printed
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;

    // Called by the run every few million steps.
    void update(std::uint64_t steps_done);
    bool shown() const { return width_ > 0; }

private:
    using Clock = std::chrono::steady_clock;
    std::ostream& err_;
    bool enabled_;
    std::string label_;
    std::uint64_t expected_;
    std::chrono::milliseconds delay_;
    Clock::time_point start_, last_{};
    std::size_t width_ = 0;  // characters of the line now on the terminal
};

}  // namespace toysim::cli
