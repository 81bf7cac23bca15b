#!/usr/bin/env bash
# Installs and builds everything rtclab needs, and does nothing that is already done, so the npm scripts can run it
# before every command. Debian/Ubuntu, as root (network namespaces and tc need root anyway).
#   bash scripts/setup.sh          # verbose
#   bash scripts/setup.sh --quiet  # only says what it does when it has something to do
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
quiet=false
[ "${1:-}" = "--quiet" ] && quiet=true

say() { echo "setup: $*" >&2; }
fail() { echo "setup: error: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || fail "rtclab needs root (network namespaces, tc, iptables, packet capture); run it as root"

# --- Prerequisites setup cannot install ------------------------------------------------------------------------------
# Checked before anything is installed, so a machine that cannot run rtclab is told so at once, with what to do.
version_at_least() { # VERSION MINIMUM: true when VERSION (a Debian or a plain version string) >= MINIMUM
  dpkg --compare-versions "$1" ge "$2"
}
command -v apt-get >/dev/null && command -v dpkg >/dev/null ||
  fail "setup needs a Debian or Ubuntu host (apt-get, dpkg); on another system install by hand what scripts/setup.sh lists"
# Node: Debian 12's own nodejs is 18; the harness needs 20 (package.json "engines").
command -v node >/dev/null ||
  fail "node not found: install Node.js >= 20 (e.g. NodeSource's nodejs 20 packages; Debian 12's own nodejs is 18)"
node_version=$(node --version | sed 's/^v//')
version_at_least "$node_version" 20 ||
  fail "node $node_version is too old: install Node.js >= 20 (e.g. NodeSource's nodejs 20 packages; Debian 12's own nodejs is 18)"
# Python: the analyzer needs 3.11 (pyproject.toml requires-python); Debian 12 has it, Ubuntu 22.04's 3.10 does not.
command -v python3 >/dev/null || fail "python3 not found: install Python >= 3.11"
python_version=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
version_at_least "$python_version" 3.11 || fail "python3 $python_version is too old: install Python >= 3.11"

# Rust: the crates the lockfiles pin need rustc >= 1.85 (their rust-version: clap 4.6 in netem/bottleneck, pyo3 0.30 in
# analysis/core; a version-4 Cargo.lock needs cargo >= 1.78). Debian 12's rustc/cargo are 1.63, its rustc-web/cargo-web
# (the toolchain Debian builds its browsers with) 1.85 or later: setup installs whichever pair is new enough.
rust_minimum=1.85
rust_packages=()
apt_candidate() { apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ { print $2 }'; }
if command -v cargo >/dev/null && command -v rustc >/dev/null; then
  rustc_version=$(rustc --version | awk '{ print $2 }')
  cargo_version=$(cargo --version | awk '{ print $2 }')
  version_at_least "$rustc_version" "$rust_minimum" && version_at_least "$cargo_version" "$rust_minimum" ||
    fail "rustc $rustc_version / cargo $cargo_version are too old: the lockfiles need Rust >= $rust_minimum" \
      "(rustup update; or remove Debian's rustc/cargo and run setup again, which installs a new enough pair when apt has one)"
else
  for pair in "rustc cargo" "rustc-web cargo-web"; do
    read -r rustc_package cargo_package <<<"$pair"
    candidate=$(apt_candidate "$rustc_package")
    if [ -n "$candidate" ] && [ "$candidate" != "(none)" ] && version_at_least "$candidate" "$rust_minimum"; then
      rust_packages=("$rustc_package" "$cargo_package")
      break
    fi
  done
  [ ${#rust_packages[@]} -gt 0 ] ||
    fail "cargo/rustc not found, and apt offers no Rust >= $rust_minimum: install it with rustup (https://rustup.rs)" \
      "and put ~/.cargo/bin on root's PATH"
fi

# Chromium: a real binary, where harness/browser.js looks for it. Ubuntu's chromium and chromium-browser packages only
# install a wrapper around the snap, which cannot be started inside a network namespace with a profile of ours.
is_ubuntu=false
grep -qsE '^(ID|ID_LIKE)=.*ubuntu' /etc/os-release && is_ubuntu=true
chromium_found() { # the first binary browser.js would take, when there is one
  if [ -n "${RTCLAB_CHROMIUM:-}" ]; then [ -x "$RTCLAB_CHROMIUM" ] && echo "$RTCLAB_CHROMIUM"; return 0; fi
  local c
  for c in /usr/lib/chromium/chromium /usr/bin/chromium /usr/bin/google-chrome; do
    [ -x "$c" ] && { echo "$c"; return 0; }
  done
  return 0
}
is_snap_stub() { # PATH: a snap, or a script that starts one
  case "$(readlink -f "$1")" in /snap/*|*/bin/snap) return 0 ;; esac
  grep -Iqs 'snap' "$1"
}
chromium_advice="install Google Chrome's .deb (/usr/bin/google-chrome) or Debian's chromium, or set RTCLAB_CHROMIUM to a Chrome/Chromium binary"
browser=$(chromium_found)
if [ -n "${RTCLAB_CHROMIUM:-}" ] && [ -z "$browser" ]; then
  fail "RTCLAB_CHROMIUM=$RTCLAB_CHROMIUM is not an executable file"
fi
if [ -n "$browser" ] && is_snap_stub "$browser"; then
  fail "$browser is a snap (Ubuntu's chromium packages install only a wrapper around the snap), which cannot run in a" \
    "network namespace: $chromium_advice"
fi
if $is_ubuntu && [ -z "$browser" ]; then
  fail "no Chrome/Chromium binary, and Ubuntu's chromium package is only a wrapper around the snap: $chromium_advice"
fi

# --- Debian packages ------------------------------------------------------------------------------------------------
apt_packages=(tshark tcpdump iperf3 ffmpeg nftables iptables ethtool iputils-ping iproute2
  libnetfilter-queue-dev libmnl-dev pkg-config build-essential python3-venv user-mode-linux kmod stress-ng
  mate-backgrounds) # mate-backgrounds: the photograph of the natural clip (below)
# Debian's chromium, unless the browser is another Chrome/Chromium already there (RTCLAB_CHROMIUM, Google Chrome's .deb).
case "$browser" in ""|/usr/lib/chromium/chromium|/usr/bin/chromium) apt_packages=(chromium "${apt_packages[@]}") ;; esac
apt_packages+=("${rust_packages[@]}")
missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # tshark asks whether non-root users may capture; answer before it asks.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
browser=$(chromium_found)
[ -n "$browser" ] && ! is_snap_stub "$browser" || fail "no Chrome/Chromium binary after installing chromium: $chromium_advice"

# --- Node and the Rust parts, beside the Python analyzer ----------------------------------------------------------
# npm ci and the Rust builds run in the background while pip installs the analyzer (about 35 s instead of 60 on a
# fresh clone here); each one's output goes to a log shown only when it fails.
bg_log=$(mktemp -d /tmp/rtclab-setup.XXXXXX)
bg_pids=() bg_names=()
# A failure elsewhere (set -e) stops the background builds too.
# (set -e holds in the trap too: every command there must succeed.)
trap 'for p in "${bg_pids[@]}"; do pkill -P "$p" || true; kill "$p" 2>/dev/null || true; done; rm -rf "$bg_log"' EXIT
background() { # name command...: runs it in the background, its output in $bg_log/NAME
  local name=$1; shift
  "$@" >"$bg_log/$name" 2>&1 &
  bg_pids+=($!) bg_names+=("$name")
}
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "npm ci"
  background npm npm ci --no-audit --no-fund --loglevel=error
fi
rust_parts() {
  # The userspace bottleneck (the analyzer's Rust core is built by pip, through maturin, below).
  cargo build --release --locked --quiet --manifest-path netem/bottleneck/Cargo.toml &&
  # The uml backend's guest preloads it: Debian's UML 6.1 panics on hosts with AVX-512 or AMX without it
  # (netem/uml/xstate-shim/src/lib.rs says why).
  cargo build --release --locked --quiet --manifest-path netem/uml/xstate-shim/Cargo.toml &&
  # The crates' test binaries, which scripts/test.sh runs: built here with the rest, not in the test run's time.
  for m in netem/bottleneck netem/uml/xstate-shim analysis/core; do
    cargo test --release --locked --quiet --no-run --manifest-path "$m/Cargo.toml" || return 1
  done
}
$quiet || say "cargo build --release (netem/bottleneck, netem/uml/xstate-shim; the crates' test binaries)"
background cargo rust_parts

# --- Python analyzer -------------------------------------------------------------------------------------------------
if [ -f pyproject.toml ]; then
  stamp=.venv/.rtclab-installed
  if [ ! -x .venv/bin/python ]; then
    say "creating the Python environment (.venv)"
    python3 -m venv .venv
  fi
  # Reinstall when the dependencies or the Rust core (compiled into the package by maturin) changed.
  if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || { [ -f requirements.lock ] && [ requirements.lock -nt "$stamp" ]; } ||
     [ -n "$(find analysis -path '*/target' -prune -o \( -name '*.rs' -o -name Cargo.toml -o -name Cargo.lock \) -newer "$stamp" -print 2>/dev/null | head -1)" ] ||
     # An editable install made from another checkout (a worktree since deleted) leaves this one importing nothing.
     [ "$(.venv/bin/python -c 'import rtclab, os; print(os.path.dirname(os.path.dirname(rtclab.__file__)))' 2>/dev/null)" != "$root/analysis" ]; then
    say "installing the Python analyzer into .venv"
    .venv/bin/pip install --quiet --upgrade pip >/dev/null
    [ -f requirements.lock ] && .venv/bin/pip install --quiet -r requirements.lock
    .venv/bin/pip install --quiet --no-deps -e .
    touch "$stamp"
  fi
  # `rtclab` on the PATH for the user (rtclab itself always runs a checkout's own .venv/bin/rtclab). Another live
  # checkout's link is left to it, with a word on how to switch: a second clone (a fresh-clone test run in a
  # temporary directory, say) does not take the machine's `rtclab` away from the first.
  linked=$(readlink -f /usr/local/bin/rtclab 2>/dev/null || true)
  if [ -x .venv/bin/rtclab ] && [ "$linked" != "$root/.venv/bin/rtclab" ]; then
    if [ -n "$linked" ] && [ -x "$linked" ]; then
      echo "setup: /usr/local/bin/rtclab stays $linked (another checkout's); this one's is $root/.venv/bin/rtclab" \
        "(ln -sf $root/.venv/bin/rtclab /usr/local/bin/rtclab to switch)" >&2
    else
      ln -sf "$root/.venv/bin/rtclab" /usr/local/bin/rtclab
      say "linked /usr/local/bin/rtclab -> .venv/bin/rtclab"
    fi
  fi
fi

# --- The background builds --------------------------------------------------------------------------------------------
for i in "${!bg_pids[@]}"; do
  wait "${bg_pids[$i]}" || { cat "$bg_log/${bg_names[$i]}" >&2; fail "${bg_names[$i]} failed (its output above)"; }
done
bg_pids=()

# --- The default fake-camera clip ------------------------------------------------------------------------------------
# 5 s of ffmpeg's testsrc2 at 720p30 (Chrome loops the file), each frame stamped with its index (media/stamp.js,
# docs/client.md "Frame stamp"); about 200 MB, so it is generated, never committed. Made again when the stamp's
# version (in the clip's Y4M header) is not the one media/stamp.js writes.
clip=media/default.y4m
stamp_version=$(node media/stamp.js --version)
stamped_now() { # CLIP: whether it exists and carries the stamp version media/stamp.js writes (in its Y4M header)
  [ -s "$1" ] && head -c 512 "$1" | head -n 1 | grep -q " XRTCLAB_STAMP=$stamp_version\b"
}
if ! stamped_now "$clip"; then
  say "generating $clip with ffmpeg (1280x720, 30 fps, 5 s), frame stamp version $stamp_version"
  node media/testsrc.js --fps 30 "$clip"
fi

# --- The default clip at 60 fps --------------------------------------------------------------------------------------
# The same pattern at 60 fps (about 415 MB; `call.video_clip: default-60fps`): the harness makes it on its first use
# (media/clips.js), not every setup. Here: made again when it exists but its stamp's version is out of date.
clip60=media/default-60fps.y4m
if [ -e "$clip60" ] && ! stamped_now "$clip60"; then
  say "generating $clip60 again (its stamp changed; media/testsrc.js)"
  node media/testsrc.js --fps 60 "$clip60"
fi

# --- The natural clip -------------------------------------------------------------------------------------------------
# 20 s of a photograph (Debian's mate-backgrounds) filmed with camera-like motion and sensor noise (media/natural.js;
# a scenario's `call.video_clip: natural`), stamped like the default; about 830 MB and a minute to make, so the harness
# makes it on its first use (media/clips.js), not every setup. Here: made again when it exists but its recipe or its
# stamp's version (both in the clip's Y4M header) is not the one the code writes.
natural=media/natural.y4m
if [ -e "$natural" ]; then
  natural_recipe=$(node media/natural.js --recipe)
  natural_header=$( { head -c 512 "$natural" | head -n 1; } 2>/dev/null || true)
  if [[ " $natural_header " != *" XRTCLAB_STAMP=$stamp_version "* || " $natural_header " != *" XRTCLAB_CLIP=$natural_recipe "* ]]; then
    say "generating $natural again (its recipe or stamp changed; media/natural.js: about a minute)"
    node media/natural.js "$natural"
  fi
fi

$quiet || say "ready"
