# Helpers shared by every CMakeLists.txt in the tree.
include_guard(GLOBAL)

# ccache for every target. PCH files need the sloppiness below or ccache never hits.
# NOTE [One cache for every checkout]: paths under the source tree are hashed relative
# to it (CCACHE_BASEDIR) and the build folder's path is not hashed (CCACHE_NOHASHDIR),
# so a second checkout or worktree, or CI's fresh clone on a developer's machine, reuses
# the objects of the first; only the debug information's compile folder then names the
# checkout that filled the cache.
function(fs_setup_ccache)
  if(NOT FS_USE_CCACHE)
    return()
  endif()
  find_program(FS_CCACHE_PROGRAM ccache)
  if(FS_CCACHE_PROGRAM)
    set(CMAKE_CXX_COMPILER_LAUNCHER
        ${CMAKE_COMMAND} -E env "CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime"
        "CCACHE_BASEDIR=${PROJECT_SOURCE_DIR}" CCACHE_NOHASHDIR=true
        ${FS_CCACHE_PROGRAM} PARENT_SCOPE)
    message(STATUS "Flamingo Studio: using ccache at ${FS_CCACHE_PROGRAM}")
  endif()
endfunction()

# NOTE [Build time]: compiling is where a cold build goes (docs/build-times.md);
# FS_DEBUG_INFO trades debug information for compile time, and mold links the
# ~150 executables in a fraction of GNU ld's time (3.2 -> 0.4 cpu-min).
function(fs_setup_linker)
  if(FS_USE_MOLD)
    find_program(FS_MOLD_PROGRAM mold)
    if(FS_MOLD_PROGRAM AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12.1)
      add_link_options(-fuse-ld=mold)
      message(STATUS "Flamingo Studio: linking with ${FS_MOLD_PROGRAM}")
    elseif(FS_MOLD_PROGRAM AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
      add_link_options(-fuse-ld=mold)
      message(STATUS "Flamingo Studio: linking with ${FS_MOLD_PROGRAM}")
    else()
      message(STATUS "Flamingo Studio: mold not found (or the compiler cannot use it), linking with the default linker")
    endif()
  endif()
endfunction()

function(fs_setup_debug_info)
  set(_levels full lines none)
  if(NOT FS_DEBUG_INFO IN_LIST _levels)
    message(FATAL_ERROR "FS_DEBUG_INFO is '${FS_DEBUG_INFO}'; expected one of: ${_levels}")
  endif()
  if(FS_DEBUG_INFO STREQUAL "lines")
    set(_flag -g1)
  elseif(FS_DEBUG_INFO STREQUAL "none")
    set(_flag -g0)
  else()
    return()
  endif()
  # After the build type's -g, so it wins; only where the build type asks for debug info.
  add_compile_options($<$<CONFIG:RelWithDebInfo,Debug>:${_flag}>)
  message(STATUS "Flamingo Studio: debug information ${FS_DEBUG_INFO} (${_flag})")
endfunction()

# UBSan is fatal (-fno-sanitize-recover=all): a finding fails the test or the
# fuzz run instead of scrolling past in the log.
function(fs_setup_sanitizers)
  if(FS_ENABLE_ASAN)
    add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
    add_link_options(-fsanitize=address,undefined -fno-sanitize-recover=all)
  endif()
endfunction()

# NOTE [Fuzz build]: FS_BUILD_FUZZ instruments every library for libFuzzer's
# coverage (-fsanitize=fuzzer-no-link) and needs the sanitizers on, so each
# target runs under ASan and UBSan; fuzz/CMakeLists.txt links the targets with
# -fsanitize=fuzzer (libFuzzer's main). Only clang has libFuzzer.
function(fs_setup_fuzzing)
  if(NOT FS_BUILD_FUZZ)
    return()
  endif()
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "FS_BUILD_FUZZ=ON needs clang (libFuzzer); the C++ compiler is "
                        "${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION} at ${CMAKE_CXX_COMPILER}. "
                        "Configure a separate tree with CC=clang-14 CXX=clang++-14 (scripts/fuzz.sh does).")
  endif()
  if(NOT FS_ENABLE_ASAN)
    message(FATAL_ERROR "FS_BUILD_FUZZ=ON needs FS_ENABLE_ASAN=ON: the targets run under ASan and UBSan")
  endif()
  if(NOT FS_BUILD_DATA_CODECS)
    message(FATAL_ERROR "FS_BUILD_FUZZ=ON needs FS_BUILD_DATA_CODECS=ON: most fuzz targets are the codecs' parsers")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
  message(STATUS "Flamingo Studio: libFuzzer targets (fuzz/), libraries built with -fsanitize=fuzzer-no-link")
