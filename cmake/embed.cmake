# Writes OUT, a C++ file defining `std::string_view toysim::NAME()` that returns the bytes of
# IN (empty when IN is empty: the file was not found at configure time). Run by the build
# whenever IN changes (CMakeLists.txt: toysim_embed).
if(IN)
  file(READ "${IN}" content)
  string(FIND "${content}" ")toysim_asset\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${IN} contains )toysim_asset\", the raw string delimiter it is embedded with")
  endif()
else()
  set(content "")
endif()
file(WRITE "${OUT}" "// Generated from ${IN} by cmake/embed.cmake: do not edit.\n#include \"sim/print/assets.h\"\n\nnamespace toysim {\n\nstd::string_view ${NAME}() {\n    static constexpr const char* kText = R\"toysim_asset(${content})toysim_asset\";\n    return kText;\n}\n\n}  // namespace toysim\n")
