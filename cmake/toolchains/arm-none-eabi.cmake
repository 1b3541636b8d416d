# Cross-compiles for Arm Cortex-M bare metal with Debian's gcc-arm-none-eabi
# (newlib C library from libnewlib-arm-none-eabi): no OS, no file system.
#   cmake -S examples/baremetal -B build-baremetal \
#         -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/arm-none-eabi.cmake
#
# The default CPU is a Cortex-M7 with its double-precision FPU (QEMU's
# mps2-an500 board); set EMBER_ARM_CPU_FLAGS for another core, e.g.
#   "-mcpu=cortex-m4 -mfpu=fpv4-sp-d16 -mfloat-abi=hard"   (mps2-an386)
#   "-mcpu=cortex-m3 -mfloat-abi=soft"                    (mps2-an385)
# Where qemu-system-arm is installed, EMBER_QEMU_SYSTEM_ARM names it.
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_ASM_COMPILER arm-none-eabi-gcc)
set(CMAKE_AR arm-none-eabi-ar)
set(CMAKE_RANLIB arm-none-eabi-ranlib)
set(CMAKE_SIZE arm-none-eabi-size)
set(CMAKE_OBJCOPY arm-none-eabi-objcopy)
# A bare-metal executable needs a linker script and start-up code, which
# CMake's compiler check cannot supply: check by building a library.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

set(EMBER_ARM_CPU_FLAGS "-mcpu=cortex-m7 -mfpu=fpv5-d16 -mfloat-abi=hard"
    CACHE STRING "Arm core, FPU and float ABI flags")
set(CMAKE_C_FLAGS_INIT "-mthumb ${EMBER_ARM_CPU_FLAGS} -ffunction-sections -fdata-sections")
set(CMAKE_ASM_FLAGS_INIT "-mthumb ${EMBER_ARM_CPU_FLAGS}")
# newlib-nano: the small printf family (no float formatting) and no
# unwinding; the example supplies the few system calls newlib needs.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-mthumb ${EMBER_ARM_CPU_FLAGS} --specs=nano.specs -Wl,--gc-sections")

set(CMAKE_FIND_ROOT_PATH /usr/lib/arm-none-eabi)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

find_program(EMBER_QEMU_SYSTEM_ARM qemu-system-arm)
