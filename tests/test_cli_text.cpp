// The text helpers the messages rely on: bounded "did you mean", names quoted short and
// escaped, and the progress line of long runs.
#include <catch2/catch.hpp>

#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include "sim/cli/progress.h"
#include "support/text.h"
#include "support.h"

using namespace toysim;
using namespace toysim::testing;

TEST_CASE("cli text: nearest still finds typos", "[cli]") {
    CHECK(nearest("LAOD", {"LOAD", "STORE"}) == std::optional<std::string_view>("LOAD"));
    CHECK(nearest("mac", {"MAX", "MAC"}) == std::optional<std::string_view>("MAC"));
    CHECK(nearest("nn", {"n", "b"}) == std::optional<std::string_view>("n"));
    CHECK_FALSE(nearest("frobnicate", {"run", "trace", "sweep", "cost", "compare"}));
    CHECK(did_you_mean("rnu", {"run", "trace"}) == "; did you mean 'run'?");
    // The first of equally close candidates, as before.
    CHECK(nearest("ab", {"ax", "ay"}) == std::optional<std::string_view>("ax"));
    // A candidate whose length is too far off is not compared at all.
    CHECK_FALSE(nearest("abcdefghi", {"abcdefghijklmn"}));
    CHECK(nearest("abcdefghi", {"abcdefghijkl"}) == std::optional<std::string_view>("abcdefghijkl"));
}

TEST_CASE("cli text: nearest does bounded work on huge names", "[cli]") {
    const std::string a(20000, 'a'), b(20000, 'b'), a2 = std::string(19999, 'a') + "b";
    auto start = std::chrono::steady_clock::now();
    CHECK_FALSE(nearest(a, {b}));
    CHECK_FALSE(nearest(a, {a2}));  // one edit away, but past the compared length
    CHECK_FALSE(nearest("n", {b}));
    CHECK(did_you_mean(a, {a2, b}).empty());
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(500));
    const std::string longest(kMaxSuggestLength, 'x');
    CHECK(nearest(longest, {longest}) == std::optional<std::string_view>(longest));
    const std::string too_long(kMaxSuggestLength + 1, 'x');
    CHECK_FALSE(nearest(too_long, {too_long}));
}

TEST_CASE("cli text: quoted_name shortens and escapes", "[cli]") {
    CHECK(quoted_name("n") == "'n'");
    CHECK(quoted_name("") == "''");
    CHECK(quoted_name(std::string(40, 'a')) == "'" + std::string(40, 'a') + "'");
    CHECK(quoted_name(std::string(20000, 'a')) == "'" + std::string(40, 'a') + "…' (20000 characters)");
    // Characters, not bytes: "×" is one.
    std::string times;
    for (int i = 0; i < 50; ++i) times += "×";
    std::string forty;
    for (int i = 0; i < 40; ++i) forty += "×";
    CHECK(quoted_name(times) == "'" + forty + "…' (50 characters)");
    CHECK(quoted_name("a\x01z") == "'a\\x01z'");
    CHECK(quoted_name("\xEF\xBB\xBFx") == "'U+FEFFx'");
}

TEST_CASE("cli text: escape_invisible spells out what a terminal would hide", "[cli]") {
    CHECK(escape_invisible("plain ascii") == "plain ascii");
    CHECK(escape_invisible("a×b·c −d e^(x − m) ⌈n/Br⌉ ≈ …") == "a×b·c −d e^(x − m) ⌈n/Br⌉ ≈ …");
    CHECK(escape_invisible(std::string("a\0b", 3)) == "a\\x00b");
    CHECK(escape_invisible("tab\there") == "tab\\x09here");
    CHECK(escape_invisible("line\nbreak") == "line\nbreak");
    CHECK(escape_invisible("\x7f") == "\\x7F");
    CHECK(escape_invisible("\xEF\xBB\xBF") == "U+FEFF");
    CHECK(escape_invisible("zero\xE2\x80\x8Bwidth") == "zeroU+200Bwidth");
    CHECK(escape_invisible("rtl\xE2\x80\xAEmark") == "rtlU+202Emark");
    CHECK(escape_invisible("nb\xC2\xA0sp") == "nbU+00A0sp");
    CHECK(escape_invisible("\xff\xfe") == "\\xFF\\xFE");           // not UTF-8
    CHECK(escape_invisible("\xC0\xAF") == "\\xC0\\xAF");           // overlong
    CHECK(escape_invisible("\xED\xA0\x80") == "\\xED\\xA0\\x80");  // a surrogate
    CHECK(escape_invisible("cut\xE2\x80") == "cut\\xE2\\x80");     // truncated
    CHECK(escape_invisible("\xF0\x9F\x98\x80") == "\xF0\x9F\x98\x80");  // an emoji is printable
}

TEST_CASE("cli text: the progress line appears late, and is erased", "[cli]") {
    SECTION("on a terminal, after the delay") {
        std::ostringstream err;
        {
            cli::Progress p(err, true, "run", 0, std::chrono::milliseconds(0));
            p.update(16'777'216);
            CHECK(p.shown());
            CHECK(err.str() == "\rtoysim: run: 16,777,216 instructions in 0 s");
        }
        std::string line = "toysim: run: 16,777,216 instructions in 0 s";
        CHECK(err.str() == "\r" + line + "\r" + std::string(line.size(), ' ') + "\r");
    }
    SECTION("with the run's instructions, how far it is") {
        std::ostringstream err;
        {
            cli::Progress p(err, true, "n=8 (2 of 3)", 67'108'864, std::chrono::milliseconds(0));
            p.update(16'777'216);
        }
        std::string line = "toysim: n=8 (2 of 3): 16,777,216 of 67,108,864 instructions (25%) in 0 s";
        CHECK(err.str() == "\r" + line + "\r" + std::string(line.size(), ' ') + "\r");
    }
    SECTION("not before the delay") {
        std::ostringstream err;
        {
            cli::Progress p(err, true, "run", 0, std::chrono::hours(1));
            p.update(1);
            CHECK_FALSE(p.shown());
        }
        CHECK(err.str().empty());
    }
    SECTION("never when stderr is not a terminal") {
        std::ostringstream err;
        {
            cli::Progress p(err, false, "run", 0, std::chrono::milliseconds(0));
            p.update(1);
        }
        CHECK(err.str().empty());
    }
}
