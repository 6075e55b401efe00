#include "sim/print/gpu_report.h"

#include "gpu/codegen/codegen.h"
#include "sim/print/format.h"

#include <cmath>
#include <fmt/format.h>

namespace toysim {

namespace {

nlohmann::ordered_json dtype_names(const gpu::KernelSpec& k) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (gpu::DType t : k.dtypes) out.push_back(std::string(gpu::dtype_name(t)));
    return out;
}

using json = nlohmann::ordered_json;

std::string version_text(int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); }

std::string bytes_text(double bytes) {
    if (bytes >= 1e9) return fmt::format("{:.2f} GB", bytes / 1e9);
    if (bytes >= 1e6) return fmt::format("{:.2f} MB", bytes / 1e6);
    if (bytes >= 1e3) return fmt::format("{:.2f} kB", bytes / 1e3);
    return fmt::format("{} B", bytes);
}

std::string ms_text(double ms) { return fmt::format("{:.4g} ms", ms); }

json timing_json(const gpu::Timing& t) {
    return json{{"median", t.median()}, {"min", t.min()}, {"max", t.max()}, {"repeats", t.ms.size()}};
}

json device_json(const gpu::DeviceInfo& d) {
    return json{{"name", d.name},
                {"compute_capability", fmt::format("{}.{}", d.compute_major, d.compute_minor)},
                {"sm_count", d.sm_count},
                {"l2_bytes", d.l2_bytes},
                {"global_memory_bytes", d.global_memory_bytes},
                {"shared_memory_per_block", d.shared_memory_per_block},
                {"sm_clock_mhz", d.sm_clock_mhz},
                {"memory_clock_mhz", d.memory_clock_mhz},
                {"memory_bus_bits", d.memory_bus_bits},
                {"driver_version", version_text(d.driver_version)},
                {"runtime_version", version_text(d.runtime_version)}};
}

json traffic_json(std::uint64_t reads, std::uint64_t writes, int element_bytes) {
    return json{{"reads", reads},
                {"writes", writes},
                {"read_bytes", reads * static_cast<std::uint64_t>(element_bytes)},
                {"write_bytes", writes * static_cast<std::uint64_t>(element_bytes)}};
}

// What CUPTI measured for one stage: null when not asked, the reason when it could not.
json measured_json(const gpu::GpuRunResult& r, const gpu::MeasuredTraffic& m) {
    if (r.measure == gpu::L2State::Off) return nullptr;
    json j{{"available", m.available}, {"l2", gpu::l2_state_name(r.measure)}};
    if (!m.available) {
        j["why_not"] = m.why_not;
        return j;
    }
    j["dram_read_bytes"] = m.dram_read_bytes;
    j["dram_write_bytes"] = m.dram_write_bytes;
    j["l2_read_bytes"] = m.l2_read_sectors * 32;
    j["l2_write_bytes"] = m.l2_write_sectors * 32;
    j["l2_hit_rate"] = m.l2_hit_rate;
    return j;
}

