#!/usr/bin/env bash
# Builds the zerohop image without a network: an OCI image layout holding
# the given zerohop binary, the shared libraries it loads (as ldd lists
# them on this machine: glibc and libgcc) and nothing else, with the same
# entrypoint, command, user, port and labels as the Containerfile. umoci
# (Debian package `umoci`) writes the layout; push it with
# `skopeo copy oci:DIR:TAG docker://REGISTRY/zerohop:TAG`.
#
#   cargo build --release --locked -p zerohop
#   deploy/image/build-offline.sh target/release/zerohop out/zerohop-oci 0.1.0
#
# crates/zerohop/tests/image.rs builds it, unpacks it with umoci and runs
# its entrypoint on a host tree.
set -euo pipefail

if (($# != 3)); then
    echo "usage: $0 BINARY LAYOUT_DIR TAG" >&2
    exit 2
fi
binary=$1
layout=$2
tag=$3

if [[ ! -f $binary || ! -x $binary ]]; then
    echo "error: $binary is not an executable file" >&2
    exit 2
fi
# An OCI tag: letters, digits, '_', '.', '-', at most 128, not starting
# with '.' or '-' (OCI distribution spec, "Pulling manifests").
if [[ ! $tag =~ ^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$ ]]; then
    echo "error: $tag is not an image tag" >&2
    exit 2
fi
if [[ -e $layout ]]; then
    echo "error: $layout exists; give a new directory" >&2
    exit 2
fi
command -v umoci >/dev/null || {
    echo "error: umoci is not installed (apt-get install umoci)" >&2
    exit 2
}

bundle=$(mktemp -d)
trap 'rm -rf -- "$bundle"' EXIT

umoci init --layout "$layout"
umoci new --image "$layout:$tag"
umoci unpack --rootless --image "$layout:$tag" "$bundle/b"
rootfs=$bundle/b/rootfs

install -D -m 0755 -- "$binary" "$rootfs/usr/bin/zerohop"
# Every library ldd resolves (`name => /path (addr)`) and the program
# interpreter (`/lib64/ld-linux-x86-64.so.2 (addr)`), copied to the same
# path, links followed.
ldd "$binary" | while read -r first second third _; do
    if [[ $second == "=>" && $third == /* ]]; then
        path=$third
    elif [[ $first == /* ]]; then
        path=$first
    else
        continue # linux-vdso.so.1, which the kernel provides
    fi
    install -D -m 0755 -- "$(readlink -f -- "$path")" "$rootfs$path"
done
# The agent runs with a read-only root file system and writes nothing in
# it; /host is where the DaemonSet mounts the host, /tmp for a one-shot run.
mkdir -p "$rootfs/host" "$rootfs/tmp"
chmod 1777 "$rootfs/tmp"

umoci repack --image "$layout:$tag" "$bundle/b"
umoci config --image "$layout:$tag" \
    --config.entrypoint /usr/bin/zerohop \
    --config.cmd agent --config.cmd --root --config.cmd /host \
    --config.user 0 \
    --config.exposedports 9477/tcp \
    --config.label org.opencontainers.image.title=zerohop \
    --config.label "org.opencontainers.image.description=Plans, verifies and measures the zero-copy storage to RDMA to GPU data path" \
    --config.label org.opencontainers.image.source=https://github.com/zerohop/zerohop \
    --config.label org.opencontainers.image.licenses=Apache-2.0 \
    --config.label "org.opencontainers.image.version=$tag"
umoci gc --layout "$layout"
echo "built $layout:$tag"
