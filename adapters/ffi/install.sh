#!/bin/sh
# Installs libtelering under a prefix the way C libraries are installed, with cargo-c
# (`cargo install cargo-c --locked`):
#
#   adapters/ffi/install.sh /usr/local [more `cargo cinstall` options, e.g. --destdir]
#
# puts under the prefix lib/libtelering.so.0.2.0 (SONAME libtelering.so.0) with its
# libtelering.so.0 and libtelering.so links, lib/libtelering.a,
# include/telering/telering.h and telering.hpp, and lib/pkgconfig/telering.pc.
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
sed -i -e 's/^Libs.private: /Libs.private: -Wl,-Bdynamic /' "$pc"
grep -q '^Cflags.private:' "$pc" || echo 'Cflags.private: -Wl,-Bstatic' >>"$pc"
