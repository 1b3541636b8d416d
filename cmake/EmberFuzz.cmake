# The libFuzzer targets (EMBER_FUZZ=ON, clang), each built when its harness
# exists under tests/fuzz:
#   fuzz_program    a .pte program from the fuzzer's bytes (with the
#                   fixtures' .ptd data maps)
#   fuzz_data_map   a .ptd data map from the fuzzer's bytes, run with the
#                   fixture programs that need one
#   fuzz_xnnpack    an XNNPACK delegate payload from the fuzzer's bytes, in
#                   place of xnnpack_cnn.pte's
#   fuzz_tokenizer  the LLM extension's tokenizer (below)
foreach(target fuzz_program fuzz_data_map fuzz_xnnpack)
  set(harness "${PROJECT_SOURCE_DIR}/tests/fuzz/${target}.c")
  if(EXISTS "${harness}")
    add_executable(${target} "${harness}")
    target_include_directories(${target} PRIVATE "${PROJECT_SOURCE_DIR}/src")
    target_link_libraries(${target} PRIVATE ember_backends ember_kernels_portable ember_core)
    target_link_options(${target} PRIVATE -fsanitize=fuzzer)
    ember_set_warnings(${target})
  else()
    message(STATUS "ember: ${harness} not found; no ${target}")
  endif()
endforeach()

# The LLM extension's text inputs (tests/fuzz/fuzz_tokenizer.c): tokenizer
# files of every format, text to encode, chat templates, JSON, regex patterns.
set(EMBER_FUZZ_TOKENIZER "${PROJECT_SOURCE_DIR}/tests/fuzz/fuzz_tokenizer.c")
if(EXISTS "${EMBER_FUZZ_TOKENIZER}" AND TARGET ember_llm)
  add_executable(fuzz_tokenizer "${EMBER_FUZZ_TOKENIZER}")
  target_link_libraries(fuzz_tokenizer PRIVATE ember_llm)
  target_link_options(fuzz_tokenizer PRIVATE -fsanitize=fuzzer)
  ember_set_warnings(fuzz_tokenizer)
endif()
