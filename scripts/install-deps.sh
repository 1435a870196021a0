#!/usr/bin/env bash
# install-deps.sh: install what building and testing cudaspy needs, only
# what is missing (one apt-get update + install), and find the CUDA Toolkit
# headers (cuda.h). Idempotent: a second run installs nothing. The package
# list is scripts/deps.txt.
# Exit status: 0 ready, 1 something could not be installed or found.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
deps_file="$here/deps.txt"

say() { printf 'install-deps: %s\n' "$*" >&2; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"
    elif command -v sudo >/dev/null; then sudo "$@"
    else say "need root to run: $*"; return 1
    fi
}

is_installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

# Packages from deps.txt that are missing.
missing_packages() {
    local pkg cmd
    while read -r pkg cmd _; do
        case "$pkg" in ''|'#'*) continue ;; esac
        if [ -n "${cmd:-}" ] && command -v "$cmd" >/dev/null 2>&1; then continue; fi
        is_installed "$pkg" || printf '%s\n' "$pkg"
    done < "$deps_file"
}

apt_updated=0
apt_install() {
    [ "$#" -gt 0 ] || return 0
    if [ "$apt_updated" -eq 0 ]; then
        as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
        apt_updated=1
    fi
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@"
}

# Directory holding cuda.h, or nothing.
cuda_include() {
    local d
    for d in "${CUDA_HOME:+$CUDA_HOME/include}" /usr/local/cuda/include /usr/include; do
        [ -n "$d" ] && [ -f "$d/cuda.h" ] && { printf '%s\n' "$d"; return 0; }
    done
    return 1
}

# Debian ships cuda.h in nvidia-cuda-dev (component non-free): install it if
# apt knows it.
install_cuda_headers() {
    local pkg
    for pkg in nvidia-cuda-dev nvidia-cuda-toolkit-headers; do
        if apt-cache policy "$pkg" 2>/dev/null | grep -q 'Candidate: [^(]'; then
            say "CUDA headers not found; installing $pkg"
            apt_install "$pkg" && return 0
        fi
    done
    return 1
}

main() {
    local missing inc
    command -v dpkg-query >/dev/null || { say "not a Debian system: install by hand the packages in $deps_file"; exit 1; }
    mapfile -t missing < <(missing_packages)
    if [ "${#missing[@]}" -gt 0 ]; then
        say "installing: ${missing[*]}"
        apt_install "${missing[@]}"
    fi
    if ! inc=$(cuda_include); then
        install_cuda_headers || true
        if ! inc=$(cuda_include); then
            say "CUDA Toolkit headers (cuda.h) not found in \$CUDA_HOME/include, /usr/local/cuda/include or /usr/include"
            say "hint: set CUDA_HOME to a CUDA Toolkit, or enable Debian's contrib and non-free components and: apt-get install nvidia-cuda-dev"
            exit 1
        fi
    fi
    say "ready (CUDA headers in $inc)"
}

main "$@"
