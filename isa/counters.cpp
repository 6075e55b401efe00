#include "isa/counters.h"

#include <fmt/format.h>

#include "isa/isa.h"

namespace toysim {

namespace {
constexpr std::array<CounterInfo, kCounterKinds> kCounters = {{
#define X(KIND, NAME, SCOPE, JSON, LABEL, UNIT, TRAFFIC, MEANING) \
    {CounterKind::KIND, NAME, CounterScope::SCOPE, JSON, LABEL, UNIT, TRAFFIC, MEANING},
    TOYSIM_COUNTERS(X)
#undef X
}};

std::string fill(std::string_view pattern, std::string_view subject) {
    std::string out(pattern);
    if (auto at = out.find("{}"); at != std::string::npos) out.replace(at, 2, subject);
    return out;
}
}  // namespace

std::string CounterInfo::name_for(std::string_view subject) const { return fill(name, subject); }
std::string CounterInfo::label_for(std::string_view subject) const { return fill(label, subject); }
std::string CounterInfo::json_for(std::string_view subject) const { return fill(json, subject); }

const std::array<CounterInfo, kCounterKinds>& all_counters() { return kCounters; }
const CounterInfo& info(CounterKind kind) { return kCounters[static_cast<size_t>(kind)]; }

std::optional<CounterName> parse_counter_name(std::string_view counter, std::string_view argument) {
    for (const auto& row : kCounters) {
        std::string_view name = row.name;
        if (name == "{}") {  // an opcode's mnemonic is its own counter
            if (!argument.empty()) continue;
            if (auto op = find_op(counter)) return CounterName{row.kind, std::string(info(*op).mnemonic)};
            continue;
        }
        bool takes_subject = name.find("({})") != std::string_view::npos;
        if (takes_subject == argument.empty()) continue;
        if (name.substr(0, name.find('(')) != counter) continue;
        if (row.scope == CounterScope::PerOpcode) {
            auto op = find_op(argument);
            if (!op) return std::nullopt;
            return CounterName{row.kind, std::string(info(*op).mnemonic)};
        }
        return CounterName{row.kind, std::string(argument)};
    }
    return std::nullopt;
}

std::string counter_names_help() {
    std::string out;
    for (const auto& row : kCounters)
        out += (out.empty() ? "" : ", ") + (row.name == "{}" ? std::string("an opcode (LOAD)") : fmt::format("{}", row.name_for(
                    row.scope == CounterScope::PerArray ? "ARRAY" : "OPCODE")));
    return out;
}

std::string_view relation_text(Relation r) {
    switch (r) {
        case Relation::AtMost: return "<=";
        case Relation::AtLeast: return ">=";
        default: return "=";
    }
}

}  // namespace toysim
