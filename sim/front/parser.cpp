#include "sim/front/parser.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <map>

#include "sim/front/lexer.h"
#include "sim/front/token_cursor.h"
#include "support/text.h"

namespace toysim {

const std::vector<std::string_view>& statement_keywords() {
    static const std::vector<std::string_view> words = {"registers", "param", "let",    "tile", "input", "output",
                                                        "scratch",   "check", "cost",   "expect", "test",  "gpu", "for",
                                                        "workers",   "parallel", "cache", "warps", "products", "require", "devices"};
    return words;
}

const std::vector<std::string_view>& exercise_keywords() {
    static const std::vector<std::string_view> words = {"exercise", "allow", "limit", "target", "optimum"};
    return words;
}

namespace {

using namespace ast;
using front::TokenCursor;
using front::span;

// "R3" / "r12" -> 3 / 12
std::optional<int> register_number(std::string_view word) {
    if (word.size() < 2 || (word[0] != 'R' && word[0] != 'r')) return std::nullopt;
    int value = 0;
    for (char ch : word.substr(1)) {
        if (ch < '0' || ch > '9') return std::nullopt;
        if (value > 100000000) return std::nullopt;
        value = value * 10 + (ch - '0');
    }
    return value;
}


bool is_one_of(std::string_view word, const std::vector<std::string_view>& words) {
    return std::find(words.begin(), words.end(), word) != words.end();
}

class Parser : TokenCursor {
public:
    Parser(std::shared_ptr<const SourceFile> source, ParseMode mode)
        : mode_(mode), source_(std::move(source)), lexed_(without_titles(*source_, titles_)) {
        tokens_ = lex(lexed_ ? *lexed_ : *source_);
    }

    Program run() {
        Program program;
        program.source = source_;
        if (mode_ == ParseMode::Exercise) program.exercise.emplace();
        while (!at(Tok::End)) {
            if (accept_newline()) continue;
            top_statement(program);
        }
        if (program.exercise) finish_exercise(*program.exercise);
        return program;
    }

private:
    ParseMode mode_;
    std::map<int, std::pair<std::string, Loc>> titles_;  // by line: an `exercise` line's quoted title
    std::shared_ptr<const SourceFile> source_;
    std::shared_ptr<const SourceFile> lexed_;  // the source with titles blanked (null: none), which tokens point into
    int loop_depth_ = 0;  // 'for' loops open
    const Expr* devices_ = nullptr;  // `devices D`: D, which `on devices` loops up to

    std::vector<ExprPtr> subscripts() {
        std::vector<ExprPtr> subs;
        while (at_punct("[")) {
            next();
            subs.push_back(expr());
            expect_punct("]");
        }
        return subs;
    }

    // A number, "-inf" or "inf"; `where` (if given) gets its span.
    double real_literal(Loc* where = nullptr) {
        bool negative = false;
        Loc start = peek().loc;
        if (where) *where = start;
        if (at_punct("-")) {
            negative = true;
            next();
        }
        const Token& t = peek();
        if (where) *where = span(start, t.loc);
        if (t.kind == Tok::Ident && t.text == "inf") {
            next();
            return negative ? -INFINITY : INFINITY;
        }
        if (t.kind != Tok::Integer && t.kind != Tok::Real) fail(t, "a number");
        next();
        std::string text(t.text);
        char* end = nullptr;
        double v = std::strtod(text.c_str(), &end);
        if (!std::isfinite(v)) throw ToyError(span(start, t.loc), fmt::format("number {} is out of range", quoted_name(text)));
        return negative ? -v : v;
    }

