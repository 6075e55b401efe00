// toysim.Session's compiled part: the stepper's engine (sim/step/session.h), set up as
// `toysim step` sets it up (sim/cli/step_command.cpp), and its displays (sim/print/step_report.h).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <fmt/format.h>
#include <optional>

#include "python/module.h"
#include "sim/analysis/cost.h"
#include "sim/print/report.h"
#include "sim/print/step_report.h"
#include "support/text.h"

namespace toysim::python {

namespace {

// A command's mistake inside a session is reported as the stepper reports it ("error: ...",
// and the session goes on); Ctrl-C during a move is KeyboardInterrupt.
template <class Body>
auto in_session(Body&& body) -> decltype(body()) {
    try {
        return body();
    } catch (const ToyError& e) {
        throw LocatedError(std::string("error: ") + e.what());  // as the stepper's loop prints it
    }
}

// What Python sees of a session of either domain.
class SessionBase {
public:
    virtual ~SessionBase() = default;
    virtual py::dict move(const std::string& how, std::uint64_t n) = 0;
    virtual int add_breakpoint(const std::string& text, bool watch) = 0;
    virtual void delete_breakpoint(std::optional<int> number) = 0;
    virtual py::list breakpoints() const = 0;
    virtual std::uint64_t position() const = 0;
    virtual std::uint64_t cycle() const = 0;
    virtual std::optional<std::uint64_t> end() const = 0;
    virtual std::optional<std::string> fault() const = 0;
    virtual bool symbolic() const = 0;
    virtual py::dict registers() const = 0;
    virtual py::dict tiles() const = 0;
    virtual std::string counters() const = 0;
    virtual std::string where() const = 0;
    virtual std::string print(const std::string& what) const = 0;
    virtual std::string regs_text() const = 0;
    virtual std::string mem_text(const std::string& array, std::int64_t first_row) const = 0;
    virtual std::string counters_text() const = 0;
    virtual std::string list_text(std::optional<int> line) const = 0;
};

template <class Domain>
class SessionOf final : public SessionBase {
public:
    // Set up as `toysim step` sets a session up (OwnedSession).
    SessionOf(std::shared_ptr<const Program> program, SessionLimits limits) : owned_(std::move(program), limits) {
        // Ctrl-C stops a long move (continue over millions of steps) as it does at a terminal.
        session_.interrupted = [] { return PyErr_CheckSignals() != 0; };
    }

    py::dict move(const std::string& how, std::uint64_t n) override {
        Stop stop = in_session([&] {
            if (how == "forward") return session_.forward(n);
            if (how == "backward") return session_.backward(n);
            if (how == "goto") return session_.go_to(n);
            if (how == "continue") return session_.run_forward();
            return session_.run_backward();
        });
        if (stop.reason == Stop::Reason::Interrupted && PyErr_Occurred()) throw py::error_already_set();
        py::dict out;
        out["reason"] = stop_reason_name(stop.reason);
        out["breakpoint"] = stop.reason == Stop::Reason::Breakpoint
                                ? py::object(py::int_(session_.breakpoints()[static_cast<size_t>(stop.breakpoint)].number))
                                : py::object(py::none());
        out["step"] = session_.position();
        out["text"] = format_stop(session_, stop, style_);
        return out;
    }

    int add_breakpoint(const std::string& text, bool watch) override {
        return in_session([&] { return session_.add_breakpoint(parse_breakpoint(owned_.program(), text, watch)); });
    }

    void delete_breakpoint(std::optional<int> number) override {
        if (!number) return session_.breakpoints().clear();
        if (!session_.delete_breakpoint(*number)) throw LocatedError(fmt::format("error: no breakpoint {}", *number));
    }

    py::list breakpoints() const override {
        py::list out;
        for (const auto& bp : session_.breakpoints()) {
            py::dict d;
            d["number"] = bp.number;
            d["text"] = bp.text;
            d["hits"] = bp.hits;
            out.append(d);
        }
        return out;
    }

    std::uint64_t position() const override { return session_.position(); }
    std::uint64_t cycle() const override { return session_.cycle(); }
    std::optional<std::uint64_t> end() const override { return session_.end(); }
    std::optional<std::string> fault() const override {
        if (!session_.fault()) return std::nullopt;
        std::string text = format_error(*session_.fault(), owned_.program().source.get(), "toysim");
        if (!text.empty() && text.back() == '\n') text.pop_back();
        return text;
    }
    bool symbolic() const override { return std::is_same_v<Domain, SymbolicDomain>; }

    // The scalar registers written so far: R3 -> its value (a number, or the trace's name for it).
    py::dict registers() const override {
        py::dict out;
        const auto& st = session_.state();
        for (int r = 0; r < owned_.program().scalar_registers; ++r)
            if (st.written[static_cast<size_t>(r)]) out[py::str(fmt::format("R{}", r))] = value(st.regs[static_cast<size_t>(r)]);
        return out;
    }

