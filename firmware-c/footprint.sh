#!/usr/bin/env bash
# Flash and RAM of the C firmware (firmware-c/, release library, 64-slot ring) as
# Markdown table rows in the format of firmware/footprint.sh: the fixed sequence with
# version-1 frames (and the stack high-water mark it reports as its last event; needs
# qemu-system-arm), and continuous mode with version-1 frames and with the library's
# link format version 2 encoder (telering_link_*), so the encoder's cost is the
# difference of the last two rows. Continuous mode's stack figure is the one it prints
# when stopped after a second under QEMU.
#
#   firmware-c/footprint.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
section() { arm-none-eabi-size -A "$1" | awk -v s="$2" '$1 == s { print $2; found = 1 } END { if (!found) print 0 }'; }
# Code from the Rust library: every text symbol not defined by the C files.
c_symbols="main reset_handler fault_handler board_exit board_stack_used board_uart_init board_uart_write board_uart_flush record drain
  clock_init now_us semihost stop_requested print put put_u64 below next_event uart_write send_clock frames_written"
row() { # ELF, label, stack -> one table row; sets lib_code
    local elf="$1" vt text rodata exidx data bss ring
    vt=$(section "$elf" .vector_table); text=$(section "$elf" .text); rodata=$(section "$elf" .rodata)
    exidx=$(section "$elf" .ARM.exidx); data=$(section "$elf" .data); bss=$(section "$elf" .bss)
    ring=$((16#$(arm-none-eabi-nm -S "$elf" | awk '$4 == "ring" { print $2 }')))
    lib_code=0
    while read -r size name; do
        case " $c_symbols " in *" $name "*) ;; *) lib_code=$((lib_code + 16#$size)) ;; esac
    done < <(arm-none-eabi-nm -S "$elf" | awk '$3 ~ /^[Tt]$/ { print $2, $4 }')
    echo "| $2 | $((vt + text + rodata + exidx + data)) | $vt | $((data + bss)) | $ring | $3 | $lib_code |"
}

# The stack high-water mark a continuous-mode ELF prints in its totals after running
# for a second under QEMU ("n/a" without qemu-system-arm).
continuous_stack() {
    command -v qemu-system-arm >/dev/null 2>&1 || { echo n/a; return; }
    local run
    run="$(mktemp -d)"
    (cd "$run" && timeout 60 qemu-system-arm -machine lm3s6965evb -cpu cortex-m3 -display none \
        -monitor none -nodefaults -net none -serial null \
        -semihosting-config enable=on,target=native -kernel "$1" >totals.txt 2>/dev/null) &
    sleep 1
    touch "$run/telering-stop"
    wait
    sed -n 's/^telering totals: .* stack=\([0-9]*\).*/\1/p' "$run/totals.txt"
    rm -rf "$run"
}

elf="$("$here/build.sh")"
stack="n/a"
if command -v qemu-system-arm >/dev/null 2>&1; then
    uart="$(mktemp)"
    "$here/run-qemu.sh" > "$uart" 2>/dev/null
    stack=$(python3 - "$uart" <<'PY'
import struct, sys
chunks = [c for c in open(sys.argv[1], "rb").read().split(b"\0") if c]
enc, out, i = chunks[-1], bytearray(), 0
while i < len(enc):
    code = enc[i]
    out += enc[i + 1:i + code]
    i += code
    if code != 0xFF and i < len(enc):
        out.append(0)
print(struct.unpack_from("<Q", out, 6 + 48)[0])
PY
)
    rm -f "$uart"
fi
v1="$(TELERING_FW_ELF=footprint-continuous-v1 "$here/build.sh" continuous-v1)"
v2="$(TELERING_FW_ELF=footprint-continuous-v2 "$here/build.sh" continuous)"
echo "| configuration | flash (bytes) | of which vector table | static RAM (bytes) | of which the ring | stack used (bytes) | library code in .text (bytes) |"
echo "|---|---:|---:|---:|---:|---:|---:|"
row "$elf" "C firmware, fixed sequence, version-1 frames (UART)" "$stack"
row "$v1" "C firmware, continuous mode, version-1 frames (UART)" "$(continuous_stack "$v1")"
row "$v2" "C firmware, continuous mode, link format v2 (\`telering_link_*\`, UART)" "$(continuous_stack "$v2")"