json run_json(const std::string& path, const gpu::GpuRunResult& r) {
    const auto& k = *r.kernel;
    json params = json::object();
    for (const auto& [name, value] : r.params) params[name] = value;
    json launches = json::array();
    for (const auto& stage : r.launch.stages) {
        json counted = json::object();
        for (size_t a = 0; a < r.traffic.size(); ++a)
            if (stage.reads[a] || stage.writes[a]) counted[r.traffic[a].array] = traffic_json(stage.reads[a], stage.writes[a], r.traffic[a].element_bytes);
        json launch{{"stage", stage.name}, {"counted", counted}, {"time_ms", timing_json(stage.time)},
                    {"measured", measured_json(r, stage.measured)}};
        if (stage.resident_blocks_per_sm > 0) launch["resident_blocks_per_sm"] = stage.resident_blocks_per_sm;
        launches.push_back(launch);
    }
    json traffic = json::object();
    for (const auto& row : r.traffic) {
        json t = traffic_json(row.counted_reads, row.counted_writes, row.element_bytes);
        t["element_bytes"] = row.element_bytes;
        t["simulated_reads"] = row.simulated_reads;
        t["simulated_writes"] = row.simulated_writes;
        t["equal"] = row.equal();
        traffic[row.array] = t;
    }
    json checks = json::array();
    for (const auto& c : r.checks) {
        json j{{"array", c.array},        {"reference", c.expression},   {"heads_checked", c.heads_checked}, {"heads", c.heads},
               {"rows_checked", c.rows_checked}, {"rows", c.rows},       {"max_abs_error", c.max_abs_error},
               {"max_rel_error", c.max_rel_error}, {"tolerance", c.tolerance}, {"mismatches", c.mismatches}, {"passed", c.passed()}};
        if (!c.passed()) j["first_mismatch"] = c.first_mismatch;
        checks.push_back(j);
    }
    json out{{"program", path},
             {"kernel", k.name},
             {"source", k.source},
             {"params", params},
             {"heads", r.heads},
             {"dtype", gpu::dtype_name(r.dtype)},
             {"device", device_json(r.device)},
             {"launches", launches},
             {"traffic", traffic},
             {"traffic_equal", r.traffic_equal()},
             {"counted_bytes", r.counted_bytes},
             {"time_ms", timing_json(r.launch.total)},
             {"warmups", r.warmups}};
    out["flops"] = r.flops ? json(*r.flops) : json(nullptr);
    auto tf = r.tflops();
    out["tflops"] = tf ? json(*tf) : json(nullptr);
    out["gb_per_s"] = r.gigabytes_per_second();
    out["check"] = json{{"passed", r.check_passed()}, {"arrays", checks}};
    if (r.generated) {
        json slow = json::array();
        for (const gpu::SlowPath& s : r.slow_paths)
            slow.push_back(json{{"line", s.loc.line}, {"column", s.loc.col}, {"instruction", s.instruction}, {"why", s.why}});
        out["slow_paths"] = slow;
    }
    if (r.compile) out["compile"] = module_compile_json(*r.compile);
    return out;
}

std::string rows_text(const gpu::ArrayCheckResult& c) {
    std::string heads = c.heads_checked == c.heads ? fmt::format("{} head{}", c.heads, c.heads == 1 ? "" : "s")
                                                   : fmt::format("{} of {} heads", c.heads_checked, c.heads);
    if (c.rows_checked == c.rows) return heads + ", every row";
    return fmt::format("{}, {} sampled rows of {}", heads, c.rows_checked, c.rows);
}


// The stages' DRAM and L2 traffic as CUPTI measured it, beside what the kernel counted; or the
// one line that says why there is none.
std::string measured_text(const gpu::GpuRunResult& r, Format format) {
    if (r.measure == gpu::L2State::Off) return "";
    const std::string_view l2 = gpu::l2_state_name(r.measure);
    Table t{{"stage", "counted", "L2 read", "L2 write", "DRAM read", "DRAM write", "L2 hit rate"},
            {false, true, true, true, true, true, true},
            {}};
    std::string unavailable;
    for (const auto& stage : r.launch.stages) {
        const auto& m = stage.measured;
        if (!m.available) {
            unavailable = m.why_not;
            continue;
        }
        double counted = 0;
        for (size_t a = 0; a < r.traffic.size(); ++a)
            counted += double(stage.reads[a] + stage.writes[a]) * r.traffic[a].element_bytes;
        t.rows.push_back({std::string(stage.name), megabytes(counted), megabytes(m.l2_read_sectors * 32), megabytes(m.l2_write_sectors * 32), megabytes(m.dram_read_bytes),
                          megabytes(m.dram_write_bytes), fmt::format("{:.1f}%", m.l2_hit_rate)});
    }
    if (!unavailable.empty()) return fmt::format("hardware traffic ({} L2): not measured: {}\n\n", l2, unavailable);
    return fmt::format("hardware traffic per launch, {} L2 (CUPTI, in-process; L2 from the SMs in 32-byte sectors)\n", l2) +
           render_table(t, format) + "\n";
}

}  // namespace

