#!/usr/bin/env bash
# What `deploy/compose.yaml` needs on a machine whose network reaches Debian's packages but not
# Docker Hub: Debian's Docker engine, started if none runs, and the one base image every image here
# starts from, `debian:bookworm-slim`, made from a Debian root by debootstrap (the same minimal
# bookworm the official image is) and `docker import`. The images of PostgreSQL and nginx are
# built on it by `stand-ins.yaml`. Idempotent: run it again and it only checks.
set -euo pipefail
cd "$(dirname "$0")"

if ! docker info >/dev/null 2>&1; then
  mkdir -p ../../target
  echo "starting dockerd (its log: target/dockerd.log)"
  nohup dockerd >../../target/dockerd.log 2>&1 &
  for _ in $(seq 100); do
    docker info >/dev/null 2>&1 && break
    sleep 0.3
  done
  docker info >/dev/null || { tail -20 ../../target/dockerd.log >&2; exit 1; }
fi

if ! docker image inspect debian:bookworm-slim >/dev/null 2>&1; then
  root=$(mktemp -d)
  trap 'rm -rf "$root"' EXIT
  debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >/dev/null
  # The official image's cleanups: no package lists nor caches in the layer.
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin
  tar -C "$root" -c . | docker import -c 'CMD ["bash"]' - debian:bookworm-slim
fi
