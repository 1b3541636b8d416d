# Global sanitizer flags, applied to every target (libraries, tools, tests).
#
# EMBER_SANITIZE=ON: AddressSanitizer + UndefinedBehaviorSanitizer; any report
#   aborts the process (-fno-sanitize-recover=all), so ctest sees a failure.
# EMBER_FUZZ=ON: clang's libFuzzer coverage instrumentation on all code, with
#   ASan + UBSan; the fuzz target itself links -fsanitize=fuzzer (EmberFuzz).
set(EMBER_SANITIZE_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=all
                         -fno-omit-frame-pointer)

if(EMBER_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "ember: EMBER_FUZZ=ON needs clang (configure with CC=clang)")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link ${EMBER_SANITIZE_FLAGS} -g)
  add_link_options(${EMBER_SANITIZE_FLAGS})
  add_compile_definitions(EMBER_SANITIZED=1)
elseif(EMBER_SANITIZE)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "GNU|Clang")
    message(FATAL_ERROR "ember: EMBER_SANITIZE=ON needs gcc or clang")
  endif()
  add_compile_options(${EMBER_SANITIZE_FLAGS})
  add_link_options(${EMBER_SANITIZE_FLAGS})
  # kernels that force their unrolled instantiations inline keep them as
  # calls here (EMBER_SANITIZED): instrumented, forced inline, the attention
  # kernels took clang minutes a file
  add_compile_definitions(EMBER_SANITIZED=1)
endif()