    // ---- declarations ----
    void top_statement(Program& program) {
        const Token& head = peek();
        if (head.kind == Tok::Punct && head.text == "}") throw ToyError(head.loc, "unmatched '}': no 'for' loop is open here");
        if (head.kind != Tok::Ident) fail(head, "a declaration, an instruction or 'for'");
        std::string_view word = head.text;
        refuse_out_of_mode(head);
        if (program.exercise && exercise_statement(*program.exercise, program)) return;
        if (word == "registers") {
            next();
            if (program.registers) throw ToyError(head.loc, "the register file size is already declared");
            program.registers = expr();
            end_of_statement();
        } else if (word == "workers") {
            next();
            if (program.workers) throw ToyError(head.loc, "the number of workers is already declared");
            program.workers_loc = head.loc;
            program.workers = expr();
            end_of_statement();
        } else if (word == "devices") {
            next();
            if (program.devices) throw ToyError(head.loc, "the devices are already declared");
            program.devices_loc = head.loc;
            program.devices = expr();
            devices_ = program.devices.get();
            for (;;) {
                if (at_word("ring") || at_word("all")) {
                    program.ring = next().text == "ring";
                } else if (at_word("link")) {
                    next();
                    if (program.link_cycles) throw ToyError(tokens_[pos_ - 1].loc, "the link's cycles an element are already given");
                    program.link_cycles = expr();
                } else if (at_word("latency")) {
                    next();
                    if (program.link_latency) throw ToyError(tokens_[pos_ - 1].loc, "the link's latency is already given");
                    program.link_latency = expr();
                } else {
                    break;
                }
            }
            if (!at(Tok::Newline) && !at(Tok::End)) fail(peek(), "'ring', 'all', 'link C' (cycles an element), 'latency L' or the end of the line");
            end_of_statement();
        } else if (word == "warps") {
            next();
            if (program.warps) throw ToyError(head.loc, "the number of warps is already declared");
            program.warps = expr();
            end_of_statement();
        } else if (word == "products") {
            next();
            if (!program.products.empty()) throw ToyError(head.loc, "the unit products run on is already declared");
            const Token& unit = expect_ident("cuda, mma, mma_tf32 or wgmma");  // checked when bound
            program.products = std::string(unit.text);
            program.products_loc = unit.loc;
            if (peek().kind == Tok::Ident) {  // `products cuda block`: the block's patches, not a warp's rows'
                const Token& patches = next();
                program.product_patches = std::string(patches.text);
                program.product_patches_loc = patches.loc;
            }
            end_of_statement();
        } else if (word == "param" || word == "let") {
            next();
            Param p;
            p.derived = word == "let";
            const Token& name = expect_ident(p.derived ? "a name" : "a parameter name");
            p.name = std::string(name.text);
            p.loc = name.loc;
            expect_punct("=");
            p.value = expr();
            program.params.push_back(std::move(p));
            end_of_statement();
        } else if (word == "tile") {
            next();
            Tile t;
            const Token& name = declared_name("tile");
            t.name = std::string(name.text);
            t.loc = name.loc;
            t.dims = subscripts();
            if (t.dims.empty()) fail(peek(), "the tile's shape, such as [Br][d]");
            if (peek().kind == Tok::Ident && peek().text == "in") {  // where a GPU keeps it
                next();
                const Token& place = expect_ident("'registers' or 'shared'");
                if (place.text != "registers" && place.text != "shared")
                    throw ToyError(place.loc, fmt::format("a tile lives in registers or shared (memory), not {}", quoted_name(place.text)));
                t.in_registers = place.text == "registers";
            }
            if (peek().kind == Tok::Ident && peek().text == "stages") t.stages = (next(), expr());  // asynchronous copies into it
            program.tiles.push_back(std::move(t));
            end_of_statement();
        } else if (word == "input" || word == "output" || word == "scratch") {
            next();
            program.arrays.push_back(array_decl(word == "input" ? Role::Input : word == "output" ? Role::Output : Role::Scratch));
        } else if (word == "check") {
            next();
            program.checks.push_back(check_decl(head.loc));
        } else if (word == "cost") {
            next();
            const Token& mnemonic = expect_ident("an opcode");
            auto op = find_op(mnemonic.text);
            if (!op) unknown_opcode(mnemonic);
            expect_punct("=");
            program.costs.push_back(Cost{*op, expr(), mnemonic.loc});
            end_of_statement();
        } else if (word == "expect") {
            next();
            program.expects.push_back(expect_decl());
        } else if (word == "require") {
            next();
            Require r;
            r.lhs = expr();
            r.relation_loc = peek().loc;
            if (at_punct("<=") || at_punct(">=")) r.relation = next().text == "<=" ? Relation::AtMost : Relation::AtLeast;
            else expect_punct("=");
            r.rhs = expr();
            r.loc = span(head.loc, tokens_[pos_ - 1].loc);  // to its last token (an expression's span leaves out closing parentheses)
            program.requires_.push_back(std::move(r));
            end_of_statement();
        } else if (word == "gpu") {
            next();
            if (program.gpu_kernel) throw ToyError(head.loc, fmt::format("the program's GPU kernel is already declared ({}, at line {})",
                                                                         quoted_name(program.gpu_kernel->name), program.gpu_kernel->loc.line));
            const Token& name = expect_ident("a kernel name, such as fa2_forward");
            program.gpu_kernel = GpuKernel{std::string(name.text), name.loc};
            end_of_statement();
        } else if (word == "cache") {  // the rest of the line as written: the compiler's parse_cache reads it
            next();
            if (program.cache) throw ToyError(head.loc, fmt::format("the program's cache is already declared (at line {})", program.cache->keyword.line));
            if (at(Tok::Newline) || at(Tok::End)) fail(peek(), "a cache preset or settings, such as h100 or size=1KiB line=64 ways=2");
            const Token &first = peek(), *last = &first;
            while (!at(Tok::Newline) && !at(Tok::End)) last = &next();
            std::string text(first.text.data(), static_cast<size_t>(last->text.data() + last->text.size() - first.text.data()));
            program.cache = CacheDecl{text, Loc{first.loc.line, first.loc.col, static_cast<int>(text.size())}, head.loc};
            end_of_statement();
        } else if (word == "test") {
            next();
            TestCase t;
            t.loc = head.loc;
            while (at(Tok::Ident)) {
                std::string name(next().text);
                expect_punct("=");
                t.settings.emplace_back(std::move(name), expr());
                if (at_punct(",")) next();
            }
            if (t.settings.empty()) fail(peek(), "a parameter setting such as 'n = 1000'");
            program.tests.push_back(std::move(t));
            end_of_statement();
        } else {
            program.body.push_back(body_statement());
        }
    }

