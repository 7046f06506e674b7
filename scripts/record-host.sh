#!/usr/bin/env bash
# Records, read-only, what this host shows Cyborg's drivers, as a fixture tree that the tests and
# `cyborg agent probe --replay DIR` replay (src/drivers/host-probe/fixture-host-probe.ts; docs/drivers.md,
# "Recording a host"):
#
#   scripts/record-host.sh OUT_DIR
#
#   OUT_DIR/sys/bus/pci/devices/<addr>/…   the files the drivers read of each PCI function (ids, class,
#                                          uevent, numa_node, sriov_*, link and AER counters, reset_method,
#                                          mdev_supported_types/, qat/, fpga/, fpga_region/, net/ names);
#                                          physfn and virtfn<N> links as directories holding the target's
#                                          uevent; `reset` (write-only) as an empty file, for its presence
#   OUT_DIR/sys/bus/pci/drivers/<drv>/<addr>/   the driver each function is bound to (its `driver` link)
#   OUT_DIR/sys/bus/mdev/devices/<uuid>/   the mediated devices that exist
#   OUT_DIR/sys/class/nvme/nvme<N>/…       model, serial, firmware_rev, device/ (the PCI function's files
#                                          as above), namespace names
#   OUT_DIR/<command line slug>.<ext>       lspci -nnD, lspci -nnkD, nvidia-smi -q -x, nvme list -o json and,
#                                          per controller, nvme smart-log / id-ctrl /dev/nvme<N> -o json
#   OUT_DIR/commands.json                  command line → file, for the replay
#   OUT_DIR/SOURCE                         where and when, and what each command did
#
# Environment: SYSFS_ROOT (default /sys) is the sysfs to read, e.g. a fixture's sys/ in tests;
# TOOLS_PATH (default $PATH) is where lspci, nvidia-smi and nvme are looked for. A missing tool is
# skipped (the replay then sees it as not installed); a failing one is noted in SOURCE.
#
# It writes only under OUT_DIR (which must be new or empty, and not inside SYSFS_ROOT), never writes
# to sysfs, and runs only the read-only forms above. Exit 0 when recorded, 2 on a usage error.
set -euo pipefail
shopt -s nullglob

usage() {
  echo "usage: scripts/record-host.sh OUT_DIR   (env: SYSFS_ROOT=/sys, TOOLS_PATH=\$PATH)" >&2
  exit 2
}
[ $# -eq 1 ] && [ -n "$1" ] || usage
SYS=${SYSFS_ROOT:-/sys}
TOOLS=${TOOLS_PATH-$PATH}
mkdir -p -- "$1"
OUT=$(cd -- "$1" && pwd -P)
if [ -n "$(ls -A -- "$OUT")" ]; then
  echo "record-host: $OUT is not empty; give a new or empty directory" >&2
  exit 2
fi
if [ -d "$SYS" ]; then
  real_sys=$(cd -- "$SYS" && pwd -P)
  case "$OUT/" in "$real_sys"/*)
    echo "record-host: $OUT is inside SYSFS_ROOT ($real_sys)" >&2
    exit 2
    ;;
  esac
fi
NOTES=()

# Every write goes through these three; `rel` is relative to OUT and may not climb out of it.
safe() {
  case "/$1/" in */../* | */./*) echo "record-host: refusing path $1" >&2; return 1 ;; esac
}
put_dir() { safe "$1" && mkdir -p -- "$OUT/$1"; }
put_empty() { safe "$1" && mkdir -p -- "$OUT/$(dirname -- "$1")" && : >"$OUT/$1"; }
# Copies a readable file; one the kernel will not read (write-only attributes) is left out.
put_file() {
  safe "$2" || return 0
  mkdir -p -- "$OUT/$(dirname -- "$2")"
  cat -- "$1" >"$OUT/$2" 2>/dev/null || rm -f -- "$OUT/$2"
}

# Copies a directory's real files and directories; a symbolic link inside it is recorded as an
# empty file of its name (mdev devices/<uuid>), never followed. At most 8 levels deep.
copy_tree() {
  local src=$1 rel=$2 depth=$3 path name
  [ "$depth" -le 8 ] || return 0
  put_dir "$rel"
  for path in "$src"/*; do
    name=${path##*/}
    if [ -L "$path" ]; then put_empty "$rel/$name"
    elif [ -d "$path" ]; then copy_tree "$path" "$rel/$name" $((depth + 1))
    elif [ -f "$path" ]; then put_file "$path" "$rel/$name"
    fi
  done
}

PCI_FILES="vendor device class subsystem_vendor subsystem_device revision numa_node local_cpulist uevent
  modalias driver_override sriov_totalvfs sriov_numvfs sriov_offset sriov_stride sriov_vf_device
  sriov_drivers_autoprobe current_link_speed current_link_width max_link_speed max_link_width
  aer_dev_fatal aer_dev_nonfatal aer_dev_correctable reset_method"

