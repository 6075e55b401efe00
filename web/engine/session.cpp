// The stepper for the browser's engine: one session at a time (the page steps one program),
// opened, moved and asked through JSON requests as the rest of the API (api.h). It is set up
// as `toysim step` sets it up (sim/cli/step_command.cpp) and shows what the stepper shows
// (sim/print/step_report.h).
#include <emscripten/bind.h>

#include <fmt/format.h>
#include <memory>

#include "sim/app/session.h"
#include "sim/print/report.h"
#include "sim/print/step_report.h"
#include "sim/print/view_report.h"
#include "support/text.h"
#include "web/engine/api.h"

namespace toysim::web {

using Json = nlohmann::ordered_json;

namespace {

// What the API sees of a session of either domain.
class Stepping {
public:
    virtual ~Stepping() = default;
    virtual Json move(const std::string& how, std::uint64_t n) = 0;
    virtual Json breakpoint(const Json& request) = 0;
    virtual Json state() const = 0;
};

template <class Domain>
class SteppingOf final : public Stepping, app::HeldSession<Domain> {
public:
    using app::HeldSession<Domain>::HeldSession;  // set up as `toysim step` sets a session up

    // how: forward, backward, goto, continue or reverse (continue backward).
    Json move(const std::string& how, std::uint64_t n) override {
        Stop stop = how == "forward"    ? this->session_.forward(n)
                    : how == "backward" ? this->session_.backward(n)
                    : how == "goto"     ? this->session_.go_to(n)
                    : how == "continue" ? this->session_.run_forward()
                    : how == "reverse"  ? this->session_.run_backward()
                                        : throw ToyError(fmt::format("no move {}: forward, backward, goto, continue or reverse", quoted_name(how)));
        Json out = state();
        out["reason"] = stop_reason_name(stop.reason);
        out["breakpoint"] = stop.reason == Stop::Reason::Breakpoint ? Json(this->session_.breakpoints()[static_cast<size_t>(stop.breakpoint)].number)
                                                                    : Json(nullptr);
        out["text"] = format_stop(this->session_, stop, this->style_);
        return out;
    }

    // {"add": "LINE or a condition", "watch": false}, or {"delete": N} (0: all).
    Json breakpoint(const Json& request) override {
        if (request.contains("add")) {
            this->session_.add_breakpoint(parse_breakpoint(this->owned_.program(), request.at("add").get<std::string>(), request.value("watch", false)));
        } else {
            const int number = request.value("delete", 0);
            if (number == 0) this->session_.breakpoints().clear();
            else if (!this->session_.delete_breakpoint(number)) throw ToyError(fmt::format("no breakpoint {}", number));
        }
        return state();
    }

    // Where the session stands: the numbers, the stepper's texts, and in "machine" the
    // picture the playground draws with the viewer's code (view_state_json).
    Json state() const override {
        Json out;
        out["step"] = this->session_.position();
        out["cycle"] = this->session_.cycle();
        out["end"] = this->session_.end() ? Json(*this->session_.end()) : Json(nullptr);
        out["fault"] = this->session_.fault() ? Json(format_error(*this->session_.fault(), this->owned_.program().source.get(), "toysim")) : Json(nullptr);
        out["symbolic"] = std::is_same_v<Domain, SymbolicDomain>;
        Json regs = Json::object();
        const auto& st = this->session_.state();
        for (int r = 0; r < this->owned_.program().scalar_registers; ++r)
            if (st.written[static_cast<size_t>(r)]) regs[fmt::format("R{}", r)] = value(st.regs[static_cast<size_t>(r)]);
        out["registers"] = regs;
        Json bps = Json::array();
        for (const auto& bp : this->session_.breakpoints()) bps.push_back({{"number", bp.number}, {"text", bp.text}, {"hits", bp.hits}});
        out["breakpoints"] = bps;
        out["where"] = format_stop(this->session_, Stop{}, this->style_);
        out["regs_text"] = format_registers(this->session_, this->style_);
        out["counters_text"] = format_session_counters(this->session_);
        // Several workers or devices: `info workers`, each side by side.
        if (this->owned_.program().workers > 1) out["workers_text"] = format_workers(this->session_);
        out["machine"] = view_state_json(this->session_, this->style_);
        return out;
    }

private:
    Json value(const typename Domain::Value& v) const {
        if constexpr (std::is_same_v<Domain, NumericDomain>) return v;
        else return this->owned_.name(v);
    }
};

std::unique_ptr<Stepping> current;

// {"path", "text", "sets", "values", "max_steps"}: a session at step 0, symbolic for scalar
// programs of up to kSymbolicSessionSteps steps unless "values" says otherwise.
int open_request(const Json& request, Reply& reply, Where& where) {
    current.reset();
    auto program = std::make_shared<const Program>(load(request, where));
    const app::SessionPlan plan = app::plan_session(*program, {request.value("values", std::string("auto")), request.value("max_steps", std::uint64_t{0})},
                                                    app::Spelling::cli());
    current = app::open_session<SteppingOf, Stepping>(std::move(program), plan);
    reply.out += current->state().dump();
    return 0;
}

Stepping& open_session() {
    if (!current) throw ToyError("no stepping session: open one first (Step)");
    return *current;
}

// {"how": "forward", "n": 5}
int move_request(const Json& request, Reply& reply, Where&) {
    reply.out += open_session().move(request.value("how", std::string("forward")), request.value("n", std::uint64_t{1})).dump();
    return 0;
}

int breakpoint_request(const Json& request, Reply& reply, Where&) {
    reply.out += open_session().breakpoint(request).dump();
    return 0;
}

int state_request(const Json&, Reply& reply, Where&) {
    reply.out += open_session().state().dump();
    return 0;
}

std::string open_api(const std::string& r) { return answer(r, open_request); }
std::string move_api(const std::string& r) { return answer(r, move_request); }
std::string breakpoint_api(const std::string& r) { return answer(r, breakpoint_request); }
std::string state_api(const std::string& r) { return answer(r, state_request); }

}  // namespace

void bind_session() {
    emscripten::function("sessionOpen", &open_api);
    emscripten::function("sessionMove", &move_api);
    emscripten::function("sessionBreakpoint", &breakpoint_api);
    emscripten::function("sessionState", &state_api);
}

}  // namespace toysim::web
