#!/usr/bin/env bash
# Builds the C firmware and runs it under QEMU (lm3s6965evb, Cortex-M3). UART0 — the
# event frames — goes to stdout: pipe it into `telering decode`. QEMU's exit status
# is the firmware's (0: every telering call returned what it should).
#
#   firmware-c/run-qemu.sh | telering decode --input -
#
# Needs: what build.sh needs, and qemu-system-arm. QEMU_TIMEOUT (seconds, default 60)
# bounds the run.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
elf="$("$here/build.sh")"
timeout "${QEMU_TIMEOUT:-60}" qemu-system-arm \
    -machine lm3s6965evb -cpu cortex-m3 \
    -display none -monitor none -nodefaults -net none \
    -serial file:/dev/fd/3 \
    -semihosting-config enable=on,target=native \
    -kernel "$elf" 3>&1 >/dev/null
