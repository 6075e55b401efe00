# fmt and nlohmann-json for the WebAssembly build (the wasm preset): the same Debian packages
# as the native build (libfmt-dev, nlohmann-json3-dev), used as headers only. Emscripten's
# sysroot has neither, and the host's /usr/include cannot be put on its include path whole (its
# C library headers would shadow the sysroot's), so a folder of the build links to just these two.
find_path(TOYSIM_HOST_FMT_INCLUDE fmt/format-inl.h PATHS /usr/include NO_DEFAULT_PATH NO_CMAKE_FIND_ROOT_PATH)
find_path(TOYSIM_HOST_JSON_INCLUDE nlohmann/json.hpp PATHS /usr/include NO_DEFAULT_PATH NO_CMAKE_FIND_ROOT_PATH)
if(NOT TOYSIM_HOST_FMT_INCLUDE OR NOT TOYSIM_HOST_JSON_INCLUDE)
  message(FATAL_ERROR "the wasm build needs fmt's and nlohmann-json's headers (Debian's libfmt-dev and nlohmann-json3-dev): "
                      "scripts/install-deps.sh installs them")
endif()
set(TOYSIM_WASM_INCLUDE ${CMAKE_BINARY_DIR}/host-headers)
file(MAKE_DIRECTORY ${TOYSIM_WASM_INCLUDE})
file(CREATE_LINK ${TOYSIM_HOST_FMT_INCLUDE}/fmt ${TOYSIM_WASM_INCLUDE}/fmt SYMBOLIC)
file(CREATE_LINK ${TOYSIM_HOST_JSON_INCLUDE}/nlohmann ${TOYSIM_WASM_INCLUDE}/nlohmann SYMBOLIC)

add_library(fmt::fmt INTERFACE IMPORTED)
target_include_directories(fmt::fmt SYSTEM INTERFACE ${TOYSIM_WASM_INCLUDE})
target_compile_definitions(fmt::fmt INTERFACE FMT_HEADER_ONLY=1)
add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
target_include_directories(nlohmann_json::nlohmann_json SYSTEM INTERFACE ${TOYSIM_WASM_INCLUDE})

# Wasm exceptions (the engine reports bad input as ToyError), compiled into every layer: without
# them Emscripten aborts on the first throw.
add_compile_options(-fwasm-exceptions)
add_link_options(-fwasm-exceptions)