    // ---- what each kind of file may hold ----

    // A declaration in the wrong kind of file, refused at its first word.
    void refuse_out_of_mode(const Token& head) {
        std::string_view word = head.text;
        bool declaration = (is_one_of(word, statement_keywords()) && word != "for" && word != "parallel") || is_one_of(word, exercise_keywords());
        switch (mode_) {
            case ParseMode::Solution:
                if (declaration && word != "let" && word != "tile")
                    throw ToyError(head.loc, fmt::format("a solution may not declare {}: the exercise fixes the checks, tolerances, "
                                                         "targets and the machine",
                                                         quoted_name(word)));
                break;
            case ParseMode::Program:
                if (is_one_of(word, exercise_keywords()) ||
                    (word == "test" && peek(1).kind == Tok::Ident && (peek(1).text == "visible" || peek(1).text == "hidden")))
                    throw ToyError(head.loc, fmt::format("{} belongs in an exercise spec (exercise.toy)", quoted_name(word)));
                break;
            case ParseMode::Exercise:
                if (word == "expect")
                    throw ToyError(head.loc, "an exercise spec states its figures as targets with points: write 'target' "
                                             "instead of 'expect' (target cycles <= 25 points 1)");
                if (word == "gpu") throw ToyError(head.loc, "'gpu' belongs in an ordinary program, not in an exercise spec");
                if (word == "for" || word == "parallel" || find_op(word))
                    throw ToyError(head.loc, "an exercise spec holds no instructions: the student's solution does (solution.toy "
                                             "is the reference one)");
                if (!declaration) {
                    std::vector<std::string_view> words = statement_keywords();
                    words.insert(words.end(), exercise_keywords().begin(), exercise_keywords().end());
                    throw ToyError(head.loc, fmt::format("unknown declaration {}{}", quoted_name(word), did_you_mean(word, words)));
                }
                break;
        }
    }

