#!/usr/bin/env bash
# Flash and RAM of the C firmware (firmware-c/, release library, 64-slot ring) as a
# Markdown table row in the format of firmware/footprint.sh, and the stack high-water
# mark the program reports as its last event (needs qemu-system-arm).
#
#   firmware-c/footprint.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
elf="$("$here/build.sh")"
section() { arm-none-eabi-size -A "$elf" | awk -v s="$1" '$1 == s { print $2; found = 1 } END { if (!found) print 0 }'; }
vt=$(section .vector_table); text=$(section .text); rodata=$(section .rodata)
exidx=$(section .ARM.exidx); data=$(section .data); bss=$(section .bss)
ring=$((16#$(arm-none-eabi-nm -S "$elf" | awk '$4 == "ring" { print $2 }')))
# Code from the Rust library: every text symbol not defined by the C files.
c_symbols="main reset_handler fault_handler board_exit board_stack_used board_uart_init board_uart_write board_uart_flush record drain"
lib=0
while read -r size name; do
    case " $c_symbols " in *" $name "*) ;; *) lib=$((lib + 16#$size)) ;; esac
done < <(arm-none-eabi-nm -S "$elf" | awk '$3 ~ /^[Tt]$/ { print $2, $4 }')
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
echo "| configuration | flash (bytes) | of which vector table | static RAM (bytes) | of which the ring | stack used (bytes) |"
echo "|---|---:|---:|---:|---:|---:|"
echo "| C firmware on libtelering_firmware.a (UART frames) | $((vt + text + rodata + exidx + data)) | $vt | $((data + bss)) | $ring | $stack |"
echo
echo "Library code in .text (Rust symbols): $lib bytes"
