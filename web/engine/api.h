// What the engine's API files share (web/engine/): the reply every function answers with, the
// guard that turns any exception into a reply, and the program loader.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "sim/lower/program.h"
#include "support/diag.h"

namespace toysim::web {

// What the CLI would print and exit with (documented in api.cpp).
struct Reply {
    std::string out, err;
    int code = 0;
    std::optional<Loc> loc;  // the error's place in the request's program
    std::string json() const;
    // Reports bad input as the CLI does (format_error of with_cli_hint), located in `where`.
    void fail(const ToyError& error, const SourceFile* where);
};

// The source an error is located in, as the request goes along (the CLI's Context::source).
using Where = std::shared_ptr<const SourceFile>;

// Parses the request and runs `body`, which returns the exit code; any exception becomes the
// reply's error, so nothing leaves the engine as a throw.
std::string answer(const std::string& request_text,
                   const std::function<int(const nlohmann::ordered_json&, Reply&, Where&)>& body);
// The request's program ("path", "text") compiled at its "sets".
Program load(const nlohmann::ordered_json& request, Where& where);

// side_by_side.cpp: `toysim compare` and `toysim sweep`.
int compare_request(const nlohmann::ordered_json& request, Reply& reply, Where& where);
int sweep_request(const nlohmann::ordered_json& request, Reply& reply, Where& where);
// session.cpp: the stepper, as a class of the module (Session).
void bind_session();

}  // namespace toysim::web