    // Each tile written so far, at its current shape: a NumPy array (numeric) or rows of names.
    py::dict tiles() const override {
        py::dict out;
        const auto& st = session_.state();
        for (size_t k = 0; k < owned_.program().tiles.size(); ++k) {
            const Tile& t = owned_.program().tiles[k];
            std::int64_t rows = st.tile_rows[k], cols = st.tile_cols[k];
            if (rows == 0) continue;
            auto at = [&](std::int64_t i, std::int64_t j) { return st.tiles[static_cast<size_t>(t.base + i * t.cols + j)]; };
            if constexpr (std::is_same_v<Domain, NumericDomain>) {
                py::array_t<double> a({static_cast<py::ssize_t>(rows), static_cast<py::ssize_t>(cols)});
                auto view = a.mutable_unchecked<2>();
                for (std::int64_t i = 0; i < rows; ++i)
                    for (std::int64_t j = 0; j < cols; ++j) view(i, j) = at(i, j);
                out[py::str(t.name)] = a;
            } else {
                py::list block;
                for (std::int64_t i = 0; i < rows; ++i) {
                    py::list row;
                    for (std::int64_t j = 0; j < cols; ++j) row.append(value(at(i, j)));
                    block.append(row);
                }
                out[py::str(t.name)] = block;
            }
        }
        return out;
    }

    std::string counters() const override {
        Counters c = session_.counters();
        return flat_counters(owned_.program(), c, counters_json(owned_.program(), c)).dump();
    }

    std::string where() const override { return format_stop(session_, Stop{}, style_); }
    std::string print(const std::string& what) const override { return in_session([&] { return format_print(session_, what, style_); }); }
    std::string regs_text() const override { return format_registers(session_, style_); }
    std::string mem_text(const std::string& array, std::int64_t first_row) const override {
        return in_session([&] { return format_memory(session_, array, first_row, style_); });
    }
    std::string counters_text() const override { return format_session_counters(session_); }
    std::string list_text(std::optional<int> line) const override { return format_listing(session_, line); }

private:
    OwnedSession<Domain> owned_;
    Session<Domain>& session_ = owned_.session();
    const StepStyle& style_ = owned_.style();

    py::object value(const typename Domain::Value& v) const {
        if constexpr (std::is_same_v<Domain, NumericDomain>) return py::float_(v);
        else return py::str(owned_.name(v));
    }
};

// As `toysim step` starts (step_command): the run must fit; values symbolic for scalar
// programs of up to kSymbolicSessionSteps steps unless asked otherwise.
std::unique_ptr<SessionBase> open_session(const LoadedProgram& lp, const std::string& values, std::optional<std::uint64_t> max_steps) {
    return reported(&lp.source, [&]() -> std::unique_ptr<SessionBase> {
        const Program& p = *lp.program;
        check_fits_in_run(p);
        WorkEstimate work = estimate_work(p);
        SessionLimits limits;
        if (max_steps) limits.max_steps = *max_steps;
        bool symbolic = shows_symbols(values, p, work.instructions <= kSymbolicSessionSteps);
        if (!symbolic) return std::make_unique<SessionOf<NumericDomain>>(lp.program, limits);
        if (work.instructions > kSymbolicSessionSteps)
            throw ToyError(fmt::format("symbolic stepping names every value of the run, which is for runs of up to {} steps; this one "
                                       "has {}: use --values numeric, or smaller parameters",
                                       grouped(static_cast<double>(kSymbolicSessionSteps)), grouped(static_cast<double>(work.instructions))));
        return std::make_unique<SessionOf<SymbolicDomain>>(lp.program, limits);
    });
}

}  // namespace

void bind_session(py::module_& m) {
    py::class_<SessionBase>(m, "Session")
        .def(py::init(&open_session), py::arg("program"), py::arg("values"), py::arg("max_steps") = py::none())
        .def("move", &SessionBase::move, py::arg("how"), py::arg("n") = 0)
        .def("add_breakpoint", &SessionBase::add_breakpoint, py::arg("text"), py::arg("watch"))
        .def("delete_breakpoint", &SessionBase::delete_breakpoint, py::arg("number") = py::none())
        .def_property_readonly("breakpoints", &SessionBase::breakpoints)
        .def_property_readonly("position", &SessionBase::position)
        .def_property_readonly("cycle", &SessionBase::cycle)
        .def_property_readonly("end", &SessionBase::end)
        .def_property_readonly("fault", &SessionBase::fault)
        .def_property_readonly("symbolic", &SessionBase::symbolic)
        .def_property_readonly("registers", &SessionBase::registers)
        .def_property_readonly("tiles", &SessionBase::tiles)
        .def_property_readonly("counters", &SessionBase::counters)
        .def("where", &SessionBase::where)
        .def("print", &SessionBase::print, py::arg("what"))
        .def("regs_text", &SessionBase::regs_text)
        .def("mem_text", &SessionBase::mem_text, py::arg("array"), py::arg("first_row") = 0)
        .def("counters_text", &SessionBase::counters_text)
        .def("list_text", &SessionBase::list_text, py::arg("line") = py::none());
}

}  // namespace toysim::python
