# Cross-compiling for arm64 (aarch64) on a Debian amd64 host, with Debian multiarch:
# crossbuild-essential-arm64 and the ":arm64" development packages of our dependencies
# (scripts/setup --arm64). Used by `scripts/build --target arm64`.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Libraries and packages come from the arm64 multiarch folders only; headers are shared
# (/usr/include) and the programs we run while building are the host's.
# .cache/arm64-sysroot: packages that cannot be installed beside their amd64 version
# (yaml-cpp), unpacked there by scripts/setup --arm64.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu ${CMAKE_CURRENT_LIST_DIR}/../.cache/arm64-sysroot)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# Tests (ctest, and gtest discovery at build time) run the arm64 programs under qemu-user;
# the arm64 shared libraries they load are the multiarch ones (scripts/setup --arm64 installs
# libstdc++6:arm64 for the trim library's tests). Not `-L /usr/aarch64-linux-gnu`: with the
# cross toolchain's libc the unit tests hung at their first thread.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
