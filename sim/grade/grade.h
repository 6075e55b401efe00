// The grader: an exercise spec (the instructor's checks, machine and targets) and a student's
// instructions, run on every test case. (Being written: see issue 10.)
#pragma once

namespace toysim {}
