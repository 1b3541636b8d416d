# ember_set_warnings(<target>)
# The house warning set: every target builds clean with these or not at all.
function(ember_set_warnings target)
  if(CMAKE_C_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Werror)
    if(CMAKE_C_COMPILER_ID MATCHES "Clang")
      # The kernels' unroll pragmas are hints: at -O1 clang unrolls no loop
      # whose trip count is known only at run time (a depthwise kernel read
      # from the node), and reports each as a failed transformation.
      target_compile_options(${target} PRIVATE -Wno-pass-failed)
    endif()
  elseif(MSVC)
    target_compile_options(${target} PRIVATE /W4 /WX)
  endif()
endfunction()
