#!/bin/sh
# Test double (molecule only): a minimal sysfs tree for llmfleet.vllm.gpu_facts and the roles'
# driver checks, in the layout of tests/unit/fixtures/gpu/sysfs-*:
#   fake-sysfs.sh ROOT VENDOR DEVICE DRIVER COUNT [MODULE]
# ROOT/bus/pci/devices/0000-NN-00.0/{vendor,device,class,uevent} for COUNT GPUs bound to DRIVER,
# plus ROOT/module/MODULE when MODULE is given. The tree is rebuilt from scratch.
set -eu
root=$1 vendor=$2 device=$3 driver=$4 count=$5 module=${6:-}
rm -rf "$root"
mkdir -p "$root/bus/pci/devices"
i=0
while [ "$i" -lt "$count" ]; do
  bus=$(printf '%02x' $((i + 24)))
  dir="$root/bus/pci/devices/0000-$bus-00.0"
  mkdir -p "$dir"
  echo "$vendor" > "$dir/vendor"
  echo "$device" > "$dir/device"
  echo 0x030000 > "$dir/class"
  printf 'DRIVER=%s\nPCI_CLASS=30000\nPCI_SLOT_NAME=0000:%s:00.0\n' "$driver" "$bus" > "$dir/uevent"
  i=$((i + 1))
done
if [ -n "$module" ]; then
  mkdir -p "$root/module/$module"
fi
