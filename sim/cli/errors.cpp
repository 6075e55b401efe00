// How the command line words errors: the core's message plus the flag that changes it, and
// the last line of defense for exceptions that are not bad input.
#include <fmt/format.h>
#include <new>
#include <stdexcept>
#include <string_view>

#include "sim/cli/app.h"
#include "sim/cli/common.h"
#include "sim/support/text.h"

namespace toysim::cli {

namespace {

bool ends_with(std::string_view text, std::string_view suffix) {
    return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

ToyError with_hint(const ToyError& error) {
    std::string message = error.what();
    // Idempotent: an error that already carries a hint (one hinted twice on its way out) gets it once.
    auto add = [&](std::string_view hint) {
        if (!ends_with(message, hint)) message += hint;
    };
    switch (error.kind()) {
        case ErrorKind::StepLimit: add("; raise it with --max-steps"); break;
        case ErrorKind::TooLargeToRun: add("; `toysim cost` counts it without running"); break;
        case ErrorKind::TooLongToRun: add("; run it anyway with --force, or see `toysim cost`"); break;
        case ErrorKind::Setting:
            if (message.rfind("--set ", 0) != 0) message = fmt::format("--set {}: {}", flag_subject(error.subject()), message);
            break;
        case ErrorKind::Input: break;
    }
    return ToyError(error.kind(), error.loc(), std::move(message), error.subject());
}

int guard_internal_errors(const std::function<int()>& body, std::ostream& err) {
    try {
        return body();
    } catch (const ToyError& e) {  // cli::main reports these itself; here only as a safety net
        err << format_error(with_hint(e), nullptr, "toysim") << std::flush;
        return kBadInput;
    } catch (const std::bad_alloc&) {
        err << "toysim: error: out of memory: this needs more memory than the machine has\n" << std::flush;
        return kBadInput;
    } catch (const std::exception& e) {
        err << "toysim: internal error: " << escape_invisible(e.what()) << "\n" << std::flush;
        return kInternalError;
    } catch (...) {
        err << "toysim: internal error: an exception that is not a std::exception\n" << std::flush;
        return kInternalError;
    }
}

}  // namespace toysim::cli