std::string format_module_compile(const gpu::GpuRunResult::ModuleCompile& c) {
    std::string how = c.reused       ? fmt::format("reused ({:.2f} s): an earlier run compiled it", c.seconds)
                      : c.from_cache ? fmt::format("from the cache ({:.2f} s)", c.seconds)
                                     : fmt::format("compiled by NVRTC in {:.2f} s", c.seconds);
    if (c.shared_by > 0)
        how += fmt::format(", shared by {} runs ({} integer{} read at run time)", c.shared_by, c.run_time_values, c.run_time_values == 1 ? "" : "s");
    if (!c.not_shared.empty()) how += fmt::format(", its own: {}", c.not_shared);
    return fmt::format("the module for {}: {}", c.target, how);
}

json module_compile_json(const gpu::GpuRunResult::ModuleCompile& c) {
    json out{{"target", c.target}, {"seconds", c.seconds}, {"from_cache", c.from_cache}, {"reused", c.reused}};
    out["shared_by"] = c.shared_by;
    out["run_time_values"] = c.run_time_values;
    if (!c.not_shared.empty()) out["not_shared"] = c.not_shared;
    return out;
}

std::string format_gpu_run(const std::string& path, const gpu::GpuRunResult& r, Format format) {
    if (format == Format::Json) return json_text(run_json(path, r));
    const auto& k = *r.kernel;
    Table traffic{{"counter", "counted on the GPU", "simulated × heads", "bytes", ""}, {false, true, true, true, false}, {}};
    for (const auto& row : r.traffic) {
        auto add = [&](const char* what, std::uint64_t counted, std::uint64_t simulated) {
            if (!counted && !simulated) return;
            traffic.rows.push_back({fmt::format("{}({})", what, row.array), fmt::format("{}", counted), fmt::format("{}", simulated),
                                    bytes_text(double(counted) * row.element_bytes), counted == simulated ? "equal" : "DIFFERENT"});
        };
        add("reads", row.counted_reads, row.simulated_reads);
        add("writes", row.counted_writes, row.simulated_writes);
    }
    Table checks{{"check", "compared", "max abs error", "max rel error", "tolerance", ""}, {false, false, true, true, true, false}, {}};
    for (const auto& c : r.checks)
        checks.rows.push_back({fmt::format("{} = {}", c.array, c.expression), rows_text(c), fmt::format("{:.3g}", c.max_abs_error),
                               fmt::format("{:.3g}", c.max_rel_error), fmt::format("{:.3g}", c.tolerance),
                               c.passed() ? "ok" : fmt::format("FAILED: {} mismatches, first {}", c.mismatches, c.first_mismatch)});
    Table times{{"stage", "median", "min", "max"}, {false, true, true, true}, {}};
    for (const auto& s : r.launch.stages)
        times.rows.push_back({std::string(s.name), ms_text(s.time.median()), ms_text(s.time.min()), ms_text(s.time.max())});
    if (r.launch.stages.size() > 1)
        times.rows.push_back({"total", ms_text(r.launch.total.median()), ms_text(r.launch.total.min()), ms_text(r.launch.total.max())});
    if (format == Format::Csv) {
        return fmt::format("{}\n{}\n{}{}", render_table(traffic, format), render_table(checks, format), render_table(times, format),
                           r.measure == gpu::L2State::Off ? std::string() : "\n" + measured_text(r, format));
    }

    std::string params;
    for (const auto& [name, value] : r.params) params += fmt::format("{}{} = {}", params.empty() ? "" : ", ", name, value);
    const auto& d = r.device;
    std::string out = fmt::format("{} ({}) on {}: {} SMs, {} MiB L2, compute {}.{}, driver {}, runtime {}\n", k.name, k.source, d.name,
                                  d.sm_count, d.l2_bytes >> 20, d.compute_major, d.compute_minor, version_text(d.driver_version),
                                  version_text(d.runtime_version));
    out += fmt::format("{}: {}; {} head{}; {}\n\n", path, params, r.heads, r.heads == 1 ? "" : "s", gpu::dtype_name(r.dtype));
    out += "global-memory traffic in elements, counted by the kernel (one atomic add per tile per block)\n";
    out += render_table(traffic, format);
    out += r.traffic_equal() ? "counted traffic equals the simulator's count, array by array\n\n"
                             : "counted traffic DIFFERS from the simulator's count\n\n";
    out += measured_text(r, format);
    out += "outputs against the CPU reference (double precision, inputs rounded as stored; outputs poisoned with NaN before the launch)\n";
    out += render_table(checks, format);
    out += fmt::format("\ntime over {} launches after {} warm-ups (CUDA events)\n", r.launch.total.ms.size(), r.warmups);
    out += render_table(times, format);
    auto tf = r.tflops();
    out += fmt::format("{}{:.1f} GB/s of counted traffic\n", tf ? fmt::format("{:.2f} TFLOP/s, ", *tf) : std::string(), r.gigabytes_per_second());
    if (r.compile) out += format_module_compile(*r.compile) + "\n";
    if (!r.slow_paths.empty()) out += "\n" + format_slow_paths(path, r.slow_paths, "");
    return out;
}

