#!/usr/bin/env bash
# tests/images/build.sh - build the local Debian systemd test host images (`make images`).
#
#   local/debian12-systemd:latest   bookworm (systemd 252, python 3.11)
#   local/debian13-systemd:latest   trixie   (systemd 257, python 3.13)
#                                   (both with nftables: vllm_serve fences replica ports with it)
#   local/debian12-systemd-engines:latest, local/debian13-systemd-engines:latest
#                                   the same plus Debian's real docker.io and podman, and
#                                   python3-debian (ansible.builtin.deb822_repository needs
#                                   it), for the host-stack role scenarios: the containers
#                                   stay offline, so these are baked in at build time
#
# Docker Hub is unreachable, so each image is a root filesystem made by mmdebstrap from
# Debian's mirror, streamed into `docker import`. Every image carries a label with a hash
# of its recipe; an image whose label matches is kept, so the ~45 s build per suite runs
# only when the recipe below changes (or FORCE=1). The import goes to a temporary tag
# first and is retagged only on success, so a failed build never leaves a half image
# under the real tag.
#
# Needs: root, a running docker daemon, mmdebstrap (.ci/run installs and starts them).
# Knobs: SUITES="bookworm trixie", VARIANTS="base engines", FORCE=1,
#        DEBIAN_MIRROR=http://deb.debian.org/debian
#
# Run containers from these images with (see shared docs/test-sandbox.md):
#   --cap-add SYS_ADMIN --security-opt seccomp=unconfined --cgroupns=host
#   -v /sys/fs/cgroup:/sys/fs/cgroup:rw --tmpfs /run --tmpfs /run/lock --tmpfs /tmp
#   --stop-signal SIGRTMIN+3      (--privileged fails on these hosts)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
LOGS=$ROOT/.work/logs
SUITES=${SUITES:-"bookworm trixie"}
VARIANTS=${VARIANTS:-"base engines"}
LABEL=io.llmfleet.test-image.recipe

# ---- the recipe: change anything here and the images are rebuilt
RECIPE_VERSION=1
PACKAGES=systemd,systemd-sysv,python3,python3-apt,sudo,dbus,iproute2,procps,curl,ca-certificates,nftables
# shellcheck disable=SC2016  # the hook's "$1" is expanded by mmdebstrap's shell, not here
MMDEBSTRAP_OPTS=(
  --variant=minbase
  --include="$PACKAGES"
  --aptopt='Acquire::Retries "3"'
  --dpkgopt='path-exclude=/usr/share/man/*'
  --dpkgopt='path-exclude=/usr/share/doc/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright'
  --dpkgopt='path-exclude=/usr/share/locale/*'
  # empty machine-id: systemd makes a fresh one at each container boot
  --customize-hook='rm -f "$1"/var/lib/dbus/machine-id; : > "$1"/etc/machine-id'
)
IMPORT_CHANGES=(
  --change 'CMD ["/lib/systemd/systemd"]'
  --change 'ENV container=docker'
)
# Extra mmdebstrap options per image variant and suite ("base" adds none, so the base
# images keep the recipe hash they had before variants existed). trixie split the docker
# CLI out of docker.io into docker-cli (only recommended there).
variant_opts() {  # variant_opts VARIANT SUITE
  case $1 in
    base)    ;;
    engines) printf '%s\n' --include=docker.io,podman,python3-debian
             case ${2:-} in bookworm) ;; *) printf '%s\n' --include=docker-cli ;; esac ;;
    *)       die "unknown image variant $1 (base, engines)" ;;
  esac
}
# ----

die() { echo "images: ERROR: $*" >&2; exit 1; }

image_tag() {  # image_tag SUITE VARIANT
  local suffix=""
  [ "${2:-base}" = base ] || suffix="-$2"
  case $1 in
    bookworm) echo "local/debian12-systemd$suffix:latest" ;;
    trixie)   echo "local/debian13-systemd$suffix:latest" ;;
    *)        echo "local/debian-$1-systemd$suffix:latest" ;;
  esac
}

build_opts() {  # build_opts VARIANT SUITE: the mmdebstrap options, one per line
  printf '%s\n' "${MMDEBSTRAP_OPTS[@]}"
  variant_opts "$1" "$2"
}

recipe_hash() {  # recipe_hash SUITE VARIANT
  local opts
  mapfile -t opts < <(build_opts "${2:-base}" "$1")
  printf '%s\n' "v$RECIPE_VERSION" "$1" "${opts[@]}" "${IMPORT_CHANGES[@]}" | sha256sum | cut -c1-16
}

build_one() {  # build_one SUITE VARIANT
  local suite=$1 variant=$2 tag recipe tmp old new t0 log opts
  tag=$(image_tag "$suite" "$variant")
  recipe=$(recipe_hash "$suite" "$variant")
  mapfile -t opts < <(build_opts "$variant" "$suite")
  old=$(docker image inspect -f '{{.Id}}' "$tag" 2>/dev/null || true)
  if [ "${FORCE:-0}" != 1 ] && [ -n "$old" ] \
     && [ "$(docker image inspect -f "{{index .Config.Labels \"$LABEL\"}}" "$tag" 2>/dev/null)" = "$recipe" ]; then
    echo "images: $tag up to date (recipe $recipe)"
    return
  fi
  tmp="local/llmfleet-image-build:$suite-$variant-$$"
  log=$LOGS/image-$suite-$variant.log
  t0=$SECONDS
  echo "images: building $tag from Debian $suite (recipe $recipe; log .work/logs/image-$suite-$variant.log)"
  # pipefail: a failing mmdebstrap fails the pipeline even though docker import read a tar.
  if ! mmdebstrap "${opts[@]}" "$suite" - ${DEBIAN_MIRROR:+"$DEBIAN_MIRROR"} 2>"$log" \
       | docker import "${IMPORT_CHANGES[@]}" --change "LABEL $LABEL=$recipe" - "$tmp" >>"$log" 2>&1; then
    docker rmi "$tmp" >/dev/null 2>&1 || true
    tail -25 "$log" >&2
    die "image build for $suite failed; full log: $log"
  fi
  docker tag "$tmp" "$tag"
  docker rmi "$tmp" >/dev/null
  new=$(docker image inspect -f '{{.Id}}' "$tag")
  # The previous build, now untagged; kept if a container still uses it.
  if [ -n "$old" ] && [ "$old" != "$new" ]; then docker rmi "$old" >/dev/null 2>&1 || true; fi
  echo "images: $tag built in $((SECONDS - t0))s ($(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%d MB", $1/1e6}'))"
}

command -v docker >/dev/null || die "no docker CLI (apt-get install docker.io, or run .ci/run)"
docker info >/dev/null 2>&1 || die "docker daemon not reachable (start dockerd; .ci/run does it)"
for v in $VARIANTS; do variant_opts "$v" >/dev/null; done   # an unknown variant stops here
need_build=0
for s in $SUITES; do
  for v in $VARIANTS; do
    [ "$(docker image inspect -f "{{index .Config.Labels \"$LABEL\"}}" "$(image_tag "$s" "$v")" 2>/dev/null)" \
      = "$(recipe_hash "$s" "$v")" ] || need_build=1
  done
done
if [ "$need_build" = 1 ] || [ "${FORCE:-0}" = 1 ]; then
  command -v mmdebstrap >/dev/null || die "mmdebstrap missing (apt-get install mmdebstrap)"
  [ "$(id -u)" = 0 ] || die "mmdebstrap needs root here"
fi
mkdir -p "$LOGS"
for s in $SUITES; do
  for v in $VARIANTS; do build_one "$s" "$v"; done
done