    // `exercise`, `allow`, `limit`, `target`, `optimum` and `test visible|hidden`: false for any other word.
    bool exercise_statement(Exercise& ex, Program& program) {
        const Token& head = peek();
        std::string_view word = head.text;
        if (word == "exercise") {
            next();
            auto title = titles_.find(head.loc.line);
            if (title == titles_.end()) fail(peek(), "the title in double quotes: exercise \"Problem 1: c00\"");
            if (ex.loc.line) throw ToyError(head.loc, fmt::format("the exercise's title is already given (line {})", ex.loc.line));
            if (title->second.first.find_first_not_of(' ') == std::string::npos) throw ToyError(title->second.second, "the title is empty");
            ex.title = title->second.first;
            ex.loc = head.loc;
        } else if (word == "allow") {
            next();
            do {
                const Token& name = expect_ident("an opcode");
                auto op = find_op(name.text);
                if (!op) unknown_opcode(name);
                ex.allowed.emplace_back(*op, name.loc);
            } while (at_punct(",") && (next(), true));
        } else if (word == "limit") {
            next();
            if (ex.step_limit) throw ToyError(head.loc, "the step limit is already given");
            if (!at_word("steps")) fail(peek(), "'steps' (limit steps = 100*n + 1000)");
            next();
            expect_punct("=");
            ex.step_limit = expr();
        } else if (word == "target") {
            next();
            program.expects.push_back(figure());
            ex.targets.push_back(Target{points_clause(), head.loc});
        } else if (word == "optimum") {
            next();
            if (ex.optimum) throw ToyError(head.loc, fmt::format("the optimum is already asked for (line {})", ex.optimum->loc.line));
            Optimum o;
            o.loc = head.loc;
            const Token& counter = expect_ident("a counter: cycles, instructions, reads or writes");
            if (counter.text != "cycles" && counter.text != "instructions" && counter.text != "reads" && counter.text != "writes")
                throw ToyError(counter.loc, fmt::format("an optimum is of cycles, instructions, reads or writes, not {}", quoted_name(counter.text)));
            o.counter = std::string(counter.text);
            o.counter_loc = counter.loc;
            if (!at_word("over")) fail(peek(), "'over' and the space (optimum reads over Br = 4, 8, 16 Bc = 4, 8)");
            next();
            while (at(Tok::Ident) && !at_word("within") && !at_word("points")) {
                const Token& name = next();
                for (const auto& [given, values] : o.space)
                    if (given == name.text) throw ToyError(name.loc, fmt::format("{} is given twice in the space", quoted_name(name.text)));
                expect_punct("=");
                std::vector<ExprPtr> values;
                values.push_back(expr());
                while (at_punct(",")) values.push_back((next(), expr()));
                o.space.emplace_back(std::string(name.text), std::move(values));
                o.name_locs.push_back(name.loc);
            }
            if (o.space.empty()) fail(peek(), "a name and its values (Br = 4, 8, 16)");
            if (at_word("within")) {
                next();
                o.within_percent = static_cast<std::int64_t>(whole_number("a percentage (a whole number, at most 1000)", 1000));
                expect_punct("%");
            }
            o.points = points_clause();
            ex.optimum = std::move(o);
        } else if (word == "test") {
            next();
            ex.tests.push_back(exercise_test(head.loc));
            return true;  // it ends its own line
        } else {
            return false;
        }
        end_of_statement();
        return true;
    }

    // [points N]: the points of a target or a test; 1 when not given.
    std::int64_t points_clause() {
        if (!at_word("points")) return 1;
        next();
        return whole_number("points (a whole number, at most 1000000)", 1'000'000);
    }

    std::uint64_t whole_number(std::string_view what, std::uint64_t most) {
        const Token& t = peek();
        std::uint64_t value = 0;
        if (t.kind != Tok::Integer) fail(t, what);
        auto [end, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), value);
        if (ec != std::errc() || value > most) throw ToyError(t.loc, fmt::format("{} is too large: expected {}", quoted_name(t.text), what));
        next();
        return value;
    }

    ExerciseTest exercise_test(Loc loc) {
        ExerciseTest t;
        t.loc = loc;
        if (!at_word("visible") && !at_word("hidden")) fail(peek(), "'visible' or 'hidden'");
        t.hidden = next().text == "hidden";
        bool seeded = false, scored = false;
        while (at(Tok::Ident)) {
            const Token& name = next();
            auto twice = [&](bool already) {
                if (already) throw ToyError(name.loc, fmt::format("{} is given twice in this test", quoted_name(name.text)));
            };
            if (name.text == "points") {
                twice(scored);
                scored = true;
                t.points = whole_number("points (a whole number, at most 1000000)", 1'000'000);
            } else {
                expect_punct("=");
                if (name.text == "seed") {
                    twice(seeded);
                    seeded = true;
                    t.seed = whole_number("a seed (a whole number below 2^64)", UINT64_MAX);
                } else {
                    for (const auto& [set, value] : t.settings) twice(set == name.text);
                    t.settings.emplace_back(std::string(name.text), expr());
                }
            }
            if (at_punct(",")) next();
        }
        end_of_statement();
        return t;
    }