endfunction()

# Warnings for our own code only (third-party headers come in as SYSTEM).
function(fs_target_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-unused-parameter -Wno-missing-field-initializers)
endfunction()

# fs_add_library(name SOURCES ... [PUBLIC_DEPS ...] [PRIVATE_DEPS ...] [TORCH] [UNITY])
# One STATIC library per layer; public headers sit beside the sources and are
# included as "<folder>/<header>.h" from the repository root.
# TORCH: the library links LibTorch and compiles with its precompiled header.
# UNITY: compiled as unity sources of 8 files (NOTE [Unity builds]).
#
# NOTE [Unity builds]: a LibTorch library file spends most of its compile time
# instantiating and optimising the same torch templates as its neighbours; eight
# files in one translation unit instantiate them once (backend/data: 3.2 cpu-min
# as single files, 1.9 as unity sources). File-local names must then be unique
# within the library (the build says which clash). FS_UNITY_BUILD=OFF compiles
# file by file, faster when editing one file of a large library.
function(fs_add_library name)
  cmake_parse_arguments(ARG "TORCH;UNITY" "" "SOURCES;PUBLIC_DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  if(ARG_UNITY AND FS_UNITY_BUILD)
    set_target_properties(${name} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
  endif()
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_PUBLIC_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  fs_target_warnings(${name})
  if(ARG_TORCH)
    fs_use_torch(${name})
  else()
    fs_qt_kind(_qt ${ARG_PUBLIC_DEPS} ${ARG_PRIVATE_DEPS})
    if(_qt)
      set_property(TARGET ${name} PROPERTY FS_QT_KIND ${_qt})
      fs_use_qt_pch(${name} ${_qt})
    endif()
  endif()
endfunction()

# NOTE [Qt precompiled headers]: Qt code spends about two thirds of its compile
# time parsing Qt's headers (a Qt Test file includes all of QtCore through
# <QtTest>). Qt libraries and Qt Test executables reuse one PCH per kind:
#   core      QtCore                  (app/ libraries)
#   widgets   QtWidgets               (ui/ libraries without plots)
#   plot      QtWidgets, QCustomPlot  (ui/ libraries with plots)
# and core_test, widgets_test, plot_test: the same with QtTest, for Qt Test
# executables.
# GCC takes a PCH only when the macros it tested match the user's: QtTest picks
# QTEST_MAIN's application class from QT_WIDGETS_LIB / QT_GUI_LIB, so each kind
# links exactly its users' Qt modules; and only under the same -fPIC / -fPIE
# setting, so the test kinds are anchored in executables (-fPIE) and the others
# in static libraries (-fPIC). A PCH that does not match is reported by
# -Winvalid-pch and the file compiles without it.

# fs_qt_kind(<out> deps...): the kind of NOTE [Qt precompiled headers] that
# matches the Qt modules the dependencies bring: "plot" (QCustomPlot, which
# brings QtPrintSupport), else "widgets", else "core" (any Qt module), else empty.
function(fs_qt_kind out)
  set(_rank 0)
  foreach(dep IN LISTS ARGN)
    set(_dep_kind "")
    if(dep STREQUAL "QCustomPlotQt6::QCustomPlotQt6")
      set(_dep_kind plot)
    elseif(dep STREQUAL "Qt6::Widgets")
      set(_dep_kind widgets)
    elseif(dep MATCHES "^Qt6::")
      set(_dep_kind core)
    elseif(TARGET ${dep} AND NOT dep MATCHES "::")
      get_target_property(_dep_kind ${dep} FS_QT_KIND)
    endif()
    if(_dep_kind STREQUAL "plot")
      set(_rank 3)
    elseif(_dep_kind STREQUAL "widgets" AND _rank LESS 2)
      set(_rank 2)
    elseif(_dep_kind STREQUAL "core" AND _rank LESS 1)
      set(_rank 1)
    endif()
  endforeach()
  set(_kinds "" core widgets plot)
  list(GET _kinds ${_rank} _kind)
  set(${out} ${_kind} PARENT_SCOPE)
endfunction()

# fs_use_qt_pch(target kind): kind is one of NOTE [Qt precompiled headers]'s.
function(fs_use_qt_pch target kind)
  set(_pch fs_qt_${kind}_pch)
  if(NOT TARGET ${_pch})
    set(_headers <QtCore>)
    set(_libs Qt6::Core)
    if(kind MATCHES "^widgets")
      set(_headers <QtWidgets>)
      set(_libs Qt6::Widgets)
    elseif(kind MATCHES "^plot")
      set(_headers <QtWidgets> <qcustomplot.h>)
      set(_libs Qt6::Widgets QCustomPlotQt6::QCustomPlotQt6)
    endif()
    if(kind MATCHES "_test$")
      list(APPEND _headers <QtTest>)
      list(APPEND _libs Qt6::Test)
      add_executable(${_pch} EXCLUDE_FROM_ALL ${PROJECT_SOURCE_DIR}/cmake/qt_pch_main.cpp)
    else()
      add_library(${_pch} STATIC EXCLUDE_FROM_ALL ${PROJECT_SOURCE_DIR}/cmake/qt_pch.cpp)
    endif()
    set_target_properties(${_pch} PROPERTIES AUTOMOC OFF)
    target_link_libraries(${_pch} PRIVATE ${_libs})
    target_precompile_headers(${_pch} PRIVATE ${_headers} <string> <vector> <memory> <functional>)
    fs_target_warnings(${_pch})
  endif()
  target_precompile_headers(${target} REUSE_FROM ${_pch})
endfunction()

# NOTE [Gloo]: c10d's ProcessGroupGloo.hpp includes gloo's headers, so every
# LibTorch library needs them; no code of ours calls gloo itself. PyTorch's
# builds link gloo into libtorch_cpu.so and ship no gloo headers, so only the
# headers are taken, never a libgloo: Debian's libgloo-dev (/usr/include), or
# FS_GLOO_INCLUDE_DIR; no Gloo CMake package is used (Debian's names its own
# libgloo.so, a second gloo beside the one inside LibTorch).
# ProcessGroupGloo.hpp's members are pointers to gloo types and its newer store
# methods sit under GLOO_STORE_HAS_STORE_V2, so Debian's older gloo headers
# compile it (checked against torch 2.11).
# After find_package(Torch): defines the target `gloo` that fs_use_torch links.
function(fs_find_gloo)
  find_path(FS_GLOO_INCLUDE_DIR gloo/algorithm.h
    PATHS ${TORCH_INSTALL_PREFIX}/include ${TORCH_INCLUDE_DIRS} /usr/include
    DOC "Folder holding gloo/algorithm.h (NOTE [Gloo])")
  if(NOT FS_GLOO_INCLUDE_DIR)
    message(FATAL_ERROR "Gloo: no gloo/algorithm.h beside LibTorch (${TORCH_INSTALL_PREFIX}/include) or in "
                        "/usr/include; c10d's ProcessGroupGloo.hpp needs gloo's headers. Install libgloo-dev, "
                        "or pass -DFS_GLOO_INCLUDE_DIR=<dir>.")
  endif()
  add_library(gloo INTERFACE IMPORTED GLOBAL)
  target_include_directories(gloo SYSTEM INTERFACE ${FS_GLOO_INCLUDE_DIR})
  message(STATUS "Flamingo Studio: Gloo headers at ${FS_GLOO_INCLUDE_DIR}, linked inside LibTorch")
endfunction()

# NOTE [Torch's CUDA probe]: the PyTorch package's Caffe2 config enables CMake's
# CUDA language and, without TORCH_CUDA_ARCH_LIST, compiles and runs a program to
# ask the installed GPUs (none on a build machine), with the C++ standard as CUDA
# standard (CMake 3.25 knows no CUDA20 for nvcc). We compile no CUDA sources: the
# architecture list is only Caffe2's, and CUDA 17 is what nvcc accepts.
macro(fs_torch_cuda_defaults)
  if(NOT DEFINED TORCH_CUDA_ARCH_LIST AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
    set(TORCH_CUDA_ARCH_LIST "8.0;9.0" CACHE STRING "CUDA architectures for Caffe2's config (NOTE [Torch's CUDA probe])")
  endif()
  if(NOT DEFINED CMAKE_CUDA_STANDARD)
    set(CMAKE_CUDA_STANDARD 17)
  endif()
endmacro()

# NOTE [NCCL headers]: with FS_WITH_CUDA the LibTorch libraries include c10d's
# ProcessGroupNCCL.hpp, which includes <nccl.h>. LibTorch's CMake package does
# not name NCCL's headers: a pip install has them in the nvidia-nccl wheel
# beside torch (site-packages/nvidia/nccl/include, or nvidia/cu<N>/include),
# a system install under the CUDA toolkit or /usr/include. FS_NCCL_INCLUDE_DIR
# overrides. Appends the folder to TORCH_INCLUDE_DIRS in the caller's scope.
function(fs_find_nccl_headers)
  file(GLOB _wheel_dirs LIST_DIRECTORIES true "${TORCH_INSTALL_PREFIX}/../nvidia/*/include")
  # The wheel's first: the NCCL that LibTorch loads at run time.
  find_path(FS_NCCL_INCLUDE_DIR nccl.h PATHS ${_wheel_dirs} NO_DEFAULT_PATH
    DOC "Folder holding nccl.h for the CUDA build (NOTE [NCCL headers])")
  find_path(FS_NCCL_INCLUDE_DIR nccl.h PATHS ${CUDAToolkit_INCLUDE_DIRS} ${CUDA_INCLUDE_DIRS} /usr/local/cuda/include)
  if(NOT FS_NCCL_INCLUDE_DIR)
    message(FATAL_ERROR "FS_WITH_CUDA=ON: nccl.h not found (looked beside ${TORCH_INSTALL_PREFIX} in "
                        "../nvidia/*/include, in the CUDA toolkit and /usr/include); c10d's ProcessGroupNCCL.hpp "
                        "needs it. Pass -DFS_NCCL_INCLUDE_DIR=<dir>.")
  endif()
  message(STATUS "Flamingo Studio: NCCL headers at ${FS_NCCL_INCLUDE_DIR}")
  set(TORCH_INCLUDE_DIRS ${TORCH_INCLUDE_DIRS} ${FS_NCCL_INCLUDE_DIR} PARENT_SCOPE)
endfunction()

# NOTE [fmt beside LibTorch]: PyTorch's include folder ships its own fmt (12.x),
# and LibTorch's folders come as -isystem before /usr/include, so <fmt/...> would
# resolve there for every LibTorch user, while Debian's spdlog 1.10 (headers and
# libspdlog.so) is built on Debian's fmt 9. No LibTorch header that we include
# includes fmt (checked with g++ -M over torch/torch.h, c10d's Gloo, NCCL and
# TCPStore headers and ATen's CUDA context), so spdlog and fmt go first: a folder
# in the build tree holding only `fmt` and `spdlog` links to the system's, as -I
# (searched before every -isystem) on each LibTorch target and its PCH.
function(fs_fmt_first out)
  if(NOT FS_FMT_FIRST_DIR)
    find_path(FS_SYSTEM_FMT_INCLUDE fmt/core.h PATHS /usr/include NO_DEFAULT_PATH)
    find_path(FS_SYSTEM_SPDLOG_INCLUDE spdlog/spdlog.h PATHS /usr/include NO_DEFAULT_PATH)
    if(NOT FS_SYSTEM_FMT_INCLUDE OR NOT FS_SYSTEM_SPDLOG_INCLUDE)
      message(FATAL_ERROR "fmt/core.h or spdlog/spdlog.h not found in /usr/include: install libspdlog-dev")
    endif()
    set(_dir ${PROJECT_BINARY_DIR}/fmt-first)
    file(MAKE_DIRECTORY ${_dir})
    file(CREATE_LINK ${FS_SYSTEM_FMT_INCLUDE}/fmt ${_dir}/fmt SYMBOLIC)
    file(CREATE_LINK ${FS_SYSTEM_SPDLOG_INCLUDE}/spdlog ${_dir}/spdlog SYMBOLIC)
    set(FS_FMT_FIRST_DIR ${_dir} CACHE INTERNAL "NOTE [fmt beside LibTorch]")
  endif()
  set(${out} ${FS_FMT_FIRST_DIR} PARENT_SCOPE)
endfunction()

# NOTE [libstdc++ before LibTorch]: PyTorch's wheels are built with a newer GCC
# whose libstdc++ parts they link in and export (182 std:: symbols in
# libtorch.so: std::filesystem, <sstream>, <chrono> tz). An executable whose
# NEEDED list names libtorch before libstdc++.so.6 binds its own std:: calls to
# those copies, and std::filesystem::remove_all jumped to address 0 there. Every
# LibTorch user's link therefore names libstdc++ first (before the objects, kept
# even under --as-needed), so the system's library is searched first.
# NOTE [One BLAS]: PyTorch's x86 wheels link MKL into libtorch_cpu and export its
# Fortran BLAS (sgemm_ and the rest), and LibTorch's matmuls call sgemm_ through
# the dynamic symbol table. OpenCV's core (the data codecs) needs Debian's
# libblas.so.3 and liblapack.so.3, which are OpenBLAS: when those came first in
# an executable's NEEDED list, every LibTorch matmul ran in OpenBLAS (41 % of a
# CPU train step in sgemm_kernel_SKYLAKEX, 1 % in MKL), unlike the same model in
# Python. libtorch_cpu is therefore named right after libstdc++, before any
# library that brings OpenBLAS, and our own direct BLAS calls use its sgemm_
# too (backend/model/row_major_gemm.h). probe_cli_test checks the binding.
# Link LibTorch (+ c10d Gloo) and reuse one precompiled header across every
# LibTorch translation unit: torch/torch.h costs ~20 s per file otherwise.
function(fs_use_torch target)
  fs_fmt_first(_fmt_first)
  target_link_libraries(${target} PUBLIC torch gloo)
  target_link_options(${target} INTERFACE "LINKER:--push-state,--no-as-needed" -lstdc++
                      "$<TARGET_FILE:torch_cpu>" "LINKER:--pop-state")
  target_include_directories(${target} BEFORE PUBLIC ${_fmt_first})
  target_include_directories(${target} SYSTEM PUBLIC ${TORCH_INCLUDE_DIRS})
  target_compile_definitions(${target} PUBLIC USE_C10D_GLOO $<$<BOOL:${FS_WITH_CUDA}>:FS_WITH_CUDA USE_C10D_NCCL>)
  if(NOT TARGET fs_torch_pch)
    add_library(fs_torch_pch STATIC ${PROJECT_SOURCE_DIR}/cmake/torch_pch.cpp)
    target_link_libraries(fs_torch_pch PUBLIC torch)
    target_include_directories(fs_torch_pch BEFORE PUBLIC ${_fmt_first})
    target_include_directories(fs_torch_pch SYSTEM PUBLIC ${TORCH_INCLUDE_DIRS})
    target_compile_definitions(fs_torch_pch PUBLIC USE_C10D_GLOO $<$<BOOL:${FS_WITH_CUDA}>:FS_WITH_CUDA USE_C10D_NCCL>)
    target_precompile_headers(fs_torch_pch PRIVATE <torch/torch.h>)
    # A reused PCH is only valid when the flags match the users' exactly.
    fs_target_warnings(fs_torch_pch)
  endif()
  target_precompile_headers(${target} REUSE_FROM fs_torch_pch)
  set_property(TARGET ${target} PROPERTY FS_USES_TORCH ON)
endfunction()

# NOTE [Executables and the torch PCH]: a test or tool that links a LibTorch
# library compiles its own sources against torch/torch.h too (20-40 s a file
# without the PCH). GCC accepts a PCH only under the same -fPIC / -fPIE setting:
# such executables compile with -fPIC (the libraries' setting; the linker still
# makes a PIE) and reuse fs_torch_pch.
function(fs_reuse_torch_pch_if_linked target)
  foreach(dep IN LISTS ARGN)
    if(TARGET ${dep})
      get_target_property(_torch ${dep} FS_USES_TORCH)
      if(_torch)
        set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE OFF)
        target_compile_options(${target} PRIVATE -fPIC)
        target_precompile_headers(${target} REUSE_FROM fs_torch_pch)
        return()
      endif()
    endif()
  endforeach()
endfunction()

# fs_add_executable(name SOURCES ... DEPS ...)
function(fs_add_executable name)
  cmake_parse_arguments(ARG "" "OUTPUT_NAME" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
  fs_target_warnings(${name})
  fs_reuse_torch_pch_if_linked(${name} ${ARG_DEPS})
  if(ARG_OUTPUT_NAME)
    set_target_properties(${name} PROPERTIES OUTPUT_NAME ${ARG_OUTPUT_NAME})
  endif()
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
endfunction()

# fs_test_home(out name): XDG_DATA_HOME, XDG_CONFIG_HOME and XDG_CACHE_HOME under
# <build>/tests/home/<name>, as a CTest ENVIRONMENT list, so a test that opens a
# window (history, settings) or runs the demo never writes into the user's
# flamingo-studio home (app/common/user_dirs.h, backend/cli/paths.h).
function(fs_test_home out name)
  set(_h ${PROJECT_BINARY_DIR}/tests/home/${name})
  set(${out} "XDG_DATA_HOME=${_h}/data;XDG_CONFIG_HOME=${_h}/config;XDG_CACHE_HOME=${_h}/cache" PARENT_SCOPE)
endfunction()

# fs_add_test(name SOURCES ... DEPS ... [LABELS unit|integration|gpu ...] [TIMEOUT s])
# A GoogleTest executable registered with CTest as one test per binary so the
# labels and the working directory are uniform.
# A test labelled gpu gets tests/fixtures/gpu_test_main.cpp as its main(): it exits 77
# ("Not Run" in CTest) where no CUDA device is usable, so it never passes untried.
function(fs_add_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;DEPS;LABELS" ${ARGN})
  if("gpu" IN_LIST ARG_LABELS)
    add_executable(${name} ${ARG_SOURCES} ${PROJECT_SOURCE_DIR}/tests/fixtures/gpu_test_main.cpp)
    target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest)
  else()
    add_executable(${name} ${ARG_SOURCES})
    target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  endif()
  target_compile_definitions(${name} PRIVATE
    FS_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    FS_BINARY_DIR="${PROJECT_BINARY_DIR}"
    FS_PYTHON="${FS_PYTHON}")
  fs_target_warnings(${name})
  # NOTE [Tests at -O1]: test code mostly calls the libraries (-O2); at -O1 a
  # test file compiles in about 80 % of the time (18.7 s -> 15.3 s for
  # data_position_test.cpp). -O1 keeps __OPTIMIZE__, so the torch PCH still fits.
  target_compile_options(${name} PRIVATE $<$<CONFIG:Release,RelWithDebInfo>:-O1>)
  fs_reuse_torch_pch_if_linked(${name} ${ARG_DEPS})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
  add_test(NAME ${name} COMMAND ${name} --gtest_color=no)
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  fs_test_home(_home ${name})
  set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT}
    ENVIRONMENT "FS_BIN_DIR=${PROJECT_BINARY_DIR}/bin;QT_QPA_PLATFORM=offscreen;${_home}")
  if("gpu" IN_LIST ARG_LABELS)
    set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77)
  endif()
