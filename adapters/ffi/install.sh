#!/bin/sh
# Installs libtelering under a prefix the way C libraries are installed, with cargo-c
# (`cargo install cargo-c --locked --version 0.10.24`: the newest cargo-c that builds
# with Rust 1.95; later ones need a newer Rust):
#
#   adapters/ffi/install.sh /usr/local [more `cargo cinstall` options, e.g. --destdir]
#
# puts under the prefix lib/libtelering.so.0.2.0 (SONAME libtelering.so.0) with its
# libtelering.so.0 and libtelering.so links, lib/libtelering.a,
# include/telering/telering.h and telering.hpp, lib/pkgconfig/telering.pc, and the
# CMake package of `find_package(telering)`: lib/cmake/telering/telering-config.cmake
# and telering-config-version.cmake, with the imported targets telering::telering
# (the shared library) and telering::telering_static (the archive, with the system
# libraries it needs). The CMake files name the prefix relative to their own place,
# so a tree installed with --destdir and moved keeps working.
#
# One change to the telering.pc cargo-c generates: it names the library
# `-ltelering`, which a linker resolves to libtelering.so whenever both libraries are
# installed, so `pkg-config --static` would still link the shared one. pkg-config
# --static puts Cflags.private before the libraries and Libs.private after them, so
# `-Wl,-Bstatic ... -ltelering -Wl,-Bdynamic -lpthread ...` takes libtelering.a and
# leaves the system libraries shared. (pkgconf, the pkg-config of Debian, Ubuntu,
# Fedora and Arch, reads Cflags.private; freedesktop's pkg-config 0.29 ignores it.)
set -eu
prefix=${1:?usage: adapters/ffi/install.sh PREFIX [cargo cinstall options]}
shift
cd "$(dirname "$0")/../.."
if ! command -v cargo-cinstall >/dev/null; then
    echo "adapters/ffi/install.sh: cargo-c is not installed; install it with" >&2
    echo "    cargo install cargo-c --locked --version 0.10.24" >&2
    exit 1
fi
destdir=
previous=
for arg in "$@"; do
    case "$previous:$arg" in
    --destdir:*) destdir=$arg ;;
    *:--destdir=*) destdir=${arg#--destdir=} ;;
    esac
    previous=$arg
done
cargo cinstall --release -p telering-ffi --prefix "$prefix" --libdir "$prefix/lib" "$@"
pc="$destdir$prefix/lib/pkgconfig/telering.pc"
# The system libraries libtelering.a needs, as cargo-c found them (before the edit).
libs_private=$(sed -n 's/^Libs.private: //p' "$pc")
version=$(sed -n 's/^Version: //p' "$pc")
sed -i -e 's/^Libs.private: /Libs.private: -Wl,-Bdynamic /' "$pc"
grep -q '^Cflags.private:' "$pc" || echo 'Cflags.private: -Wl,-Bstatic' >>"$pc"

# The CMake package. `-lNAME` of Libs.private becomes NAME, other flags stay as they
# are; -lpthread becomes Threads::Threads, -lc is the C compiler's own.
static_libs="Threads::Threads"
for flag in $libs_private; do
    case $flag in
    -lpthread | -lc) ;;
    -l*) static_libs="$static_libs;${flag#-l}" ;;
    *) static_libs="$static_libs;$flag" ;;
    esac
done
pointer_size=$(($(getconf LONG_BIT) / 8))
cmake_dir="$destdir$prefix/lib/cmake/telering"
mkdir -p "$cmake_dir"
cat >"$cmake_dir/telering-config.cmake" <<CMAKE
# libtelering $version, installed by adapters/ffi/install.sh:
#
#   find_package(telering 0.2 REQUIRED)
#   target_link_libraries(agent PRIVATE telering::telering)         # libtelering.so.0
#   target_link_libraries(agent PRIVATE telering::telering_static)  # libtelering.a
#
# The components \`shared\` and \`static\` name the two; both are always installed.
include(CMakeFindDependencyMacro)
find_dependency(Threads)
get_filename_component(_telering_prefix "\${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT TARGET telering::telering)
    add_library(telering::telering SHARED IMPORTED)
    set_target_properties(telering::telering PROPERTIES
        IMPORTED_LOCATION "\${_telering_prefix}/lib/libtelering.so.$version"
        IMPORTED_SONAME "libtelering.so.0"
        INTERFACE_INCLUDE_DIRECTORIES "\${_telering_prefix}/include/telering")
endif()
if(NOT TARGET telering::telering_static)
    add_library(telering::telering_static STATIC IMPORTED)
    set_target_properties(telering::telering_static PROPERTIES
        IMPORTED_LOCATION "\${_telering_prefix}/lib/libtelering.a"
        IMPORTED_LINK_INTERFACE_LANGUAGES "C"
        INTERFACE_INCLUDE_DIRECTORIES "\${_telering_prefix}/include/telering"
        INTERFACE_LINK_LIBRARIES "$static_libs")
endif()
foreach(_telering_component IN LISTS telering_FIND_COMPONENTS)
    if(_telering_component STREQUAL "shared" OR _telering_component STREQUAL "static")
        set(telering_\${_telering_component}_FOUND TRUE)
    else()
        set(telering_\${_telering_component}_FOUND FALSE)
        if(telering_FIND_REQUIRED_\${_telering_component})
            set(telering_FOUND FALSE)
            set(telering_NOT_FOUND_MESSAGE
                "telering has no component \${_telering_component} (it has shared and static)")
        endif()
    endif()
endforeach()
unset(_telering_component)
unset(_telering_prefix)
CMAKE
# The same major version is compatible (the SONAME keeps the major version alone),
# and the installed version at least the one asked for.
cat >"$cmake_dir/telering-config-version.cmake" <<CMAKE
set(PACKAGE_VERSION "$version")
if(PACKAGE_FIND_VERSION STREQUAL "")
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
elseif(PACKAGE_FIND_VERSION_MAJOR STREQUAL "${version%%.*}"
        AND NOT PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION)
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
    if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
        set(PACKAGE_VERSION_EXACT TRUE)
    endif()
else()
    set(PACKAGE_VERSION_COMPATIBLE FALSE)
endif()
if(NOT CMAKE_SIZEOF_VOID_P STREQUAL "" AND NOT CMAKE_SIZEOF_VOID_P STREQUAL "$pointer_size")
    set(PACKAGE_VERSION "$version ($((pointer_size * 8))-bit)")
    set(PACKAGE_VERSION_UNSUITABLE TRUE)
endif()
CMAKE