record_pci_function() {
  local dir=$1 rel=$2 f link
  put_dir "$rel"
  for f in $PCI_FILES; do [ -f "$dir/$f" ] && put_file "$dir/$f" "$rel/$f"; done
  [ -e "$dir/reset" ] && put_empty "$rel/reset"
  [ -f "$dir/physfn/uevent" ] && put_file "$dir/physfn/uevent" "$rel/physfn/uevent"
  for link in "$dir"/virtfn*; do
    [ -f "$link/uevent" ] && put_file "$link/uevent" "$rel/${link##*/}/uevent"
  done
  for f in mdev_supported_types qat fpga fpga_region; do
    [ -d "$dir/$f" ] && copy_tree "$dir/$f" "$rel/$f" 1
  done
  for link in "$dir"/net/*; do put_dir "$rel/net/${link##*/}"; done
  if [ -L "$dir/driver" ]; then
    link=$(readlink -- "$dir/driver")
    put_dir "sys/bus/pci/drivers/${link##*/}/${rel##*/}"
  fi
}

pci=0
for dir in "$SYS"/bus/pci/devices/*; do
  if [ -d "$dir" ]; then record_pci_function "$dir" "sys/bus/pci/devices/${dir##*/}"
  else put_file "$dir" "sys/bus/pci/devices/${dir##*/}"
  fi
  pci=$((pci + 1))
done
[ -d "$SYS/bus/pci/devices" ] && put_dir sys/bus/pci/devices
for dir in "$SYS"/bus/mdev/devices/*; do put_dir "sys/bus/mdev/devices/${dir##*/}"; done

controllers=()
for dir in "$SYS"/class/nvme/*; do
  c=${dir##*/}
  rel=sys/class/nvme/$c
  put_dir "$rel"
  for f in model serial firmware_rev; do [ -f "$dir/$f" ] && put_file "$dir/$f" "$rel/$f"; done
  # device: the controller's PCI function (ids, uevent, link and AER counters), through the link.
  for f in $PCI_FILES; do [ -f "$dir/device/$f" ] && put_file "$dir/device/$f" "$rel/device/$f"; done
  for ns in "$dir"/"$c"n*; do put_dir "$rel/${ns##*/}"; done
  case "$c" in nvme[0-9]*) controllers+=("$c") ;; esac
done
[ -d "$SYS/class/nvme" ] && put_dir sys/class/nvme

# Commands: the file is named as fixture-host-probe.ts's commandSlug names it.
COMMANDS=()
run() {
  local ext=$1 tool=$2 bin slug err code
  shift 2
  local line="$tool $*"
  if ! bin=$(PATH=$TOOLS command -v -- "$tool"); then
    NOTES+=("$line: $tool not installed, skipped")
    return 0
  fi
  slug=$(printf '%s' "$line" | sed -E 's/[[:space:]-]+/-/g; s/[^A-Za-z0-9._-]/_/g')
  safe "$slug.$ext" || return 0
  err=$(mktemp "$OUT/.stderr.XXXXXX")
  code=0
  timeout 120 "$bin" "$@" >"$OUT/$slug.$ext" 2>"$err" || code=$?
  if [ "$code" -eq 0 ]; then
    COMMANDS+=("\"$line\": \"$slug.$ext\"")
    NOTES+=("$line: recorded in $slug.$ext")
  else
    rm -f -- "$OUT/$slug.$ext"
    NOTES+=("$line: failed (exit $code): $(head -c 300 "$err" | tr '\n' ' ')")
  fi
  rm -f -- "$err"
}
run txt lspci -nnD
run txt lspci -nnkD
run xml nvidia-smi -q -x
run json nvme list -o json
for c in "${controllers[@]}"; do
  run json nvme smart-log "/dev/$c" -o json
  run json nvme id-ctrl "/dev/$c" -o json
done

{
  printf '{'
  for i in "${!COMMANDS[@]}"; do
    [ "$i" -eq 0 ] || printf ','
    printf '\n  %s' "${COMMANDS[$i]}"
  done
  [ "${#COMMANDS[@]}" -eq 0 ] || printf '\n'
  printf '}\n'
} >"$OUT/commands.json"
{
  echo "Recorded by scripts/record-host.sh on $(uname -n) ($(uname -srm)) at $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "from $SYS: $pci PCI functions, ${#controllers[@]} NVMe controllers."
  printf '%s\n' "${NOTES[@]}"
} >"$OUT/SOURCE"
echo "record-host: recorded $pci PCI functions and ${#controllers[@]} NVMe controllers into $OUT"
printf '  %s\n' "${NOTES[@]}"
