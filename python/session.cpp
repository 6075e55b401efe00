// toysim.Session's compiled part: the stepper's engine (sim/step/session.h), set up as
// `toysim step` sets it up (sim/cli/step_command.cpp), and its displays (sim/print/step_report.h).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <fmt/format.h>
#include <optional>

#include "python/module.h"
#include "sim/app/session.h"
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
    virtual std::string workers_text() const = 0;
};

template <class Domain>
class SessionOf final : public SessionBase, app::HeldSession<Domain> {
public:
    // Set up as `toysim step` sets a session up (app::OwnedSession).
    SessionOf(std::shared_ptr<const Program> program, SessionLimits limits) : app::HeldSession<Domain>(std::move(program), limits) {
        // Ctrl-C stops a long move (continue over millions of steps) as it does at a terminal.
        this->session_.interrupted = [] { return PyErr_CheckSignals() != 0; };
    }

    py::dict move(const std::string& how, std::uint64_t n) override {
        Stop stop = in_session([&] {
            if (how == "forward") return this->session_.forward(n);
            if (how == "backward") return this->session_.backward(n);
            if (how == "goto") return this->session_.go_to(n);
            if (how == "continue") return this->session_.run_forward();
            return this->session_.run_backward();
        });
        if (stop.reason == Stop::Reason::Interrupted && PyErr_Occurred()) throw py::error_already_set();
        py::dict out;
        out["reason"] = stop_reason_name(stop.reason);
        out["breakpoint"] = stop.reason == Stop::Reason::Breakpoint
                                ? py::object(py::int_(this->session_.breakpoints()[static_cast<size_t>(stop.breakpoint)].number))
                                : py::object(py::none());
        out["step"] = this->session_.position();
        out["text"] = format_stop(this->session_, stop, this->style_);
        return out;
    }

    int add_breakpoint(const std::string& text, bool watch) override {
        return in_session([&] { return this->session_.add_breakpoint(parse_breakpoint(this->owned_.program(), text, watch)); });
    }

    void delete_breakpoint(std::optional<int> number) override {
        if (!number) return this->session_.breakpoints().clear();
        if (!this->session_.delete_breakpoint(*number)) throw LocatedError(fmt::format("error: no breakpoint {}", *number));
    }

    py::list breakpoints() const override {
        py::list out;
        for (const auto& bp : this->session_.breakpoints()) {
            py::dict d;
            d["number"] = bp.number;
            d["text"] = bp.text;
            d["hits"] = bp.hits;
            out.append(d);
        }
        return out;
    }

    std::uint64_t position() const override { return this->session_.position(); }
    std::uint64_t cycle() const override { return this->session_.cycle(); }
    std::optional<std::uint64_t> end() const override { return this->session_.end(); }
    std::optional<std::string> fault() const override {
        if (!this->session_.fault()) return std::nullopt;
        std::string text = format_error(*this->session_.fault(), this->owned_.program().source.get(), "toysim");
        if (!text.empty() && text.back() == '\n') text.pop_back();
        return text;
    }
    bool symbolic() const override { return std::is_same_v<Domain, SymbolicDomain>; }

    // The scalar registers written so far: R3 -> its value (a number, or the trace's name for it).
    py::dict registers() const override {
        py::dict out;
        const auto& st = this->session_.state();
        for (int r = 0; r < this->owned_.program().scalar_registers; ++r)
            if (st.written[static_cast<size_t>(r)]) out[py::str(fmt::format("R{}", r))] = value(st.regs[static_cast<size_t>(r)]);
        return out;
    }

    // Each tile written so far, at its current shape: a NumPy array (numeric) or rows of names.
    py::dict tiles() const override {
        py::dict out;
        const auto& st = this->session_.state();
        for (size_t k = 0; k < this->owned_.program().tiles.size(); ++k) {
            const Tile& t = this->owned_.program().tiles[k];
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
        Counters c = this->session_.counters();
        return flat_counters(this->owned_.program(), c, counters_json(this->owned_.program(), c)).dump();
    }

    std::string where() const override { return format_stop(this->session_, Stop{}, this->style_); }
    std::string print(const std::string& what) const override { return in_session([&] { return format_print(this->session_, what, this->style_); }); }
    std::string regs_text() const override { return format_registers(this->session_, this->style_); }
    std::string mem_text(const std::string& array, std::int64_t first_row) const override {
        return in_session([&] { return format_memory(this->session_, array, first_row, this->style_); });
    }
    std::string counters_text() const override { return format_session_counters(this->session_); }
    std::string list_text(std::optional<int> line) const override { return format_listing(this->session_, line); }
    std::string workers_text() const override { return format_workers(this->session_); }

private:
    py::object value(const typename Domain::Value& v) const {
        if constexpr (std::is_same_v<Domain, NumericDomain>) return py::float_(v);
        else return py::str(this->owned_.name(v));
    }
};

// As `toysim step` starts (app::plan_session).
std::unique_ptr<SessionBase> open_session(const LoadedProgram& lp, const std::string& values, std::optional<std::uint64_t> max_steps) {
    return reported(&lp.source, [&] {
        const app::SessionPlan plan = app::plan_session(*lp.program, {values, max_steps.value_or(0)}, kSpelling);
        return app::open_session<SessionOf, SessionBase>(lp.program, plan);
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
        .def("list_text", &SessionBase::list_text, py::arg("line") = py::none())
        .def("workers_text", &SessionBase::workers_text);
}

}  // namespace toysim::python
