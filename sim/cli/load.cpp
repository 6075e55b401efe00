// The one program loader of every subcommand: read (a file, or standard input for "-"), parse,
// compile; the source stays in the Context so an error can show its line and caret.
#include <fmt/format.h>

#include "gpu/kernels/kernels.h"
#include "sim/app/cost.h"
#include "sim/cli/common.h"
#include "sim/front/parser.h"
#include "support/text.h"

namespace toysim::cli {

Parsed parse_program(const std::string& path, Context& ctx) {
    ctx.source.reset();  // an error reading this file is not about the one before it
    std::shared_ptr<const SourceFile> source;
    if (path == "-") {
        if (ctx.stdin_read) throw ToyError("'-' (standard input) can be given only once");
        ctx.stdin_read = true;
        source = SourceFile::read_stream(ctx.in, "<stdin>");
    } else {
        source = SourceFile::read(path);
        // The path is printed in tables and JSON: spelt out if it holds bytes that are not
        // UTF-8 or invisible characters (JSON cannot hold a stray byte at all).
        std::string shown = escape_invisible(path);
        if (shown != path) source = std::make_shared<const SourceFile>(shown, source->text);
    }
    ctx.source = source;
    Parsed p{source, std::make_shared<const ast::Program>(parse(source))};
    return p;
}

Program compile_program(const Parsed& parsed, const ParamSettings& settings, Context& ctx) {
    ctx.source = parsed.source;
    return compile(parsed.tree, settings);
}

Program load_program(const std::string& path, const ParamSettings& settings, Context& ctx) {
    Parsed parsed = parse_program(path, ctx);
    return compile_program(parsed, settings, ctx);
}

void apply_cache_options(Program& program, const CacheArgs& o) {
    if (!o.cache.empty()) {
        refuse_devices(program, "--cache");
        program.cache = make_program_cache(o.cache, Loc{}, fmt::format("--cache {}: ", flag_subject(o.cache)));
    }
    if (!o.dtype_given) return;
    if (!program.cache)
        throw ToyError(fmt::format("--dtype {}: the element size is what the modeled cache sees; give a cache too (--cache h100, or "
                                   "a `cache` line in the program)",
                                   flag_subject(o.dtype)));
    program.cache->element_bytes = gpu::dtype_bytes(*gpu::parse_dtype(o.dtype));
}

void apply_cache_and_machine(Program& program, const CacheArgs& options, const std::string& machine) {
    CacheArgs cache = options;
    if (!machine.empty() && cache.cache.empty() && !program.cache) cache.cache = std::string(app::named_machine(machine, app::Spelling::cli()).name);
    apply_cache_options(program, cache);
}

std::string short_program_name(const std::string& path) {
    if (path == "-") return "<stdin>";
    std::string name = escape_invisible(path.substr(path.find_last_of('/') + 1));
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".toy") == 0) name.resize(name.size() - 4);
    return name;
}

}  // namespace toysim::cli
