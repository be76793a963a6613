# Cross build for aarch64 Linux on an x86-64 Debian 12 host (`make test-aarch64`).
#
#   packages:  g++-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user (scripts/setup.sh)
#   configure: cmake -S . -B build-aarch64 -G Ninja \
#                -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
#
# ctest runs every test binary through CMAKE_CROSSCOMPILING_EMULATOR: qemu-aarch64 in user mode,
# which translates the aarch64 instructions and passes system calls to the host kernel. A test
# that executes another aarch64 program of the build puts the same emulator in front of it
# (HUSH_TEST_EMULATOR, tests/emulated_exec.h): binfmt_misc is often missing in containers.
# GoogleTest is not in the cross sysroot: the top-level CMakeLists.txt builds it from Debian's
# source package (/usr/src/googletest) when CMAKE_CROSSCOMPILING.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(HUSH_AARCH64_TRIPLE aarch64-linux-gnu)
set(HUSH_AARCH64_SYSROOT /usr/${HUSH_AARCH64_TRIPLE})

set(CMAKE_C_COMPILER ${HUSH_AARCH64_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${HUSH_AARCH64_TRIPLE}-g++)
set(CMAKE_ASM_COMPILER ${HUSH_AARCH64_TRIPLE}-gcc)

# Libraries and headers come from the cross sysroot only; programs (python3, protoc) from the host.
set(CMAKE_FIND_ROOT_PATH ${HUSH_AARCH64_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

set(CMAKE_CROSSCOMPILING_EMULATOR /usr/bin/qemu-aarch64 -L ${HUSH_AARCH64_SYSROOT})
