// A stepping session as every front end opens one (`toysim step`, the Python module's
// toysim.Session, the browser's engine): the checks, the choice of numbers or symbols, and the
// session that owns its program.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

#include "sim/app/spelling.h"
#include "sim/print/step_report.h"
#include "sim/step/session.h"

namespace toysim::app {

struct SessionRequest {
    std::string values = "auto";  // auto, numeric or symbolic
    std::uint64_t max_steps = 0;  // the session's limit on the run; 0: SessionLimits' own
};

struct SessionPlan {
    bool symbolic = false;
    SessionLimits limits;
    std::uint64_t steps = 0;  // the run's steps, from the count-only pass
};

// The run must fit; the values are symbolic for scalar programs of up to kSymbolicSessionSteps
// steps unless asked otherwise, and a symbolic session of a longer run is refused. Throws ToyError.
SessionPlan plan_session(const Program& program, const SessionRequest& request, const Spelling& spelling);

// A session that owns its program, set up as `toysim step` sets one up: numeric, the
// machine's own values; symbolic, its arena and every value named once (name_session_values),
// in the style the step displays take.
template <class Domain>
class OwnedSession {
public:
    OwnedSession(std::shared_ptr<const Program> program, SessionLimits limits)
        : program_(std::move(program)), arena_(std::make_unique<ExprArena>()), session_(*program_, domain(), arena(), limits) {
        if constexpr (std::is_same_v<Domain, SymbolicDomain>) {
            names_ = name_session_values(session_, *arena_);
            style_.names = names_.get();
        }
    }
    Session<Domain>& session() { return session_; }
    const Session<Domain>& session() const { return session_; }
    const Program& program() const { return *program_; }
    const StepStyle& style() const { return style_; }
    StepStyle& style() { return style_; }
    // A symbolic value as the trace names it (symbolic sessions only).
    std::string name(const typename Domain::Value& v) const { return names_->cell(v); }

private:
    std::shared_ptr<const Program> program_;
    std::unique_ptr<ExprArena> arena_;  // the symbolic values (unused by a numeric session)
    Session<Domain> session_;
    std::unique_ptr<ExprFormatter> names_;
    StepStyle style_;

    Domain domain() {
        if constexpr (std::is_same_v<Domain, SymbolicDomain>) return SymbolicDomain{arena_.get(), program_.get()};
        else return NumericDomain{};
    }
    ExprArena* arena() { return std::is_same_v<Domain, SymbolicDomain> ? arena_.get() : nullptr; }
};

// What a front end's session class of either domain holds: the owned session, and the session
// and style it reads most.
template <class Domain>
class HeldSession {
public:
    HeldSession(std::shared_ptr<const Program> program, SessionLimits limits) : owned_(std::move(program), limits) {}

protected:
    OwnedSession<Domain> owned_;
    Session<Domain>& session_ = owned_.session();
    const StepStyle& style_ = owned_.style();
};

// The front end's session class for the plan's domain: Of<NumericDomain> or
// Of<SymbolicDomain>, each built from (program, limits), as a Base.
template <template <class> class Of, class Base>
std::unique_ptr<Base> open_session(std::shared_ptr<const Program> program, const SessionPlan& plan) {
    if (plan.symbolic) return std::make_unique<Of<SymbolicDomain>>(std::move(program), plan.limits);
    return std::make_unique<Of<NumericDomain>>(std::move(program), plan.limits);
}

}  // namespace toysim::app