    void finish_exercise(const Exercise& ex) {
        if (!ex.loc.line) throw ToyError(Loc{1, 1, 1}, "an exercise spec needs a title: add 'exercise \"Problem 1: ...\"' at the top");
        if (ex.tests.empty())
            throw ToyError(ex.loc, "an exercise spec needs at least one test case: add 'test visible' (and 'test hidden seed = 7')");
    }

    // The name a tile or array declaration gives ("tile", "array"): never a register's name,
    // which an operand would read as the register.
    const Token& declared_name(std::string_view what) {
        const Token& name = expect_ident(fmt::format("{} {} name", what == "array" ? "an" : "a", what));
        if (register_number(name.text) || iequals(name.text, "R"))
            throw ToyError(name.loc, fmt::format("{} is a register name; choose another {} name", quoted_name(name.text), what));
        return name;
    }

    Array array_decl(Role role) {
        Array a;
        a.role = role;
        const Token& name = declared_name("array");
        a.name = std::string(name.text);
        a.loc = name.loc;
        a.dims = subscripts();
        if (at_word("split")) {
            a.split = true;
            a.split_loc = next().loc;
            if (at(Tok::Integer)) {  // split K: the dimension (from 0), at most 3
                const Token& dim = next();
                if (dim.text.size() != 1 || dim.text[0] > '3') throw ToyError(dim.loc, fmt::format("an array has at most 4 dimensions: split 0 to split 3, not split {}", dim.text));
                a.split_dim = dim.text[0] - '0';
                a.split_loc = span(a.split_loc, dim.loc);
            }
        }
        if (at_punct("=")) {
            next();
            a.fill.loc = peek().loc;
            if (at_punct("[")) {
                a.fill.kind = Fill::Kind::Literal;
                literal_values(a.fill.values, 1);
            } else if (at_word("random")) {
                next();
                a.fill.kind = Fill::Kind::Random;
                expect_punct("(");
                if (!at_punct(")")) {
                    const Token& seed = peek();
                    if (seed.kind != Tok::Integer) fail(seed, "a seed (a non-negative integer)");
                    next();
                    auto [end, ec] = std::from_chars(seed.text.data(), seed.text.data() + seed.text.size(), a.fill.seed);
                    if (ec != std::errc()) throw ToyError(seed.loc, fmt::format("seed {} is too large (at most 2^64 − 1)", quoted_name(seed.text)));
                    if (at_punct(",")) {
                        next();
                        a.fill.lo = real_literal(&a.fill.lo_loc);
                        expect_punct(",");
                        a.fill.hi = real_literal(&a.fill.hi_loc);
                        if (!(a.fill.lo < a.fill.hi))
                            throw ToyError(a.fill.loc, "random(seed, lo, hi) needs lo < hi");
                    }
                }
                expect_punct(")");
            } else if (at(Tok::Ident) && peek(1).kind == Tok::Punct && peek(1).text == "(") {
                a.fill.kind = Fill::Kind::Reference;
                a.fill.function = std::string(next().text);
                a.fill.args = call_arguments();
            } else if (peek().kind == Tok::Integer || peek().kind == Tok::Real || at_punct("-") || at_word("inf")) {
                // "= 0", "= -inf": every element starts with this value, as FlashAttention-1
                // initializes O, m and ℓ in HBM.
                a.fill.kind = Fill::Kind::Constant;
                a.fill.values = {real_literal()};
            } else {
                fail(peek(), "'[' values ']', 'random(seed)', a number or a reference function such as attention(Q, K, V)");
            }
            if (role != Role::Input && a.fill.kind != Fill::Kind::Constant)
                throw ToyError(a.fill.loc, "only input arrays take initial values; an output or scratch array may start as one number (= 0)");
        }
        end_of_statement();
        return a;
    }

