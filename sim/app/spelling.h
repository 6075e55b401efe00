// How a front end spells what a message may ask its user to change. The command layer's
// messages name the concept and take the front end's word for it, so that a Python user reads
// `max_steps=` where a shell user reads `--max-steps`.
#pragma once

#include <string>

namespace toysim::app {

struct Spelling {
    std::string sets = "--set";                        // the program's parameters
    std::string max_steps = "--max-steps";             // the limit on a run's steps
    std::string values_numeric = "--values numeric";   // numbers, not symbols, in a trace or a session
    std::string heads = "--heads";                     // cost: copies of the problem sharing a cache
    std::string workers = "--workers";                 // cost: a grid's workers
    std::string cold_launches = "--cold-launches";     // cost: each launch from a cold cache
    std::string cache = "--cache h100";                // how a cache is given
    std::string machine = "--machine";                 // cost: a named machine's predicted time
    std::string registers = "--registers";             // tune --schedule: the register file searched

    static Spelling cli() { return {}; }
};

}  // namespace toysim::app
