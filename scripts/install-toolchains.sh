#!/usr/bin/env bash
# Install the toolchains that test-command tasks run (docs/polyglot.md): Go, Rust, Java, C++,
# JavaScript (jest + babel) and pytest for Python, from the Debian archive and ONE pinned npm
# install, into the system and one reliabench-owned folder. Offline-proof: after it, every
# toolchain builds and tests with the network off (checked at the end, in a network namespace
# without interfaces).
#
#   scripts/install-toolchains.sh              # as root (make polyglot)
#   RELIABENCH_TOOLCHAINS=/srv/tc scripts/install-toolchains.sh
#   TOOLCHAIN_LANGUAGES="go rust" scripts/install-toolchains.sh   # some of them
#
# What goes where:
#   Debian packages   golang-go; rustc-web cargo-web librust-{time,anyhow,rand,thiserror}-dev; default-jdk-headless
#                     junit5 libassertj-core-java; cmake g++ make ccache libboost-date-time-dev;
#                     nodejs npm (unless a node >= 18 is there); python3-pytest
#   $RELIABENCH_TOOLCHAINS (default /opt/reliabench/toolchains), readable by every uid:
#     cargo/config.toml   crates.io replaced by Debian's /usr/share/cargo/registry, [net] offline
#                         (given to cargo as CARGO_HOME's config by reliabench; ~/.cargo is never touched)
#     node/               jest 29 + babel + the Exercism preset (scripts/toolchains/node: package.json and
#                         its lock file, installed with npm ci --ignore-scripts)
# Each step prints its time; the times go to $RELIABENCH_TOOLCHAINS/install-times.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="${RELIABENCH_TOOLCHAINS:-/opt/reliabench/toolchains}"
LANGS="${TOOLCHAIN_LANGUAGES:-go rust java cpp javascript python}"
export DEBIAN_FRONTEND=noninteractive
TIMES=()

if [ "$(id -u)" != 0 ]; then
  echo "install-toolchains: run as root (it installs Debian packages into the system)" >&2
  exit 2
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-toolchains: needs apt-get (Debian bookworm or a derivative)" >&2
  exit 2
fi

step() {  # step NAME COMMAND...: run, time, record
  local name="$1" start end
  shift
  start=$(date +%s.%N)
  "$@"
  end=$(date +%s.%N)
  TIMES+=("$(printf '%-28s %6.1f s' "$name" "$(echo "$end - $start" | bc)")")
  echo "install-toolchains: $name: $(echo "$end - $start" | bc | xargs printf '%.1f') s"
}

