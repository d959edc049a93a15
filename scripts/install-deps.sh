#!/usr/bin/env bash
# Installs what building and testing dsa needs on Debian 12, only when something is missing.
set -euo pipefail
pkgs=(cmake ninja-build g++ ccache lld llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
      nlohmann-json3-dev libgtest-dev libbenchmark-dev libomp-dev libssl-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
