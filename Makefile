# The two set-up commands of the README:
#   make run   installs what is missing, builds, starts a local cluster (`rampart up`) on the
#              embedded default configuration until Ctrl-C
#   make test  installs what is missing, builds, runs every test (unit tests, the two
#              fuzzers, the pytest integration tests in tests/, then the ASan/UBSan build)
# Other targets: build, build-asan, unit-test, fuzz-test, integration-test, asan-test, bench,
# ycsb-build, ycsb, clean. fuzz-test builds the libFuzzer targets for the proxy's RESP parser and
# RESTORE's payload decoder with clang (ASan/UBSan) and runs each for FUZZ_TIME seconds on a copy
# of its seed corpus (src/proxy/fuzz/corpus, dump_corpus); a
# crash fails it and leaves the input in $(FUZZ_BUILD). ycsb runs YCSB against a fresh
# `rampart up` cluster (ycsb/run.sh with its defaults: workloada through the proxy for 10 s;
# `ycsb/run.sh --help` for modes, workloads and properties); ycsb-build compiles the YCSB
# binding (Maven) and runs its unit tests.

BUILD      ?= build/release
ASAN_BUILD ?= build/asan
# Test binaries also run under AddressSanitizer/UBSan (every layer with tests).
ASAN_TESTS ?= common_test transport_test wal_test kv_test txn_test proxy_test storage_test
JOBS       ?= $(shell nproc)
FUZZ_BUILD ?= build/fuzz
FUZZ_TIME  ?= 30
VENV       ?= tests/.venv

.PHONY: run test deps build build-asan unit-test fuzz-test integration-test asan-test bench clean \
        ycsb ycsb-build

deps:
	@bash scripts/install-deps.sh

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release

$(ASAN_BUILD)/build.ninja:
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DRAMPART_SANITIZE=ON

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD) -j $(JOBS)

build-asan: deps $(ASAN_BUILD)/build.ninja
	ninja -C $(ASAN_BUILD) -j $(JOBS) $(ASAN_TESTS)

run: build
	$(BUILD)/rampart up

unit-test: build
	cd $(BUILD) && ctest --output-on-failure

asan-test: build-asan
	cd $(ASAN_BUILD) && ctest --output-on-failure -R '^($(shell echo $(ASAN_TESTS) | tr ' ' '|'))$$'

# The RESP parser depends on the standard library only, so the fuzzer is one clang++
# command, rebuilt when its sources change. It runs on a copy of the seed corpus (the
# inputs it finds stay in $(FUZZ_BUILD)/corpus, not in the tree).
$(FUZZ_BUILD)/resp_fuzz: src/proxy/resp.cc src/proxy/resp.h src/proxy/fuzz/resp_fuzz.cc | deps
	@mkdir -p $(FUZZ_BUILD)
	clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	  -Isrc src/proxy/resp.cc src/proxy/fuzz/resp_fuzz.cc -o $@

# RESTORE's payload decoder likewise: it needs Status, ISA-L's crc64 and liblzf besides.
$(FUZZ_BUILD)/dump_fuzz: src/proxy/redis_dump.cc src/proxy/redis_dump.h src/common/status.cc \
                         src/proxy/fuzz/dump_fuzz.cc | deps
	@mkdir -p $(FUZZ_BUILD)
	clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	  -Isrc $$(pkg-config --cflags liblzf) src/proxy/redis_dump.cc src/common/status.cc \
	  src/proxy/fuzz/dump_fuzz.cc -lisal $$(pkg-config --libs liblzf) -o $@

fuzz-test: deps $(FUZZ_BUILD)/resp_fuzz $(FUZZ_BUILD)/dump_fuzz
	rm -rf $(FUZZ_BUILD)/corpus && cp -r src/proxy/fuzz/corpus $(FUZZ_BUILD)/corpus
	$(FUZZ_BUILD)/resp_fuzz -max_total_time=$(FUZZ_TIME) -max_len=4096 -timeout=5 \
	  -dict=src/proxy/fuzz/resp.dict -artifact_prefix=$(FUZZ_BUILD)/ -print_final_stats=1 \
	  $(FUZZ_BUILD)/corpus
	rm -rf $(FUZZ_BUILD)/dump_corpus && cp -r src/proxy/fuzz/dump_corpus $(FUZZ_BUILD)/dump_corpus
	$(FUZZ_BUILD)/dump_fuzz -max_total_time=$(FUZZ_TIME) -max_len=4096 -timeout=5 \
	  -artifact_prefix=$(FUZZ_BUILD)/dump- -print_final_stats=1 $(FUZZ_BUILD)/dump_corpus

# The pytest integration tests (tests/) run the Release binary; pytest is
# pinned in tests/requirements.txt and installed into $(VENV).
$(VENV)/bin/python:
	python3 -m venv $(VENV)

# The YCSB binding (ycsb/, Maven): compiled, its unit tests run, its runtime dependencies copied
# to ycsb/target/dependency. The stamp is the one ycsb/run.sh checks, so neither rebuilds what
# the other built. tests/test_ycsb.py needs it, hence integration-test depends on it.
YCSB_STAMP := ycsb/target/.built
$(YCSB_STAMP): ycsb/pom.xml $(shell find ycsb/src -type f 2>/dev/null) | deps
	mvn -q -B -f ycsb/pom.xml package
	@touch $@

ycsb-build: $(YCSB_STAMP)

ycsb: build ycsb-build
	ycsb/run.sh

integration-test: build ycsb-build $(VENV)/bin/python
	$(VENV)/bin/python -m pip install -q --disable-pip-version-check -r tests/requirements.txt
	RAMPART_BIN=$(abspath $(BUILD))/rampart $(VENV)/bin/python -m pytest -q tests

test: unit-test fuzz-test integration-test asan-test

bench: build
	$(BUILD)/rampart bench transport

clean:
	rm -rf build
