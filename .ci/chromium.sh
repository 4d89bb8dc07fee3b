# shellcheck shell=bash
# Sourced by the CI script: makes sure Debian's chromium is installed (apt-get, once) for the dashboard's browser
# tests, and exports AGORA_TEST_CHROMIUM with its path. playwright-core drives it and downloads nothing.
#
#   source .ci/chromium.sh
#
# Written for sourcing: it returns instead of exiting and leaves the caller's shell options alone.

_agora_chromium_path() {
  command -v chromium 2>/dev/null || command -v chromium-browser 2>/dev/null
}

_agora_chromium_install() {
  _agora_chromium_path >/dev/null && return 0
  echo "chromium.sh: installing chromium with apt-get" >&2
  local sudo=''
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
      echo "chromium.sh: chromium is missing, and installing it needs root or sudo" >&2
      return 1
    fi
    sudo='sudo'
  fi
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null &&
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null ||
    { echo "chromium.sh: apt-get install chromium failed" >&2; return 1; }
  _agora_chromium_path >/dev/null
}

if _agora_chromium_install; then
  AGORA_TEST_CHROMIUM=$(_agora_chromium_path)
  export AGORA_TEST_CHROMIUM
  echo "chromium.sh: $AGORA_TEST_CHROMIUM ($("$AGORA_TEST_CHROMIUM" --version 2>/dev/null || echo 'version unknown'))" >&2
else
  return 1 2>/dev/null || exit 1
fi
