# The CPython extension ember._runtime (python/ember/_runtime.c), built when
# EMBER_BUILD_PYTHON=ON: scikit-build-core turns it on (`pip install -e .`).
#
# The extension links libember.so, installed beside it (ember/libember.so.N,
# found through an $ORIGIN run path), so that libraries loaded later with
# ember.runtime.load_library() -- custom kernels, backends -- link the same
# libember and register into the same kernel and backend tables. It is
# written against the CPython C API alone, so it needs Python's headers and
# nothing else. Under scikit-build-core it installs, with ember-run, in the
# `python` component: the extension and libember into the package (ember/),
# ember-run and ember-llm into the environment's scripts directory
# (SKBUILD_SCRIPTS_DIR, on PATH).
find_package(Python 3.10 REQUIRED COMPONENTS Interpreter Development.Module)

Python_add_library(ember_python MODULE WITH_SOABI "${PROJECT_SOURCE_DIR}/python/ember/_runtime.c")
set_target_properties(ember_python PROPERTIES
  OUTPUT_NAME _runtime
  C_VISIBILITY_PRESET hidden
  INSTALL_RPATH "$ORIGIN"
  BUILD_RPATH "$<TARGET_FILE_DIR:ember_shared>")
target_link_libraries(ember_python PRIVATE ember_shared ${CMAKE_DL_LIBS})
ember_set_warnings(ember_python)

# ember._llm: tokenizers, generation and chat (python/ember/_llm.c), over the
# same libember.so.
Python_add_library(ember_python_llm MODULE WITH_SOABI "${PROJECT_SOURCE_DIR}/python/ember/_llm.c")
set_target_properties(ember_python_llm PROPERTIES
  OUTPUT_NAME _llm
  C_VISIBILITY_PRESET hidden
  INSTALL_RPATH "$ORIGIN"
  BUILD_RPATH "$<TARGET_FILE_DIR:ember_shared>")
target_include_directories(ember_python_llm PRIVATE "${PROJECT_SOURCE_DIR}/extension/llm")
target_link_libraries(ember_python_llm PRIVATE ember_shared)
ember_set_warnings(ember_python_llm)

if(DEFINED SKBUILD)
  install(TARGETS ember_python ember_python_llm LIBRARY DESTINATION ember COMPONENT python)
  # One file under the name the extension asks for (its soname): wheels
  # cannot hold symlinks.
  install(FILES "$<TARGET_FILE:ember_shared>" DESTINATION ember COMPONENT python
          RENAME "libember.so.${PROJECT_VERSION_MAJOR}")
  if(EMBER_BUILD_TOOLS)
    install(TARGETS ember-run RUNTIME DESTINATION "${SKBUILD_SCRIPTS_DIR}" COMPONENT python)
    install(TARGETS ember-llm RUNTIME DESTINATION "${SKBUILD_SCRIPTS_DIR}" COMPONENT python)
  endif()
endif()