    // [v, v, ...] or nested lists, `depth` levels deep (refused past kMaxExprDepth).
    void literal_values(std::vector<double>& out, int depth) {
        if (depth > kMaxExprDepth)
            throw ToyError(peek().loc, fmt::format("values nest deeper than {} levels", kMaxExprDepth));
        expect_punct("[");
        if (at_punct("]")) fail(peek(), "a number");
        for (;;) {
            if (at_punct("["))
                literal_values(out, depth + 1);
            else
                out.push_back(real_literal());
            if (at_punct(",")) {
                next();
                continue;
            }
            expect_punct("]");
            return;
        }
    }

    // "(a, b)": array names, as a reference function takes them.
    std::vector<std::pair<std::string, Loc>> call_arguments() {
        std::vector<std::pair<std::string, Loc>> args;
        expect_punct("(");
        while (!at_punct(")")) {
            const Token& arg = expect_ident("an array name");
            args.emplace_back(std::string(arg.text), arg.loc);
            if (!at_punct(")")) expect_punct(",");
        }
        next();
        return args;
    }

    Check check_decl(Loc loc) {
        Check c;
        c.loc = loc;
        const Token& target = expect_ident("the output array to check");
        c.target = std::string(target.text);
        c.target_loc = target.loc;
        c.target_index = subscripts();
        expect_punct("=");
        const Token& fn = expect_ident("a reference function such as matmul or softmax");
        c.function = std::string(fn.text);
        c.function_loc = fn.loc;
        c.args = call_arguments();
        c.reference_index = subscripts();
        if (at_word("within")) {
            next();
            c.tolerance = real_literal(&c.tolerance_loc);
        }
        end_of_statement();
        return c;
    }

    Expect expect_decl() {
        Expect e = figure();
        end_of_statement();
        return e;
    }

    // COUNTER REL EXPR, as `expect` and `target` write it.
    Expect figure() {
        Expect e;
        const Token& counter = expect_ident("a counter (cycles, instructions, reads, writes, registers or an opcode)");
        e.counter = std::string(counter.text);
        e.loc = counter.loc;
        if (at_punct("(")) {
            next();
            const Token& array = expect_ident("an array name");
            e.array = std::string(array.text);
            e.array_loc = array.loc;
            const Token& close = expect_punct(")");
            e.loc = span(counter.loc, close.loc);
        }
        if (at_punct("<=") || at_punct(">=")) e.relation = next().text == "<=" ? Relation::AtMost : Relation::AtLeast;
        else expect_punct("=");
        e.value = expr();
        return e;
    }

    // ---- the program body ----
    Statement body_statement() {
        const Token& head = peek();
        if (head.kind != Tok::Ident) fail(head, "an instruction or 'for'");
        if (head.text == "for" || head.text == "parallel") return loop();
        if (head.text == "on" && peek(1).kind == Tok::Ident && peek(1).text == "devices") return loop();
        auto op = find_op(head.text);
        if (!op) {
            refuse_out_of_mode(head);
            for (auto kw : statement_keywords())
                if (kw == head.text)
                    throw ToyError(head.loc, fmt::format("{} declarations belong at the top level, not inside a loop", quoted_name(kw)));
            unknown_opcode(head);
        }
        next();
        Instruction in;
        in.op = *op;
        in.loc = head.loc;
        if (!at(Tok::Newline) && !at(Tok::End)) {
            for (;;) {
                in.operands.push_back(operand());
                if (at_punct(",")) {
                    next();
                    continue;
                }
                if (!at(Tok::Newline) && !at(Tok::End)) fail(peek(), "',' between operands or the end of the line");
                break;
            }
        }
        end_of_statement();
        return in;
    }

    [[noreturn]] void unknown_opcode(const Token& t) {
        std::vector<std::string_view> words;
        for (const auto& row : all_ops()) words.push_back(row.mnemonic);
        for (auto kw : statement_keywords()) words.push_back(kw);
        throw ToyError(t.loc, fmt::format("unknown opcode {}{}", quoted_name(t.text), did_you_mean(t.text, words)));
    }