apt_install() {  # only what is missing, quietly
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

wants() { case " $LANGS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

command -v bc >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq bc >/dev/null; }
step "apt-get update" apt-get update -qq
wants go && step "go (golang-go)" apt_install golang-go
wants rust && step "rust (rustc-web, crates)" apt_install rustc-web cargo-web librust-time-dev \
  librust-anyhow-dev librust-rand-dev librust-thiserror-dev
wants java && step "java (jdk, junit5, assertj)" apt_install default-jdk-headless junit5 libassertj-core-java
wants cpp && step "cpp (cmake, g++, ccache)" apt_install cmake g++ make ccache libboost-date-time-dev
wants python && step "python (python3-pytest)" apt_install python3-pytest
if wants javascript; then
  if ! command -v node >/dev/null 2>&1 || [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 18 ]; then
    step "javascript (nodejs, npm)" apt_install nodejs npm
  fi
fi

mkdir -p "$ROOT"
chmod 0755 "$ROOT"
if wants rust; then
  mkdir -p "$ROOT/cargo"
  cat > "$ROOT/cargo/config.toml" <<'EOF'
# Written by reliabench's scripts/install-toolchains.sh: cargo builds offline, with the crates
# Debian ships (librust-*-dev) in place of crates.io.
[source.crates-io]
replace-with = "debian"

[source.debian]
directory = "/usr/share/cargo/registry"

[net]
offline = true
EOF
fi
if wants javascript; then
  install_node() {
    local want have=""
    want="$(sha256sum scripts/toolchains/node/package-lock.json | cut -c1-64)"
    [ -f "$ROOT/node/.installed-lock" ] && have="$(cat "$ROOT/node/.installed-lock")"
    if [ "$want" = "$have" ] && [ -d "$ROOT/node/node_modules/jest" ]; then
      return 0
    fi
    rm -rf "$ROOT/node"
    mkdir -p "$ROOT/node"
    cp scripts/toolchains/node/package.json scripts/toolchains/node/package-lock.json "$ROOT/node/"
    (cd "$ROOT/node" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
    echo "$want" > "$ROOT/node/.installed-lock"
  }
  step "javascript (npm ci: jest, babel)" install_node
fi
chmod -R a+rX "$ROOT"   # the sandbox's slot uids read it

# ------------------------------------------------------------------ offline check
check_offline() {
  local work
  work="$(mktemp -d)"
  chmod 0755 "$work"
  local env=(env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$work/home" LANG=C.UTF-8 GOPROXY=off GOFLAGS=-mod=mod
             GOTOOLCHAIN=local GOCACHE="$work/gocache" GOPATH="$work/gopath" CGO_ENABLED=0
             CARGO_HOME="$work/cargo-home" CARGO_TARGET_DIR="$work/target")
  mkdir -p "$work/home" "$work/cargo-home"
  if wants go; then
    mkdir -p "$work/go" && printf 'module m\n\ngo 1.18\n' > "$work/go/go.mod"
    printf 'package m\nimport "testing"\nfunc TestOk(t *testing.T) {}\n' > "$work/go/m_test.go"
    (cd "$work/go" && unshare -n "${env[@]}" go test -json ./... > "$work/go.jsonl" && grep -q '"Action":"pass"' "$work/go.jsonl")
  fi
  if wants rust; then
    cp "$ROOT/cargo/config.toml" "$work/cargo-home/config.toml"
    mkdir -p "$work/rs/src" && printf '[package]\nname = "m"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\ntime = "0.3"\n' > "$work/rs/Cargo.toml"
    printf '#[test]\nfn ok() { let _ = time::Duration::seconds(1); }\n' > "$work/rs/src/lib.rs"
    (cd "$work/rs" && unshare -n "${env[@]}" cargo test --offline > "$work/rs.txt" 2>&1 && grep -q "test result: ok" "$work/rs.txt")
  fi
  if wants java; then
    mkdir -p "$work/java/classes" "$work/java/reports"
    printf 'import org.junit.jupiter.api.Test;\nimport static org.assertj.core.api.Assertions.assertThat;\npublic class OkTest { @Test public void ok() { assertThat(1).isEqualTo(1); } }\n' > "$work/java/OkTest.java"
    local jars=/usr/share/java
    (cd "$work/java" && unshare -n "${env[@]}" javac -d classes -cp "$jars/junit-jupiter-api.jar:$jars/assertj-core.jar:$jars/apiguardian.jar" OkTest.java &&
      unshare -n "${env[@]}" java -jar "$jars/junit-platform-console-standalone.jar" --disable-banner --details=none \
        --class-path "classes:$jars/assertj-core.jar" --scan-classpath --reports-dir reports >/dev/null &&
      grep -q 'testcase name="ok()"' reports/TEST-junit-jupiter.xml)
  fi
  if wants cpp; then
    mkdir -p "$work/cpp" && printf 'cmake_minimum_required(VERSION 3.5)\nproject(m CXX)\nadd_executable(m m.cpp)\n' > "$work/cpp/CMakeLists.txt"
    printf '#include <boost/date_time/posix_time/posix_time.hpp>\nint main() { return boost::posix_time::seconds(1).total_seconds() == 1 ? 0 : 1; }\n' > "$work/cpp/m.cpp"
    (cd "$work/cpp" && unshare -n "${env[@]}" CCACHE_DIR="$work/ccache" cmake -S . -B build -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null &&
      unshare -n "${env[@]}" CCACHE_DIR="$work/ccache" cmake --build build >/dev/null && ./build/m)
  fi
  if wants javascript; then
    mkdir -p "$work/js" && ln -s "$ROOT/node/node_modules" "$work/js/node_modules"
    printf "module.exports = { presets: ['@exercism/babel-preset-javascript'] };\n" > "$work/js/babel.config.js"
    printf '{"name": "m", "private": true}\n' > "$work/js/package.json"
    printf "export const one = () => 1;\n" > "$work/js/one.js"
    printf "import { one } from './one';\ntest('one', () => { expect(one()).toBe(1); });\n" > "$work/js/one.spec.js"
    (cd "$work/js" && unshare -n "${env[@]}" node node_modules/jest/bin/jest.js --ci --config='{}' --json \
      --outputFile="$work/jest.json" --cacheDirectory="$work/jest-cache" >/dev/null 2>&1 && grep -q '"numPassedTests":1' "$work/jest.json")
  fi
  if wants python; then
    mkdir -p "$work/py" && printf 'def test_ok():\n    assert True\n' > "$work/py/test_ok.py"
    (cd "$work/py" && unshare -n "${env[@]}" python3 -m pytest -q -p no:cacheprovider --junit-xml="$work/py.xml" >/dev/null)
  fi
  rm -rf "$work"
}
step "offline check (network off)" check_offline
printf '%s\n' "${TIMES[@]}" > "$ROOT/install-times.txt"
echo "install-toolchains: ok ($LANGS) into $ROOT; times in $ROOT/install-times.txt"
