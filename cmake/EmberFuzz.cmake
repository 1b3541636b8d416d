# The libFuzzer target, built when EMBER_FUZZ=ON and the harness exists.
set(EMBER_FUZZ_HARNESS "${PROJECT_SOURCE_DIR}/tests/fuzz/fuzz_program.c")
if(EXISTS "${EMBER_FUZZ_HARNESS}")
  add_executable(fuzz_program "${EMBER_FUZZ_HARNESS}")
  target_include_directories(fuzz_program PRIVATE "${PROJECT_SOURCE_DIR}/src")
  target_link_libraries(fuzz_program PRIVATE ember_backends ember_kernels_portable ember_core)
  target_link_options(fuzz_program PRIVATE -fsanitize=fuzzer)
  ember_set_warnings(fuzz_program)
else()
  message(STATUS "ember: ${EMBER_FUZZ_HARNESS} not found; no fuzz target")
endif()

# The tokenizer of the LLM extension (tests/fuzz/fuzz_tokenizer.c): vocab.json,
# merges.txt and text to encode, from the fuzzer.
set(EMBER_FUZZ_TOKENIZER "${PROJECT_SOURCE_DIR}/tests/fuzz/fuzz_tokenizer.c")
if(EXISTS "${EMBER_FUZZ_TOKENIZER}" AND TARGET ember_llm)
  add_executable(fuzz_tokenizer "${EMBER_FUZZ_TOKENIZER}")
  target_link_libraries(fuzz_tokenizer PRIVATE ember_llm)
  target_link_options(fuzz_tokenizer PRIVATE -fsanitize=fuzzer)
  ember_set_warnings(fuzz_tokenizer)
endif()
