# Read by cpack (CPACK_PROJECT_CONFIG_FILE) before it makes the packages.
# NOTE [Package synopsis]
# CPackDeb puts CPACK_PACKAGE_DESCRIPTION_SUMMARY (the project's description,
# which names both programs) in front of each component's description as the
# synopsis line. Each component's description starts with its own synopsis, so
# the project-wide summary is dropped here.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "")
