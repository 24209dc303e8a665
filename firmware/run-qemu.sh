#!/usr/bin/env bash
# Builds the telering firmware and runs it under QEMU (lm3s6965evb, Cortex-M3).
#
#   firmware/run-qemu.sh [--elf ELF] [UART_OUT [DEFMT_OUT [WINDOW_OUT]]]
#
# Without --elf it builds the firmware (release) first; with it, it runs ELF as
# given (this is how `cargo run` uses it: see .cargo/config.toml).
#
# UART0 carries the event frames: written to UART_OUT, or to stdout when UART_OUT is
# omitted or "-" (pipe it into `telering decode`). The defmt log travels over
# semihosting and is written, still encoded, to DEFMT_OUT (default
# firmware/target/defmt.bin); decode it with the firmware ELF, whose path is
#   firmware/target/thumbv7m-none-eabi/release/telering-firmware
# e.g. `defmt-print -e <ELF> < DEFMT_OUT`. The firmware's memory window (a ring laid
# out by telering-core in raw memory, NIXL header and slots, no trailer) is copied
# over semihosting to WINDOW_OUT (default firmware/target/window.bin); read it with
# telering-shm's readers (or `telering read`).
#
# Needs: rustup target thumbv7m-none-eabi, qemu-system-arm (Debian package
# qemu-system-arm). The firmware exits through semihosting; QEMU's exit status is
# the firmware's (0 on success). QEMU_TIMEOUT (seconds, default 60) bounds the run.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
abspath() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
elf=""
if [ "${1:-}" = "--elf" ]; then
    elf="$(abspath "$2")"
    shift 2
fi
uart_out="${1:--}"
defmt_out="$(abspath "${2:-$here/target/defmt.bin}")"
window_out="$(abspath "${3:-$here/target/window.bin}")"

# The firmware is its own cargo project with its own target directory; a
# CARGO_TARGET_DIR meant for the host workspace must not redirect it.
if [ -z "$elf" ]; then
    (cd "$here" && CARGO_TARGET_DIR="$here/target" cargo build --release --quiet >&2)
    elf="$here/target/thumbv7m-none-eabi/release/telering-firmware"
fi
mkdir -p "$(dirname "$defmt_out")"

if [ "$uart_out" = "-" ]; then
    uart_dev=/dev/fd/3
else
    uart_dev="$(abspath "$uart_out")"
fi
# QEMU runs in a scratch directory: semihosting file names are relative to it.
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# QEMU's own stdout carries the semihosting output (the defmt stream); UART0 goes
# to its own file or to this script's stdout through descriptor 3.
status=0
(cd "$scratch" && timeout "${QEMU_TIMEOUT:-60}" qemu-system-arm \
    -machine lm3s6965evb -cpu cortex-m3 \
    -display none -monitor none -nodefaults -net none \
    -serial "file:$uart_dev" \
    -semihosting-config enable=on,target=native \
    -kernel "$elf" \
    3>&1 >"$defmt_out") || status=$?
if [ -f "$scratch/telering-window.bin" ]; then
    mkdir -p "$(dirname "$window_out")"
    mv "$scratch/telering-window.bin" "$window_out"
fi
exit "$status"
