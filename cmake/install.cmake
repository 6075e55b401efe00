# What `cmake --install` puts where, and the Debian package (`cpack -G DEB` in the build folder):
#   bin/toysim
#   lib/<arch>/toysim/libtoysim_cuda.so   the CUDA kernels (a build with a CUDA toolkit), opened by toysim
#   share/toysim/programs/...            the course's programs, exercises/ with every exercise's
#                                         spec (hidden tests included), starter and reference solution
#   share/man/man1/toysim.1.gz, toysim-COMMAND.1.gz   generated from the built toysim's --help
#   share/bash-completion/completions/toysim    generated from it too
#   share/doc/toysim/copyright           the MIT license, where Debian looks for it
# Also here, because the package must say which build it is: the commit `toysim --version` names.
include(GNUInstallDirs)

# ---- `toysim --version`: the version and the commit ----

# The version lives in sim/cli/app.h (kVersion) and in project(); a package named 0.2.0 holding a
# toysim that says 0.1.0 is a bug report nobody can place, so they must agree.
file(STRINGS ${PROJECT_SOURCE_DIR}/sim/cli/app.h toysim_version_line REGEX "kVersion = \"[^\"]*\"")
string(REGEX MATCH "\"([^\"]*)\"" toysim_version_line "${toysim_version_line}")
if(NOT CMAKE_MATCH_1 STREQUAL PROJECT_VERSION)
  message(FATAL_ERROR "sim/cli/app.h says toysim ${CMAKE_MATCH_1}, project() says ${PROJECT_VERSION}: make them agree")
endif()

# cmake/commit.cmake runs at every build (git describe is quick) rather than at configure time, so
# a commit, a checkout or an edit that makes the tree dirty shows without re-running CMake; it
# rewrites the file only when the text changes, so nothing recompiles otherwise.
find_package(Git QUIET)
set(TOYSIM_COMMIT_CPP ${CMAKE_BINARY_DIR}/generated/commit.cpp)
add_custom_target(toysim_commit
                  COMMAND ${CMAKE_COMMAND} -D SOURCE_DIR=${PROJECT_SOURCE_DIR} -D OUT=${TOYSIM_COMMIT_CPP}
                          -D GIT_EXECUTABLE=${GIT_EXECUTABLE} -P ${CMAKE_CURRENT_LIST_DIR}/commit.cmake
                  BYPRODUCTS ${TOYSIM_COMMIT_CPP} COMMENT "toysim: the commit for --version" VERBATIM)
target_sources(toysim_cli PRIVATE ${TOYSIM_COMMIT_CPP})
add_dependencies(toysim_cli toysim_commit)

# An installed toysim finds its exercises from where it is (sim/cli/exercise_command.cpp), as this
# layout places them: the package can be unpacked under any prefix.
file(RELATIVE_PATH toysim_installed_exercises ${CMAKE_INSTALL_FULL_BINDIR}
     ${CMAKE_INSTALL_FULL_DATADIR}/toysim/programs/exercises)
target_compile_definitions(toysim_cli PRIVATE TOYSIM_INSTALLED_EXERCISES_DIR="${toysim_installed_exercises}")
# And its CUDA kernels' library (gpu/runtime/device_loader.cpp), the same way.
file(RELATIVE_PATH toysim_installed_cuda_library ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_LIBDIR}/toysim/libtoysim_cuda.so)
target_compile_definitions(toysim_gpu_runtime PRIVATE TOYSIM_INSTALLED_CUDA_LIBRARY="${toysim_installed_cuda_library}")

# ---- man pages and bash completion, from the built toysim's own --help ----