    Operand operand() {
        const Token& t = peek();
        Operand o;
        o.loc = t.loc;
        if (t.kind == Tok::Integer || t.kind == Tok::Real || at_punct("-") || (t.kind == Tok::Ident && t.text == "inf")) {
            o.kind = Operand::Kind::Immediate;
            o.immediate = real_literal();
            o.loc = span(t.loc, tokens_[pos_ - 1].loc);
            return o;
        }
        if (at_punct("@")) {  // @expr: a device (SEND, RECV)
            next();
            o.kind = Operand::Kind::Device;
            o.reg_index = expr();
            o.loc = span(t.loc, tokens_[pos_ - 1].loc);
            return o;
        }
        if (t.kind != Tok::Ident) fail(t, "a register or a DRAM element");
        next();
        if (auto r = register_number(t.text)) {
            o.kind = Operand::Kind::Register;
            o.reg = *r;
            return o;
        }
        if (iequals(t.text, "R") && at_punct("[")) {
            next();
            o.kind = Operand::Kind::IndexedRegister;
            o.reg_index = expr();
            const Token& close = expect_punct("]");
            o.loc = span(t.loc, close.loc);
            return o;
        }
        o.kind = Operand::Kind::Memory;
        o.array = std::string(t.text);
        o.array_loc = t.loc;
        while (at_punct("[")) {
            next();
            o.subscripts.push_back(expr());
            ExprPtr end;
            if (at_punct("..")) {  // a range lo..hi: a tile slice
                next();
                end = expr();
            }
            o.subscript_ends.push_back(std::move(end));
            expect_punct("]");
        }
        if (o.subscripts.empty() && at_punct(".")) {  // tile.T: the transposed tile
            next();
            const Token& t2 = peek();
            if (!(t2.kind == Tok::Ident && t2.text == "T")) fail(t2, "'T' (tile.T is the transposed tile)");
            next();
            o.transposed = true;
        }
        if (pos_ > 0 && tokens_[pos_ - 1].loc.col != t.loc.col) o.loc = span(t.loc, tokens_[pos_ - 1].loc);
        return o;
    }

    std::unique_ptr<Loop> loop() {
        auto l = std::make_unique<Loop>();
        if (at_word("on")) {  // on devices r { ... }: a parallel loop over 0..D
            l->parallel = l->devices = true;
            l->parallel_loc = l->loc = next().loc;
            next();  // 'devices'
            l->lo = std::make_unique<Expr>();
            l->lo->loc = l->loc;
            if (devices_) l->hi = clone(*devices_);  // else null: an exercise's solution, whose spec says D
        } else if (at_word("parallel")) {
            l->parallel = true;
            l->parallel_loc = next().loc;
            if (!at_word("for")) fail(peek(), "'for' ('parallel' marks a loop: parallel for i in 0..n { ... })");
        }
        if (!l->devices) l->loc = next().loc;  // 'for'
        // Checked here, before the body is parsed (recursively): any depth ends in this error.
        if (loop_depth_ >= kMaxLoopDepth) throw ToyError(l->loc, fmt::format("loops may nest at most {} deep", kMaxLoopDepth));
        struct Open {
            int& depth;
            explicit Open(int& d) : depth(d) { ++depth; }
            ~Open() { --depth; }
        } open(loop_depth_);
        const Token& var = expect_ident("a loop variable");
        l->var = std::string(var.text);
        l->var_loc = var.loc;
        if (!l->devices) {
            if (!at_word("in")) fail(peek(), "'in'");
            next();
            l->lo = expr();
            expect_punct("..");
            l->hi = expr();
        }
        expect_punct("{");
        end_of_statement();
        for (;;) {
            if (accept_newline()) continue;
            if (at(Tok::End))
                throw ToyError(l->loc, l->devices ? "this 'on devices' block is never closed: expected '}'" : "this 'for' loop is never closed: expected '}'");
            if (at_punct("}")) {
                next();
                end_of_statement();
                return l;
            }
            l->body.push_back(body_statement());
        }
    }
};

}  // namespace

ast::Program parse(std::shared_ptr<const SourceFile> source, ParseMode mode) { return Parser(std::move(source), mode).run(); }

}  // namespace toysim
