# The Python whose PyTorch the engine builds against and that runs the test
# oracles: FS_PYTHON, by default the project's pinned environment
# (scripts/requirements.txt) at the folder scripts/python-env.sh decides. A
# cluster user passes their own environment's interpreter (docs/gpu.md).
# Without Torch_DIR, LibTorch is found through that Python's
# torch.utils.cmake_prefix_path.
if(NOT FS_PYTHON)
  execute_process(
    COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/python-env.sh --python
    OUTPUT_VARIABLE _fs_env_python OUTPUT_STRIP_TRAILING_WHITESPACE
    COMMAND_ERROR_IS_FATAL ANY)
  set(FS_PYTHON "${_fs_env_python}" CACHE FILEPATH
    "Python with PyTorch and the test oracles (default: scripts/python-env.sh --python)")
endif()
if(NOT EXISTS "${FS_PYTHON}")
  message(FATAL_ERROR "FS_PYTHON: no interpreter at ${FS_PYTHON}; run scripts/install-deps.sh (it makes the "
    "project's Python environment) or pass -DFS_PYTHON=<the python of an environment with torch>")
endif()

if(FS_BUILD_ENGINE AND NOT Torch_DIR)
  execute_process(
    COMMAND ${FS_PYTHON} -c "import torch, torch.utils; print(torch.utils.cmake_prefix_path); print(torch.__version__)"
    OUTPUT_VARIABLE _fs_torch OUTPUT_STRIP_TRAILING_WHITESPACE
    ERROR_VARIABLE _fs_torch_err RESULT_VARIABLE _fs_torch_rc)
  if(NOT _fs_torch_rc EQUAL 0)
    message(FATAL_ERROR "FS_PYTHON (${FS_PYTHON}) cannot import torch: ${_fs_torch_err}")
  endif()
  string(REPLACE "\n" ";" _fs_torch "${_fs_torch}")
  list(GET _fs_torch 0 _fs_torch_prefix)
  list(GET _fs_torch 1 _fs_torch_version)
  list(PREPEND CMAKE_PREFIX_PATH "${_fs_torch_prefix}")
  message(STATUS "Flamingo Studio: torch ${_fs_torch_version} of ${FS_PYTHON}")
endif()
