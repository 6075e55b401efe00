// `toysim view`: a recorded run as the data of the browser viewer (format "toysim-view-1",
// documented in sim/print/viewer/viewer.html), and the one offline HTML file that holds it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sim/step/recording.h"

namespace toysim {

// The most display cells an array's read-count grid has per side (1-D arrays: one row of
// up to kViewRowCells); larger arrays are drawn with each cell covering a block of elements.
inline constexpr std::int64_t kViewGridSide = 64;
inline constexpr std::int64_t kViewRowCells = 256;

nlohmann::ordered_json view_json(const Program& program, const Recording<double>& recording);
nlohmann::ordered_json view_json(const Program& program, const Recording<std::uint32_t>& recording, const ExprArena& arena);
// The viewer page: the template with Chart.js and the data filled in.
std::string view_html(const nlohmann::ordered_json& data);

}  // namespace toysim
