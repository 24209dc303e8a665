#!/usr/bin/env bash
# Builds the C firmware: libtelering_firmware.a for thumbv7m-none-eabi (release, with
# the Rust firmware's size settings: opt-level z, LTO, one codegen unit, panic=abort),
# then main.c and its board files with Debian's arm-none-eabi-gcc, linked against it.
#
#   firmware-c/build.sh             # prints the ELF's path
#   firmware-c/build.sh continuous     # continuous mode (continuous.c), link format
#                                      # version 2: its own ELF
#   firmware-c/build.sh continuous-v1  # the same with version-1 frames
#
# Continuous mode takes from the environment: TELERING_FW_RATE (events/s, default
# 1000), TELERING_FW_AGENT (the hello's agent name, default c-fw),
# TELERING_FW_CLOCK_PPM (clock error in parts per million, default 0), and
# TELERING_FW_ELF (the ELF's name under firmware-c/target, so that variants built
# side by side do not overwrite each other).
#
# Needs: rustup target thumbv7m-none-eabi, gcc-arm-none-eabi.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
out="$here/target"
mkdir -p "$out"

# Its own target directory: these profile settings must not rebuild the workspace's.
(cd "$root" && CARGO_PROFILE_RELEASE_OPT_LEVEL=z CARGO_PROFILE_RELEASE_LTO=true \
    CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 CARGO_PROFILE_RELEASE_PANIC=abort \
    CARGO_PROFILE_RELEASE_DEBUG=2 \
    cargo rustc --quiet --release -p telering-ffi-baremetal --target thumbv7m-none-eabi --crate-type staticlib \
        --target-dir "$out/cargo" >&2)
lib="$out/cargo/thumbv7m-none-eabi/release/libtelering_firmware.a"

program=main
name=firmware-c
defines=()
case "${1:-}" in
    continuous | continuous-v1)
        program=continuous
        name="${TELERING_FW_ELF:-firmware-c-$1}"
        defines=(-DTELERING_FW_RATE="${TELERING_FW_RATE:-1000}"
                 -DTELERING_FW_CLOCK_PPM="${TELERING_FW_CLOCK_PPM:-0}"
                 -DTELERING_FW_AGENT="\"${TELERING_FW_AGENT:-c-fw}\"")
        [ "$1" = continuous-v1 ] && defines+=(-DTELERING_FW_LINK_V1)
        ;;
    "") ;;
    *) echo "build.sh: unknown mode '$1' (continuous, continuous-v1)" >&2; exit 2 ;;
esac
arm-none-eabi-gcc -mcpu=cortex-m3 -mthumb -std=c11 -Os -g -Wall -Wextra -Werror \
    -ffunction-sections -fdata-sections -ffreestanding -nostdlib \
    -I "$root/adapters/ffi-baremetal/include" ${defines[@]+"${defines[@]}"} \
    "$here/startup.c" "$here/uart.c" "$here/$program.c" "$lib" \
    -T "$here/lm3s6965.ld" -Wl,--gc-sections -Wl,-z,noexecstack -Wl,-Map="$out/$name.map" \
    -o "$out/$name.elf"
echo "$out/$name.elf"
