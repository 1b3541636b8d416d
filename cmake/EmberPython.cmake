# The CPython extension ember._runtime (python/ember/_runtime.c), built when
# EMBER_BUILD_PYTHON=ON: scikit-build-core turns it on (`pip install -e .`).
#
# The extension links libember statically (its objects are PIC) and is
# written against the CPython C API alone, so it needs Python's headers and
# nothing else. Under scikit-build-core it installs, with ember-run, in the
# `python` component: the extension into the package (ember/), ember-run into
# the environment's scripts directory (SKBUILD_SCRIPTS_DIR, on PATH).
find_package(Python 3.10 REQUIRED COMPONENTS Interpreter Development.Module)

Python_add_library(ember_python MODULE WITH_SOABI "${PROJECT_SOURCE_DIR}/python/ember/_runtime.c")
set_target_properties(ember_python PROPERTIES
  OUTPUT_NAME _runtime
  C_VISIBILITY_PRESET hidden)
target_link_libraries(ember_python PRIVATE ember_static)
ember_set_warnings(ember_python)
# Export PyInit__runtime only, not libember's symbols.
if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
  target_link_options(ember_python PRIVATE "LINKER:--exclude-libs,ALL")
endif()

if(DEFINED SKBUILD)
  install(TARGETS ember_python LIBRARY DESTINATION ember COMPONENT python)
  if(EMBER_BUILD_TOOLS)
    install(TARGETS ember-run RUNTIME DESTINATION "${SKBUILD_SCRIPTS_DIR}" COMPONENT python)
  endif()
endif()
