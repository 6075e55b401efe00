// `toysim view`: a recorded run as the data of the browser viewer (format "toysim-view-1",
// documented in sim/print/viewer/viewer.html), and the one offline HTML file that holds it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sim/print/step_report.h"
#include "sim/step/recording.h"

namespace toysim {

// The most display cells an array's read-count grid has per side (1-D arrays: one row of
// up to kViewRowCells); larger arrays are drawn with each cell covering a block of elements.
inline constexpr std::int64_t kViewGridSide = 64;
inline constexpr std::int64_t kViewRowCells = 256;

nlohmann::ordered_json view_json(const Program& program, const Recording<double>& recording);
nlohmann::ordered_json view_json(const Program& program, const Recording<std::uint32_t>& recording, const ExprArena& arena);
// The machine where a stepping session stands, drawn by the viewer's code (viewer/machine.js)
// in the playground's stepper:
//   {"line": the source line of the step just run, or at step 0 of the next one (0: none),
//    "next": true at step 0, "registers": names (kShownRegisters), "values": their values as
//    the stepper shows them ("" not yet written), "reg": the index the step wrote or null,
//    "tiles": [{"name", "rows", "cols", "shape": [r, c] or null (never written), "block":
//    values pooled to at most kMaxPoolSide per side (as a recording pools them), "old": the
//    block before the step, where the step wrote this tile at an unchanged shape}],
//    "tile": the index the step wrote or null, "arrays": as view_json's, "cells": per array
//    {"reads": reads so far per grid cell, "written": elements stored so far per grid cell},
//    "dram": the step's accesses as view_json's rectangles,
//    "fault": {"message", "line", "col"} of the instruction the run ends on, or null}
template <class Domain>
nlohmann::ordered_json view_state_json(const Session<Domain>& session, const StepStyle& style);
// The viewer page: the template with Chart.js and the data filled in.
std::string view_html(const nlohmann::ordered_json& data);

}  // namespace toysim
