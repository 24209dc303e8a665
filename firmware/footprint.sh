#!/usr/bin/env bash
# Flash and RAM of the firmware (release build, thumbv7m-none-eabi, 64-slot ring) in
# seven configurations, as a Markdown table: which exporters are linked in changes
# what the program costs. Sizes come from the ELF's section headers (llvm-size from
# the rustup component llvm-tools, or a system llvm-size / arm-none-eabi-size).
# Where the UART exporter is built in and qemu-system-arm is installed, the program
# also runs once, and the stack high-water mark it reports in its last frame
# (`fw_stack_high_water`) is shown. The last column is the flash of the same
# configuration built with feature `minimal`: the fixed sequence replaced by the least
# program (one built-in event, one custom event, one drain, exit), i.e. the cost of
# the core and the exporters without the demo's own code and data (its clock, the
# vector table and the start-up code stay).
#
#   firmware/footprint.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
size_tool=""
for candidate in "$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin/llvm-size" \
                 llvm-size arm-none-eabi-size; do
    if command -v "$candidate" >/dev/null 2>&1; then size_tool="$candidate"; break; fi
done
[ -n "$size_tool" ] || { echo "footprint.sh: no llvm-size; run 'rustup component add llvm-tools'" >&2; exit 1; }
nm_tool="$(dirname "$size_tool")/llvm-nm"
command -v "$nm_tool" >/dev/null 2>&1 || nm_tool=llvm-nm

section() { # ELF, section name -> size in bytes (0 if absent)
    "$size_tool" -A "$1" | awk -v s="$2" '$1 == s { print $2; found = 1 } END { if (!found) print 0 }'
}

# The value of the last frame on the UART: COBS-decode it, the event's value is the
# u64 at offset 6 + 48 of the body.
last_frame_value() {
    python3 - "$1" <<'PY'
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

flash() { # ELF -> bytes of flash: vector table, code, read-only data, .data's image
    echo $(( $(section "$1" .vector_table) + $(section "$1" .text) + $(section "$1" .rodata) + $(section "$1" .data) ))
}

echo "| configuration | flash (bytes) | of which vector table | static RAM (bytes) | of which the ring | stack used (bytes) | flash, minimal program (bytes) |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for config in "frames,defmt-log:both exporters (UART frames + defmt over semihosting)" \
              "frames:core + frame exporter (UART)" \
              "frames,link-v2:core + link format v2 encoder (UART)" \
              "frames,link-v2,defmt-log:v2 encoder + defmt exporter" \
              "defmt-log:core + defmt exporter (semihosting logger)" \
              ":core + recorder only, no exporter" \
              "continuous:continuous mode (v2 encoder, demo mix, totals over semihosting)"; do
    features="${config%%:*}"
    label="${config#*:}"
    target_dir="$here/target/footprint/${features:-none}"
    (cd "$here" && CARGO_TARGET_DIR="$target_dir" cargo build --release --quiet \
        --no-default-features ${features:+--features "$features"} >&2)
    elf="$target_dir/thumbv7m-none-eabi/release/telering-firmware"
    vt=$(section "$elf" .vector_table)
    text=$(section "$elf" .text)
    rodata=$(section "$elf" .rodata)
    data=$(section "$elf" .data)
    bss=$(section "$elf" .bss)
    uninit=$(section "$elf" .uninit)
    ring_hex=$("$nm_tool" -S --demangle "$elf" | awk '/ telering_firmware::RING(::h[0-9a-f]+)?$/ { print $2 }')
    stack="n/a"
    # The stack figure is read from the last version-1 frame.
    if [[ "$features" == *frames* && "$features" != *link-v2* ]] && command -v qemu-system-arm >/dev/null 2>&1; then
        uart="$target_dir/uart.bin"
        timeout 60 qemu-system-arm -machine lm3s6965evb -cpu cortex-m3 -display none \
            -monitor none -nodefaults -net none -serial "file:$uart" \
            -semihosting-config enable=on,target=native -kernel "$elf" >/dev/null 2>&1
        stack=$(last_frame_value "$uart")
    fi
    minimal="n/a"
    if [ "$features" = continuous ]; then
        stack=$(continuous_stack "$elf")
    else
        minimal_features="${features:+$features,}minimal"
        (cd "$here" && CARGO_TARGET_DIR="$target_dir-minimal" cargo build --release --quiet \
            --no-default-features --features "$minimal_features" >&2)
        minimal=$(flash "$target_dir-minimal/thumbv7m-none-eabi/release/telering-firmware")
    fi
    echo "| $label | $((vt + text + rodata + data)) | $vt | $((data + bss + uninit)) | $((16#${ring_hex:-0})) | $stack | $minimal |"
done