# packaging/help_docs.cpp reads `toysim --help` and every `toysim COMMAND --help`, so the pages and
# the completion list exactly the commands and options this build has. Which pages there are is
# known only once toysim runs, so a stamp stands for them.
add_executable(toysim_help_docs packaging/help_docs.cpp packaging/help_model.cpp packaging/completion.cpp)
target_include_directories(toysim_help_docs PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(toysim_help_docs PRIVATE toysim_flags)
set(TOYSIM_MAN_DIR ${CMAKE_BINARY_DIR}/man)
set(TOYSIM_COMPLETION ${CMAKE_BINARY_DIR}/completion/toysim)
add_custom_command(OUTPUT ${TOYSIM_MAN_DIR}/pages.stamp
                   BYPRODUCTS ${TOYSIM_MAN_DIR}/toysim.1 ${TOYSIM_COMPLETION}
                   COMMAND toysim_help_docs $<TARGET_FILE:toysim> ${TOYSIM_MAN_DIR} ${TOYSIM_COMPLETION}
                   # Installed gzipped, as Debian's policy has man pages (-n: no name or time in
                   # the file, so the same pages give the same bytes).
                   COMMAND sh -c "for page in *.1; do gzip -9nc \"$page\" > \"$page.gz\"; done" WORKING_DIRECTORY ${TOYSIM_MAN_DIR}
                   COMMAND ${CMAKE_COMMAND} -E touch ${TOYSIM_MAN_DIR}/pages.stamp
                   DEPENDS toysim toysim_help_docs COMMENT "toysim: man pages and bash completion from --help" VERBATIM)
add_custom_target(toysim_docs ALL DEPENDS ${TOYSIM_MAN_DIR}/pages.stamp)

# ---- install ----

install(TARGETS toysim RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET toysim_cuda)
  install(TARGETS toysim_cuda LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/toysim)
endif()
# Everything `toysim grade` and `toysim exercise` read: exercise.toy (the spec with its hidden
# tests), starter.toy (what `exercise start` copies); the reference solutions too, as
# docs/classroom.md grades them in its examples.
install(DIRECTORY programs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/toysim/programs)
install(DIRECTORY ${TOYSIM_MAN_DIR}/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 FILES_MATCHING PATTERN "*.1.gz")
install(FILES ${TOYSIM_COMPLETION} DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME copyright)

# ---- the Debian package: `cpack -G DEB` in the build folder ----

set(TOYSIM_DEB_MAINTAINER "toysim maintainers <maintainers@users.noreply.a-seed-d7be83e2.example>"
    CACHE STRING "The Debian package's Maintainer field")
set(CPACK_PACKAGE_NAME toysim)
set(CPACK_PACKAGE_VENDOR "the toysim authors")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "cycle-accurate toy machine for learning how FlashAttention works")
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # toysim_0.1.0_amd64.deb
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${TOYSIM_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION education)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# The long description, under the summary line (CPack puts that first, and the space that starts
# each continuation line).
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "toysim runs the course's .toy programs on a machine of a few registers, a DRAM and\n"
    "a multiply-accumulate unit, and prints the step tables and the cycle and DRAM-traffic\n"
    "counts that the course works out by hand: from a 2x2 matmul to online softmax and\n"
    "tiled FlashAttention. It grades exercises (toysim grade), writes an offline HTML\n"
    "trace viewer, and on a CUDA build runs the programs' kernels on a GPU.\n"
    "The course's programs and exercises are in /usr/share/toysim/programs.")
string(JOIN "" CPACK_DEBIAN_PACKAGE_DESCRIPTION ${CPACK_DEBIAN_PACKAGE_DESCRIPTION})
# Depends from the libraries the binaries link (libfmt9, libedit2, libstdc++6, ...), by
# dpkg-shlibdeps (dpkg-dev), so the list follows the build. Parts of the build that need more
# (the Python module: python3, python3-numpy) add to the global property TOYSIM_DEB_DEPENDS:
#   set_property(GLOBAL APPEND PROPERTY TOYSIM_DEB_DEPENDS "python3 (>= 3.11)" python3-numpy)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The Python module (python/), when this build has one, is in the package too (every install
# component is). It needs the Python it was built for (its file name carries that minor version's
# ABI tag) and NumPy, which dpkg-shlibdeps cannot see: an extension links no libpython.
if(TARGET toysim_python AND Python3_EXECUTABLE)
  execute_process(COMMAND ${Python3_EXECUTABLE} -c "import sys; print(sys.version_info[1])"
                  OUTPUT_VARIABLE toysim_python_minor OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(toysim_python_minor MATCHES "^[0-9]+$")
    math(EXPR toysim_python_next "${toysim_python_minor} + 1")
    set_property(GLOBAL APPEND PROPERTY TOYSIM_DEB_DEPENDS "python3 (>= 3.${toysim_python_minor}~)" "python3 (<< 3.${toysim_python_next})"
                 python3-numpy)
  endif()
endif()
get_property(toysim_deb_depends GLOBAL PROPERTY TOYSIM_DEB_DEPENDS)
list(JOIN toysim_deb_depends ", " CPACK_DEBIAN_PACKAGE_DEPENDS)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "bash-completion")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_STRIP_FILES ON)
# `cpack --config CPackSourceConfig.cmake`: the sources without build folders or .git (its
# toysim then says "commit unknown").
set(CPACK_SOURCE_GENERATOR TGZ)
set(CPACK_SOURCE_IGNORE_FILES "/\\\\.git/" "/build[^/]*/" "/\\\\.deps/" "__pycache__")
include(CPack)

if(BUILD_TESTING)
  add_subdirectory(tests/packaging)
endif()
