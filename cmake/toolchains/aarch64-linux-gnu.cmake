# Cross-compiles ember for 64-bit Arm Linux with Debian's gcc-aarch64-linux-gnu:
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
# The optimized kernels then use the NEON micro-kernels (*_neon.c). Where
# user-mode QEMU is installed, ctest runs the test programs under it.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

find_program(EMBER_QEMU_AARCH64 qemu-aarch64)
if(EMBER_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${EMBER_QEMU_AARCH64};-L;/usr/aarch64-linux-gnu")
endif()
