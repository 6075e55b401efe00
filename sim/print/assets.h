// Files embedded in the binary at build time (CMakeLists.txt: toysim_embed), so `toysim view`
// and `--plot FILE.html` write pages that work offline on any machine.
#pragma once

#include <string_view>

namespace toysim {

// Chart.js 3 (Debian's libjs-chart.js, chart.min.js); empty when it was not installed when
// the build was configured.
std::string_view chart_js();
// The trace viewer's page, sim/print/viewer/viewer.html, with its three placeholders.
std::string_view viewer_template();
// Its drawing of the machine, sim/print/viewer/machine.js (the playground loads the file itself).
std::string_view machine_js();

}  // namespace toysim
