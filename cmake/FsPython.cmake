# The project's pinned Python environment (scripts/requirements.txt), at the folder
# scripts/python-env.sh decides: FS_ORACLE_PYTHON is its interpreter, for the tests
# whose oracles are PyPI packages (tokenizers, transformers).
execute_process(
  COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/python-env.sh --python
  OUTPUT_VARIABLE _fs_env_python OUTPUT_STRIP_TRAILING_WHITESPACE
  COMMAND_ERROR_IS_FATAL ANY)
set(FS_ORACLE_PYTHON "${_fs_env_python}" CACHE FILEPATH
  "The project's Python environment's interpreter (scripts/python-env.sh --python)")
if(NOT EXISTS "${FS_ORACLE_PYTHON}")
  message(WARNING "No Python environment at ${FS_ORACLE_PYTHON}: the oracle tests will fail; "
    "run scripts/install-deps.sh")
endif()
