#!/usr/bin/env bash
# Installs clustersim's build and test dependencies from Debian 12 packages (root or sudo).
set -euo pipefail
packages=(build-essential cmake pkg-config libsimgrid-dev libyaml-cpp-dev libspdlog-dev
          libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev libcli11-dev libboost-dev
          libjemalloc-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
