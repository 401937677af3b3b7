# Cross build for 64-bit Arm Linux with Debian's aarch64 toolchain and multiarch :arm64 -dev packages.
#
#   cmake -S . -B build-arm -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake \
#         -DCMAKE_BUILD_TYPE=RelWithDebInfo
#
# Needs g++-aarch64-linux-gnu, qemu-user and the :arm64 -dev packages (scripts/arm-conformance.sh
# installs them; docs/arm.md). Binaries run through qemu-aarch64, which CMake uses as the emulator
# for gtest_discover_tests and ctest (binfmt_misc is not available in containers).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(BACKPLANE_ARM_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${BACKPLANE_ARM_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${BACKPLANE_ARM_TRIPLE}-g++)

# Debian multiarch: the :arm64 -dev packages live in /usr/lib/aarch64-linux-gnu and
# /usr/include/aarch64-linux-gnu; the cross libc/libstdc++/libgomp in /usr/aarch64-linux-gnu.
# This also makes the main CMakeLists.txt look for OpenBLAS in
# /usr/lib/aarch64-linux-gnu/openblas-openmp/cmake/openblas.
set(CMAKE_LIBRARY_ARCHITECTURE ${BACKPLANE_ARM_TRIPLE})
set(CMAKE_FIND_ROOT_PATH /usr/${BACKPLANE_ARM_TRIPLE} /usr)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)   # host tools (ccache, python)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# Run target binaries (gtest discovery at build time, ctest) through qemu-aarch64.
# Sysroot: the :arm64 -dev packages pull in Debian's multiarch libc6:arm64, whose loader is
# /lib/ld-linux-aarch64.so.1; then qemu runs without -L and loader, libc, libstdc++ and libgomp all
# come from the multiarch packages. Do NOT use `-L /usr/aarch64-linux-gnu` in that case: qemu takes
# the loader from there (libc6-arm64-cross, 2.36-8cross1) but the loader finds libc.so.6 in
# /lib/aarch64-linux-gnu (libc6:arm64, 2.36-9+deb12u14); the mismatched pair hangs in the first
# pthread_create (a spin in its stack-cache walk), so every OpenMP region hangs. Only without the
# multiarch libc does -L /usr/aarch64-linux-gnu make sense (single-threaded programs).
find_program(BACKPLANE_QEMU_AARCH64 qemu-aarch64)
if(BACKPLANE_QEMU_AARCH64)
  if(EXISTS /lib/ld-linux-aarch64.so.1)
    set(CMAKE_CROSSCOMPILING_EMULATOR ${BACKPLANE_QEMU_AARCH64})
  else()
    set(CMAKE_CROSSCOMPILING_EMULATOR ${BACKPLANE_QEMU_AARCH64};-L;/usr/${BACKPLANE_ARM_TRIPLE})
  endif()
endif()

# aarch64-linux-gnu-g++ 12.2 has an internal compiler error at -O3 in the loop vectorizer
# (vect_transform_reduction, tree-vect-loop.cc:7457) on std::fmax reductions. Highway kernels do not
# rely on the auto-vectorizer, so a Release cross build (the main CMakeLists.txt's default) keeps
# -O3 without it; CMake appends its "-O3 -DNDEBUG", and an explicit -f flag wins over -O3.
# scripts/arm-conformance.sh builds RelWithDebInfo (-O2 -g), which is not affected.
set(CMAKE_C_FLAGS_RELEASE_INIT "-fno-tree-loop-vectorize")
set(CMAKE_CXX_FLAGS_RELEASE_INIT "-fno-tree-loop-vectorize")
