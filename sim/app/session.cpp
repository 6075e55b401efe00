// Opening a stepping session (session.h).
#include "sim/app/session.h"

#include <fmt/format.h>

#include "sim/analysis/cost.h"
#include "sim/check/run.h"
#include "sim/exec/machine.h"
#include "support/text.h"

namespace toysim::app {

SessionPlan plan_session(const Program& p, const SessionRequest& request, const Spelling& spelling) {
    check_fits_in_run(p);
    SessionPlan plan;
    plan.steps = estimate_work(p).instructions;
    if (request.max_steps) plan.limits.max_steps = request.max_steps;
    const bool fits = plan.steps <= kSymbolicSessionSteps;
    plan.symbolic = shows_symbols(request.values, p, fits);
    if (plan.symbolic && !fits)  // asked for by name: `auto` does not choose symbols for a run this long
        throw ToyError(fmt::format("symbolic stepping names every value of the run, which is for runs of up to {} steps; this one "
                                   "has {}: use {}, or smaller parameters",
                                   grouped(static_cast<double>(kSymbolicSessionSteps)), grouped(static_cast<double>(plan.steps)),
                                   spelling.values_numeric));
    return plan;
}

}  // namespace toysim::app