std::string format_slow_paths(const std::string& program_path, const std::vector<gpu::SlowPath>& slow_paths, const std::string& prefix) {
    if (slow_paths.empty()) return "";
    std::string out = prefix + "why it is not faster (what the code generator could not do here):\n";
    for (const gpu::SlowPath& s : slow_paths)
        out += fmt::format("{}  {}:{}:{}: {}{}\n", prefix, program_path, s.loc.line, s.loc.col, s.instruction.empty() ? "" : s.instruction + ": ", s.why);
    return out;
}

std::string format_kernel_catalog(Format format) {
    if (format == Format::Json) {
        json out = json::array();
        for (const auto& k : gpu::kernel_catalog()) {
            json params = json::array(), arrays = json::array(), stages = json::array();
            for (const auto& p : k.params) params.push_back(p.name);
            for (const auto& a : k.arrays) arrays.push_back(a.name);
            for (const auto& s : k.stages) stages.push_back(s);
            out.push_back(json{{"kernel", k.name}, {"source", k.source}, {"summary", k.summary}, {"params", params}, {"arrays", arrays},
                               {"stages", stages}, {"dtypes", dtype_names(k)}});
        }
        return json_text(out);
    }
    Table t{{"kernel", "source", "params", "dtypes", "what it does"}, {false, false, false, false, false}, {}};
    for (const auto& k : gpu::kernel_catalog()) {
        std::string params;
        for (const auto& p : k.params) params += (params.empty() ? "" : ", ") + std::string(p.name);
        t.rows.push_back({std::string(k.name), std::string(k.source), params, k.dtypes_text(),
                          std::string(k.summary)});
    }
    // Any program also runs as CUDA generated from it (--kernel generated; the default without a `gpu` line).
    t.rows.push_back({"generated", "gpu/codegen.cpp", "the program's", "fp32, fp16, bf16",
                      "CUDA generated from the program itself (toysim gpu cuda FILE), compiled at run time with NVRTC"});
    return render_table(t, format);
}

