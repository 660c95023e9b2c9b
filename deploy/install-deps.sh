#!/bin/sh
# Install the Debian packages listed in the given files (default: the build's
# own list) that are not installed yet. Uses sudo when not root.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
[ $# -gt 0 ] || set -- "$here/debian-packages.txt"
missing=""
for pkg in $(cat "$@" | sed 's/#.*//'); do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
    missing="$missing $pkg"
  fi
done
[ -n "$missing" ] || exit 0
echo "installing Debian packages:$missing"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing
