# C tests.
#
# ember_add_c_tests(<dir>): every <dir>/**/test_*.c becomes one executable and
# one ctest test, so adding a test needs no edit here. The test name is the
# path below <dir> without ".c" ("kernels/test_kernels"). Tests link the core,
# the portable kernels, the module helper and the .npy reader, may include
# internal headers relative to src/, and run from the repository root so they
# can open tests/fixtures/... by relative path.
#
# ember_add_package_test(): installs the build and links a consumer against
# it with find_package(ember) and with pkg-config.
#
# ember_add_cli_tests(): checks ember-run's and ember-llm's exit status and
# error line on good and bad input (via cmake/ExpectRun.cmake).

function(ember_add_c_tests dir)
  file(GLOB_RECURSE test_sources CONFIGURE_DEPENDS "${dir}/test_*.c")
  list(SORT test_sources)
  foreach(src IN LISTS test_sources)
    file(RELATIVE_PATH rel "${dir}" "${src}")
    string(REGEX REPLACE "\\.c$" "" test_name "${rel}")
    string(MAKE_C_IDENTIFIER "${test_name}" target)
    set(target "ctest_${target}")
    get_filename_component(sub "${rel}" DIRECTORY)
    get_filename_component(exe "${rel}" NAME_WE)

    add_executable(${target} "${src}")
    set_target_properties(${target} PROPERTIES
      OUTPUT_NAME "${exe}"
      RUNTIME_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/tests/${sub}")
    target_include_directories(${target} PRIVATE "${PROJECT_SOURCE_DIR}/src" "${dir}")
    target_link_libraries(${target} PRIVATE
      ember_module ember_backends ember_kernels_portable ember_core ember_npy)
    # Tests of the LLM extension (tests/c/llm) link it too.
    if(sub MATCHES "^llm" AND TARGET ember_llm)
      target_link_libraries(${target} PRIVATE ember_llm)
    endif()
    ember_set_warnings(${target})

    add_test(NAME "${test_name}" COMMAND ${target})
    set(labels "c")
    if(sub)
      list(APPEND labels "${sub}")
    endif()
    set_tests_properties("${test_name}" PROPERTIES
      WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
      LABELS "${labels}"
      TIMEOUT 600
      ENVIRONMENT "EMBER_SOURCE_DIR=${PROJECT_SOURCE_DIR};EMBER_BINARY_DIR=${PROJECT_BINARY_DIR}")
  endforeach()
  # The longest test starts first (a fresh build has no timings for ctest
  # to order by), so the others run beside it rather than after it.
  if(TEST test_corruption)
    set_tests_properties(test_corruption PROPERTIES COST 1000)
  endif()
endfunction()

# ember_expect_run(<name> RC <code> [STDERR <regex>] [STDOUT <regex>] COMMAND <args...>)
function(ember_expect_run name)
  cmake_parse_arguments(E "" "RC;STDERR;STDOUT" "COMMAND" ${ARGN})
  # ctest would split a list argument: pass the command joined by "<|>".
  string(REPLACE ";" "<|>" cmd "${E_COMMAND}")
  add_test(NAME "${name}"
           COMMAND "${CMAKE_COMMAND}"
             "-DCMD=${cmd}" "-DRC=${E_RC}"
             "-DSTDERR=${E_STDERR}" "-DSTDOUT=${E_STDOUT}"
             -P "${PROJECT_SOURCE_DIR}/cmake/ExpectRun.cmake")
  set_tests_properties("${name}" PROPERTIES
    WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
    LABELS "cli"
    TIMEOUT 300)
endfunction()

function(ember_add_cli_tests)
  set(run "$<TARGET_FILE:ember-run>")
  set(fx "${PROJECT_SOURCE_DIR}/tests/fixtures")
  set(out "${PROJECT_BINARY_DIR}/cli-out")
  set(err "^ember-run: error: ")

  ember_expect_run(cli/usage_no_args RC 2 STDERR "${err}"
                   COMMAND ${run})
  ember_expect_run(cli/usage_unknown_option RC 2 STDERR "${err}.*--bogus"
                   COMMAND ${run} "${fx}/mlp.pte" --bogus)
  ember_expect_run(cli/usage_bad_iterations RC 2 STDERR "${err}.*iterations"
                   COMMAND ${run} "${fx}/mlp.pte" --iterations 0)
  ember_expect_run(cli/help RC 0 STDOUT "usage: ember-run"
                   COMMAND ${run} --help)
  ember_expect_run(cli/list_ops RC 0
                   STDOUT "^aten::addmm\\.out.aten::permute_copy\\.out.aten::relu\\.out.$"
                   COMMAND ${run} --list-ops "${fx}/mlp.pte")
  ember_expect_run(cli/list_ops_bad_method RC 1 STDERR "${err}.*no method 'nope'"
                   COMMAND ${run} --list-ops "${fx}/mlp.pte" --method nope)
  ember_expect_run(cli/usage_list_ops_with_input RC 2 STDERR "${err}--list-ops takes only"
                   COMMAND ${run} --list-ops "${fx}/mlp.pte" --iterations 2)
  ember_expect_run(cli/missing_file RC 1 STDERR "${err}.*does-not-exist.pte"
                   COMMAND ${run} "${PROJECT_BINARY_DIR}/does-not-exist.pte")
  # Not a program: the runtime must reject it with a status, not a signal.
  ember_expect_run(cli/not_a_program RC 1 STDERR "${err}"
                   COMMAND ${run} "${PROJECT_SOURCE_DIR}/CMakeLists.txt")
  ember_expect_run(cli/missing_input_file RC 1 STDERR "${err}.*nope.npy"
                   COMMAND ${run} "${fx}/mlp.pte" --input "${PROJECT_BINARY_DIR}/nope.npy")
  ember_expect_run(cli/bad_npy RC 1 STDERR "${err}.*npy"
                   COMMAND ${run} "${fx}/mlp.pte" --input "${PROJECT_SOURCE_DIR}/CMakeLists.txt")
  ember_expect_run(cli/unknown_method RC 1 STDERR "${err}.*nosuchmethod"
                   COMMAND ${run} "${fx}/mlp.pte" --method nosuchmethod)

  # Runs on the fixtures (need the core and kernels to work).
  ember_expect_run(cli/run_mlp RC 0 STDOUT "output 0"
                   COMMAND ${run} "${fx}/mlp.pte" --iterations 3)
  ember_expect_run(cli/run_mlp_input RC 0 STDOUT "output 0"
                   COMMAND ${run} "${fx}/mlp.pte"
                           --input "${fx}/mlp/forward.run0.in0.npy"
                           --output-dir "${out}/mlp")
  # Traces: an ETDump (and debug buffer) of a delegated program, a trace
  # buffer too small (a warning, not a failure); bad options. Without the
  # tracer in the build, --etdump fails with a clean error.
  if(EMBER_EVENT_TRACER)
    ember_expect_run(cli/etdump RC 0 STDOUT "etdump: .*runs.*debug buffer: "
                     COMMAND ${run} "${fx}/xnnpack_cnn.pte" --threads 1 --iterations 2
                             --etdump "${PROJECT_BINARY_DIR}/cli-xnnpack_cnn.etdp" --debug-outputs)
    ember_expect_run(cli/etdump_full RC 0 STDERR "warning: event tracer: .*dropped"
                     COMMAND ${run} "${fx}/mlp.pte" --iterations 200
                             --etdump "${PROJECT_BINARY_DIR}/cli-mlp_full.etdp" --trace-bytes 4096)
  else()
    ember_expect_run(cli/etdump_not_built RC 1 STDERR "${err}.*not in this build"
                     COMMAND ${run} "${fx}/mlp.pte" --etdump "${PROJECT_BINARY_DIR}/cli-x.etdp")
  endif()
  ember_expect_run(cli/debug_outputs_without_etdump RC 2 STDERR "${err}.*--etdump"
                   COMMAND ${run} "${fx}/mlp.pte" --debug-outputs)
  ember_expect_run(cli/etdump_bad_mode RC 2 STDERR "${err}.*full or stats"
                   COMMAND ${run} "${fx}/mlp.pte" --etdump "${PROJECT_BINARY_DIR}/cli-x.etdp" --debug-outputs=most)
  # Weights in a .ptd data file: runs with it, names the missing tensor without.
  ember_expect_run(cli/run_ext_mlp_data RC 0 STDOUT "output 0"
                   COMMAND ${run} "${fx}/ext_mlp.pte" --data "${fx}/ext_mlp.ptd")
  ember_expect_run(cli/ext_mlp_no_data RC 1 STDERR "${err}.*'0.weight'.*no data map"
                   COMMAND ${run} "${fx}/ext_mlp.pte")
  ember_expect_run(cli/bad_data_file RC 1 STDERR "${err}.*data file.*mlp.pte.*FT01"
                   COMMAND ${run} "${fx}/ext_mlp.pte" --data "${fx}/mlp.pte")

  # Bundled programs (written by the reference serializer): every case passes;
  # --model runs the program inside; a .pte is no bundled program.
  ember_expect_run(cli/bundled_pass RC 0 STDOUT "forward case 1: pass.*4 of 4 cases passed"
                   COMMAND ${run} --bundled "${fx}/two_methods.bpte" --atol 1e-6)
  ember_expect_run(cli/bundled_xnnpack RC 0 STDOUT "2 of 2 cases passed"
                   COMMAND ${run} --bundled "${fx}/xnnpack_cnn.bpte" --atol 1e-6 --threads 2)
  ember_expect_run(cli/bundled_as_model RC 0 STDOUT "bundled.*output 0"
                   COMMAND ${run} --model "${fx}/two_methods.bpte" --method decode)
  ember_expect_run(cli/bundled_not_bundled RC 1 STDERR "${err}loading bundled.*BP08"
                   COMMAND ${run} --bundled "${fx}/mlp.pte")
  ember_expect_run(cli/bundled_bad_tolerance RC 2 STDERR "${err}.*--atol"
                   COMMAND ${run} --bundled "${fx}/two_methods.bpte" --atol -1)

  # ember-llm: usage, the tokenizer alone, and error lines (generation is
  # compared with PyTorch in tests/python/test_llm_runner.py).
  set(llm "$<TARGET_FILE:ember-llm>")
  set(llm_err "^ember-llm: error: ")
  set(tok "${PROJECT_SOURCE_DIR}/examples/nanogpt/tokenizer")
  ember_expect_run(cli/llm_help RC 0 STDOUT "usage: ember-llm"
                   COMMAND ${llm} --help)
  ember_expect_run(cli/llm_no_tokenizer RC 2 STDERR "${llm_err}.*--tokenizer"
                   COMMAND ${llm} --model "${fx}/mlp.pte" --prompt hi)
  ember_expect_run(cli/llm_bad_option RC 2 STDERR "${llm_err}.*--top-p"
                   COMMAND ${llm} --tokenizer "${tok}" --model "${fx}/mlp.pte" --top-p 2)
  ember_expect_run(cli/llm_weight_cache_no_dir RC 2 STDERR "${llm_err}.*--weight-cache needs a value"
                   COMMAND ${llm} --tokenizer "${tok}" --model "${fx}/mlp.pte" --weight-cache)
  ember_expect_run(cli/llm_prompt_and_ids RC 2 STDERR "${llm_err}.*--prompt or --prompt-ids"
                   COMMAND ${llm} --model "${fx}/mlp.pte" --prompt hi --prompt-ids "1 2")
  ember_expect_run(cli/llm_bad_prompt_ids RC 2 STDERR "${llm_err}.*--prompt-ids wants token ids"
                   COMMAND ${llm} --model "${fx}/transformer.pte" --prompt-ids "1 x")
  ember_expect_run(cli/llm_ids_not_a_model RC 1 STDERR "${llm_err}.*input 0 must be tokens"
                   COMMAND ${llm} --model "${fx}/mlp.pte" --prompt-ids "1 2")
  ember_expect_run(cli/llm_missing_tokenizer RC 1 STDERR "${llm_err}.*no-such-tokenizer"
                   COMMAND ${llm} --tokenizer "${PROJECT_BINARY_DIR}/no-such-tokenizer" --encode hi)
  if(EXISTS "${tok}/vocab.json")
    ember_expect_run(cli/llm_encode RC 0 STDOUT "^[0-9]+( [0-9]+)+"
                     COMMAND ${llm} --tokenizer "${tok}" --encode "It's 12 o'clock,  cafe!")
    ember_expect_run(cli/llm_missing_model RC 1 STDERR "${llm_err}.*does-not-exist.pte"
                     COMMAND ${llm} --tokenizer "${tok}" --model "${PROJECT_BINARY_DIR}/does-not-exist.pte"
                             --prompt hi)
    ember_expect_run(cli/llm_not_a_model RC 1 STDERR "${llm_err}.*input 0 must be tokens"
                     COMMAND ${llm} --tokenizer "${tok}" --model "${fx}/mlp.pte" --prompt hi)
    ember_expect_run(cli/llm_bad_data_file RC 1 STDERR "${llm_err}.*data file.*mlp.pte.*FT01"
                     COMMAND ${llm} --tokenizer "${tok}" --model "${fx}/ext_mlp.pte"
                             --data "${fx}/mlp.pte" --prompt hi)
  endif()
endfunction()

function(ember_add_package_test)
  add_test(NAME package/install
           COMMAND "${CMAKE_COMMAND}"
             "-DBIN=${PROJECT_BINARY_DIR}" "-DSRC=${PROJECT_SOURCE_DIR}"
             "-DWORK=${PROJECT_BINARY_DIR}/package-test" "-DCC=${CMAKE_C_COMPILER}"
             "-DMODEL=${PROJECT_SOURCE_DIR}/tests/fixtures/mlp.pte"
             -P "${PROJECT_SOURCE_DIR}/cmake/PackageTest.cmake")
  set_tests_properties(package/install PROPERTIES LABELS "package" TIMEOUT 300)
endfunction()