gpu::GpuRunResult parse_gpu_run(const std::string& text, const std::string& path, const GenerateForRun& generate) {
    auto bad = [&](const std::string& why) -> ToyError {
        return ToyError(fmt::format("{}: not the JSON of a `toysim gpu run`: {}", path, why));
    };
    json j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw bad("it does not parse as a JSON object");
    try {
        gpu::GpuRunResult r;
        r.heads = j.at("heads").get<std::int64_t>();
        auto dtype = gpu::parse_dtype(j.at("dtype").get<std::string>());
        if (!dtype) throw bad("its dtype is not fp32, fp16 or bf16");
        r.dtype = *dtype;
        const std::string kernel = j.at("kernel").get<std::string>();
        if (kernel == "generated") {
            // Every parameter the run recorded; the module made from them names the stages and arrays.
            for (const auto& [name, value] : j.at("params").items()) r.params.emplace_back(name, value.get<std::int64_t>());
            if (!generate) throw bad("it is a run of generated CUDA, which only its program can read back");
            r.generated = generate(r.params, r.dtype);
            r.kernel = &r.generated->spec;
        } else {
            r.kernel = gpu::find_kernel(kernel);
            if (!r.kernel) throw bad(fmt::format("no kernel is named {}", j.at("kernel").dump()));
            for (const auto& param : r.kernel->params)
                r.params.emplace_back(std::string(param.name), j.at("params").at(std::string(param.name)).get<std::int64_t>());
        }
        r.warmups = j.value("warmups", 0);
        if (const auto c = j.find("compile"); c != j.end())
        {
            gpu::GpuRunResult::ModuleCompile how;
            how.target = c->at("target").get<std::string>();
            how.seconds = c->at("seconds").get<double>();
            how.from_cache = c->at("from_cache").get<bool>();
            how.shared_by = c->value("shared_by", 0);
            how.run_time_values = c->value("run_time_values", 0);
            how.reused = c->value("reused", false);
            how.not_shared = c->value("not_shared", std::string());
            r.compile = std::move(how);
        }
        const json& d = j.at("device");
        r.device.name = d.at("name").get<std::string>();
        r.device.sm_count = d.value("sm_count", 0);
        r.device.l2_bytes = d.at("l2_bytes").get<std::int64_t>();
        r.device.global_memory_bytes = d.value("global_memory_bytes", std::int64_t{0});
        const std::size_t narrays = r.kernel->arrays.size();
        for (const json& launch : j.at("launches")) {
            gpu::StageResult stage;
            const std::string name = launch.at("stage").get<std::string>();
            for (auto known : r.kernel->stages)
                if (known == name) stage.name = known;
            if (stage.name.empty()) throw bad(fmt::format("kernel {} has no stage {}", r.kernel->name, name));
            stage.reads.assign(narrays, 0);
            stage.writes.assign(narrays, 0);
            for (const auto& [array, counts] : launch.at("counted").items()) {
                int k = r.kernel->find_array(array);
                if (k < 0) throw bad(fmt::format("kernel {} has no array {}", r.kernel->name, array));
                stage.reads[static_cast<size_t>(k)] = counts.at("reads").get<std::uint64_t>();
                stage.writes[static_cast<size_t>(k)] = counts.at("writes").get<std::uint64_t>();
            }
            stage.time.ms = {launch.at("time_ms").at("median").get<float>()};
            stage.resident_blocks_per_sm = launch.value("resident_blocks_per_sm", 0);  // recorded since 2026-11-25
            const json& m = launch.value("measured", json(nullptr));
            if (!m.is_null()) {
                r.measure = m.at("l2").get<std::string>() == "cold" ? gpu::L2State::Cold : gpu::L2State::Warm;
                stage.measured.l2 = r.measure;
                stage.measured.available = m.at("available").get<bool>();
                if (stage.measured.available) {
                    stage.measured.dram_read_bytes = m.at("dram_read_bytes").get<double>();
                    stage.measured.dram_write_bytes = m.at("dram_write_bytes").get<double>();
                    stage.measured.l2_read_sectors = m.at("l2_read_bytes").get<double>() / 32;
                    stage.measured.l2_write_sectors = m.at("l2_write_bytes").get<double>() / 32;
                    stage.measured.l2_hit_rate = m.at("l2_hit_rate").get<double>();
                } else {
                    stage.measured.why_not = m.value("why_not", std::string("not measured"));
                }
            }
            r.launch.stages.push_back(std::move(stage));
        }
        r.launch.total.ms = {j.at("time_ms").at("median").get<float>()};
        return r;
    } catch (const json::exception& e) {
        throw bad(e.what());
    }
}

}  // namespace toysim
