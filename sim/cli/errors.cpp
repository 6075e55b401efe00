// How the command line words errors: the core's message plus the flag that changes it, and
// the last line of defense for exceptions that are not bad input.
#include <fmt/format.h>
#include <new>
#include <stdexcept>

#include "sim/cli/app.h"
#include "sim/cli/common.h"
#include "support/text.h"

namespace toysim::cli {

// The wording moved down to support/ (with_cli_hint) so the Python module reports the same
// messages; the CLI's name for it stays.
ToyError with_hint(const ToyError& error) { return with_cli_hint(error); }

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
