#!/usr/bin/env bash
# Installs the Debian packages rampart builds and tests with. Idempotent: when
# everything is present it only asks dpkg and returns in well under a second.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libucx-dev ucx-utils            # transport (UCP), ucx_info
  libgtest-dev                    # unit tests
  libbenchmark-dev                # micro-benchmarks
  libtomlplusplus-dev             # cluster file
  libcli11-dev                    # command line
  libspdlog-dev libfmt-dev        # logging, formatting
  libxxhash-dev                   # hashing
  libabsl-dev                     # absl::node_hash_map: the kv-nodes' key index
  nlohmann-json3-dev              # benchmark JSON
  libisal-dev                     # crc32c (crc32_iscsi), XOR parity, crc64 (DUMP payloads)
  liblzf-dev                      # LZF: RESTORE of Redis's compressed strings
  liblua5.1-0-dev lua-cjson-dev lua-bitop-dev  # Lua 5.1, cjson, bit: the proxy's EVAL
  liburing-dev                    # storage-node io_uring engine
  libssl-dev                      # libcrypto: HMAC-SHA256 of the peers' handshake (cluster secret)
  libjemalloc-dev                 # malloc of the rampart binary (CMakeLists.txt says why)
  iproute2                        # ip netns: the multi-host tests' hosts
  python3 python3-venv            # integration tests and plots
  redis-tools                     # redis-cli, redis-benchmark: proxy tests and benchmark
  redis-server nutcracker         # the proxy benchmark's baselines (Redis, twemproxy)
  clang libclang-rt-14-dev        # libFuzzer for the RESP parser
  openjdk-17-jdk-headless maven   # YCSB binding: librampart_jni (JNI headers), ycsb/ (Maven)
  libnbd-bin                      # nbdinfo, nbdcopy: NBD export tests
  qemu-utils                      # qemu-img: NBD export tests
  fio                             # fio --ioengine=nbd: NBD export tests and benchmark
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