endfunction()

# fs_add_gpu_cases(test FILTER pattern [TIMEOUT s]): the CUDA cases of a GoogleTest binary
# that also has CPU cases, as the CTest entry <test>_gpu labelled gpu (tests/fixtures/gpu_cases.sh):
# Not Run unless flamingo-train reports a usable CUDA device; failed if a selected case skips.
function(fs_add_gpu_cases test)
  cmake_parse_arguments(ARG "" "FILTER;TIMEOUT" "" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  # NOTE [GPU fidelity settings]: applied when gpu_cases.sh sets FS_GPU_FIDELITY=1.
  target_sources(${test} PRIVATE ${PROJECT_SOURCE_DIR}/tests/fixtures/gpu_fidelity_env.cpp)
  add_test(NAME ${test}_gpu COMMAND bash ${PROJECT_SOURCE_DIR}/tests/fixtures/gpu_cases.sh
    $<TARGET_FILE:flamingo_train> $<TARGET_FILE:${test}> "${ARG_FILTER}")
  set_tests_properties(${test}_gpu PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT ${ARG_TIMEOUT})
endfunction()

# fs_add_qt_test(name SOURCES ... DEPS ... [LABELS ...] [TIMEOUT s]): a Qt Test executable
# registered with CTest on the offscreen platform, so it needs no display.
function(fs_add_qt_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  set_target_properties(${name} PROPERTIES AUTOMOC ON RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} Qt6::Test)
  target_compile_definitions(${name} PRIVATE
    FS_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    FS_BINARY_DIR="${PROJECT_BINARY_DIR}")
  fs_target_warnings(${name})
  fs_qt_kind(_qt ${ARG_DEPS})
  if(_qt)
    fs_use_qt_pch(${name} ${_qt}_test)
  endif()
  add_test(NAME ${name} COMMAND ${name})
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  fs_test_home(_home ${name})
  set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT}
    ENVIRONMENT "QT_QPA_PLATFORM=offscreen;${_home}")
endfunction()
