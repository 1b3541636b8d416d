# cmake -DBIN=<build dir> -DSRC=<source dir> -DWORK=<scratch dir> -DCC=<compiler>
#       -DMODEL=<.pte> -P PackageTest.cmake
#
# Installs the build into WORK/prefix, then builds a consumer against it two
# ways, find_package(ember) and pkg-config, and runs both on MODEL.
foreach(v BIN SRC WORK CC MODEL)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "PackageTest.cmake: ${v} is required")
  endif()
endforeach()

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
endfunction()

set(prefix "${WORK}/prefix")
file(REMOVE_RECURSE "${WORK}")
run("${CMAKE_COMMAND}" --install "${BIN}" --prefix "${prefix}")

# 1. CMake package (ember::ember: the static library).
run("${CMAKE_COMMAND}" -S "${SRC}/tests/package" -B "${WORK}/consumer"
    "-DCMAKE_PREFIX_PATH=${prefix}" "-DCMAKE_C_COMPILER=${CC}")
run("${CMAKE_COMMAND}" --build "${WORK}/consumer")
run("${WORK}/consumer/consumer" "${MODEL}")

# 2. pkg-config.
find_program(PKG_CONFIG pkg-config)
if(PKG_CONFIG)
  file(GLOB_RECURSE pcs "${prefix}/*/ember.pc")
  list(GET pcs 0 pc)
  get_filename_component(pcdir "${pc}" DIRECTORY)
  set(ENV{PKG_CONFIG_PATH} "${pcdir}")
  execute_process(COMMAND "${PKG_CONFIG}" --cflags --libs --static ember
                  OUTPUT_VARIABLE flags OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pkg-config cannot read ${pc}")
  endif()
  separate_arguments(flags UNIX_COMMAND "${flags}")
  # pkg-config's -lember picks libember.so: this checks the shared library.
  run("${CC}" -std=c11 "${SRC}/tests/package/consumer.c" ${flags} -o "${WORK}/consumer_pc")
  run("${CMAKE_COMMAND}" -E env "LD_LIBRARY_PATH=${pcdir}/.." "${WORK}/consumer_pc" "${MODEL}")
else()
  message(STATUS "pkg-config not installed; skipping the pkg-config check")
endif()
