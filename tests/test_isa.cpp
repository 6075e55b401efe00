// The ISA table: every opcode of the seed, with its operand signature and cycle cost.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "isa/isa.h"
#include "isa/primitives.h"

using namespace toysim;

namespace {

struct Expected {
    const char* mnemonic;
    const char* signature;
    OpClass klass;
};

// The seed's two instruction tables (matmul machine, softmax machine), destination last.
// All of them cost 1 cycle: the matmul table says so, and the softmax table gives no other cost.
const Expected kSeedOps[] = {
    {"LOAD", "mR", OpClass::Memory},     // LOAD src, Rd
    {"STORE", "rM", OpClass::Memory},    // STORE Rs, dst
    {"MOV", "rR", OpClass::Move},        // MOV Rs, Rd
    {"MAC_Z", "rrR", OpClass::Compute},  // MAC_Z R0, R1, Rd
    {"MAC", "rrrR", OpClass::Compute},   // MAC R0, R1, Ra, Rd
    {"MAX", "rrR", OpClass::Compute},    // MAX Ra, Rb, Rd
    {"SUB", "rrR", OpClass::Compute},    // SUB Ra, Rb, Rd
    {"ADD", "rrR", OpClass::Compute},    // ADD Ra, Rb, Rd
    {"MUL", "rrR", OpClass::Compute},    // MUL Ra, Rb, Rd
    {"DIV", "rrR", OpClass::Compute},    // DIV Ra, Rb, Rd
    {"EXP", "rR", OpClass::Compute},     // EXP Ra, Rd
};

}  // namespace

TEST_CASE("every opcode of the seed is in the table with its signature and cost 1", "[isa]") {
    for (const auto& e : kSeedOps) {
        INFO(e.mnemonic);
        auto op = find_op(e.mnemonic);
        REQUIRE(op.has_value());
        const OpInfo& row = info(*op);
        CHECK(row.op == *op);
        CHECK(row.mnemonic == e.mnemonic);
        CHECK(row.signature == e.signature);
        CHECK(row.cycles == 1);
        CHECK(row.klass == e.klass);
        CHECK(row.operand_count() == static_cast<int>(std::string(e.signature).size()));
    }
}

TEST_CASE("table rows are indexed by their opcode and mnemonics are unique", "[isa]") {
    std::set<std::string> names;
    for (size_t i = 0; i < all_ops().size(); ++i) {
        const OpInfo& row = all_ops()[i];
        CHECK(static_cast<size_t>(row.op) == i);
        CHECK(&info(row.op) == &row);
        names.insert(std::string(row.mnemonic));
    }
    CHECK(names.size() == all_ops().size());
}

TEST_CASE("operand kinds and register source counts follow the signature", "[isa]") {
    const OpInfo& load = info(Op::LOAD);
    CHECK(load.operand(0) == OperandKind::MemRead);
    CHECK(load.operand(1) == OperandKind::RegWrite);
    CHECK(load.register_sources() == 0);

    const OpInfo& store = info(Op::STORE);
    CHECK(store.operand(0) == OperandKind::RegRead);
    CHECK(store.operand(1) == OperandKind::MemWrite);
    CHECK(store.register_sources() == 1);

    const OpInfo& mac = info(Op::MAC);
    CHECK(mac.operand_count() == 4);
    CHECK(mac.operand(0) == OperandKind::RegRead);
    CHECK(mac.operand(1) == OperandKind::RegRead);
    CHECK(mac.operand(2) == OperandKind::RegRead);
    CHECK(mac.operand(3) == OperandKind::RegWrite);
    CHECK(mac.register_sources() == 3);

    CHECK(info(Op::MAC_Z).register_sources() == 2);
    CHECK(info(Op::EXP).register_sources() == 1);
    CHECK(info(Op::MOV).register_sources() == 1);
    CHECK(info(Op::DIV).register_sources() == 2);
}

TEST_CASE("find_op is case-insensitive and rejects unknown words", "[isa]") {
    CHECK(find_op("LOAD") == Op::LOAD);
    CHECK(find_op("load") == Op::LOAD);
    CHECK(find_op("LoAd") == Op::LOAD);
    CHECK(find_op("mac_z") == Op::MAC_Z);
    CHECK(find_op("Mac") == Op::MAC);
    CHECK(find_op("exp") == Op::EXP);
    CHECK(find_op("div") == Op::DIV);
    CHECK_FALSE(find_op("MACZ").has_value());
    CHECK_FALSE(find_op("LOADS").has_value());
    CHECK_FALSE(find_op("").has_value());
    CHECK_FALSE(find_op("FMA").has_value());
}

TEST_CASE("nearest_mnemonic suggests a close opcode and nothing for a far word", "[isa]") {
    auto mak = nearest_mnemonic("MAK");
    REQUIRE(mak.has_value());
    CHECK(*mak == "MAC");

    auto lod = nearest_mnemonic("LOD");
    REQUIRE(lod.has_value());
    CHECK(*lod == "LOAD");

    auto store = nearest_mnemonic("stor");
    REQUIRE(store.has_value());
    CHECK(*store == "STORE");

    CHECK_FALSE(nearest_mnemonic("BANANA").has_value());
    CHECK_FALSE(nearest_mnemonic("QQQ").has_value());
    CHECK_FALSE(nearest_mnemonic("softmax").has_value());
}

// A swap of two adjacent letters is the commonest typo; "did you mean" should catch it.
TEST_CASE("nearest_mnemonic suggests LOAD for the transposition LAOD", "[isa]") {
    auto laod = nearest_mnemonic("LAOD");
    REQUIRE(laod.has_value());
    CHECK(*laod == "LOAD");
    auto stroe = nearest_mnemonic("STROE");
    REQUIRE(stroe.has_value());
    CHECK(*stroe == "STORE");
}

TEST_CASE("each row's shape and unit of work agree with its signature", "[isa]") {
    for (const auto& row : all_ops()) {
        INFO(row.mnemonic);
        bool memory = row.signature.find_first_of("mM") != std::string_view::npos;
        CHECK((row.shape == OpShape::Memory) == memory);
        CHECK((row.klass == OpClass::Memory) == memory);
        CHECK(!row.unit.empty());
        if (row.shape == OpShape::Product) CHECK(row.unit == "multiply-add");
        if (row.shape == OpShape::RowReduce) CHECK(row.register_sources() == 1);
        if (row.shape == OpShape::Fill) CHECK(row.signature.front() == 'i');
        CHECK(row.register_sources() <= kMaxRegisterOperands - 1);
    }
}

TEST_CASE("the primitives table: arity, numeric value and NaN through max", "[isa]") {
    for (const auto& p : kPrimitives) {
        INFO(p.name);
        CHECK((p.arity == 1 || p.arity == 2));
        CHECK(p.prefix >= 'a');
    }
    CHECK(evaluate(Primitive::Sub, 5, 3) == 2);
    CHECK(evaluate(Primitive::Log, 1) == 0);
    CHECK(std::isnan(evaluate(Primitive::Max, NAN, 1)));
    CHECK(std::isnan(evaluate(Primitive::Max, 1, NAN)));
}
