# The two commands: `make run` and `make test`. Both install missing Debian
# packages first (as root, without their recommends), then build with CMake.
# apt's and the build's output go to logs under $(BUILD)/, shown only when a
# stage fails; each stage prints one line.
#
# What building kvsim and running a scenario need (gnuplot draws the charts
# of report.html) ...
RUN_DEPS := cmake g++ make libyaml-cpp-dev libfmt-dev libeigen3-dev libboost-graph-dev \
            libcli11-dev nlohmann-json3-dev libxxhash-dev gnuplot-nox
# ... and what the tests add: GoogleTest, Google Benchmark, MPI for sweeps over
# ranks, pybind11 and pandas for the Python module, clang's libFuzzer, chromium
# for the report pages' browser checks.
TEST_DEPS := libgtest-dev libgmock-dev libbenchmark-dev openmpi-bin libopenmpi-dev pybind11-dev \
             python3-dev python3-pandas clang libclang-rt-14-dev chromium
DEPS := $(RUN_DEPS) $(TEST_DEPS)
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
SCENARIO ?= configs/scenarios/default.yaml

.PHONY: deps run-deps build run test asan fuzz fuzz-build bench clean format

# $(call install_missing,PACKAGES): apt-get installs those not yet installed.
define install_missing
@mkdir -p $(BUILD); missing=""; \
for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
if [ -n "$$missing" ]; then \
  echo "make: installing$$missing"; \
  if ! { apt-get update && DEBIAN_FRONTEND=noninteractive \
         apt-get install -y --no-install-recommends $$missing; } > $(BUILD)/apt.log 2>&1; then \
    tail -40 $(BUILD)/apt.log; echo "make: apt-get failed (log: $(BUILD)/apt.log)" >&2; exit 1; \
  fi; \
fi
endef

run-deps:
	$(call install_missing,$(RUN_DEPS))

deps:
	$(call install_missing,$(DEPS))

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DKVSIM_TESTS=ON
	cmake --build $(BUILD) -j $(JOBS)

# Quiet but for the result: the build's output goes to $(BUILD)/make-run.log,
# shown only when the build fails; then the run's summary table.
run: run-deps
	@echo "make: building kvsim (log: $(BUILD)/make-run.log)"; \
	if ! { cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release && \
	       cmake --build $(BUILD) -j $(JOBS) --target kvsim; } > $(BUILD)/make-run.log 2>&1; then \
	  tail -60 $(BUILD)/make-run.log; echo "make run: the build failed (log: $(BUILD)/make-run.log)" >&2; \
	  exit 1; \
	fi
	@./$(BUILD)/kvsim run $(SCENARIO)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Debug build with AddressSanitizer and UndefinedBehaviorSanitizer.
asan: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DKVSIM_SANITIZE=ON
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure -j $(JOBS)

# libFuzzer harnesses of the input readers (fuzz/), under ASan and UBSan,
# each run FUZZ_SECONDS on its stored seed corpus and dictionary, one after
# another. New inputs go to $(BUILD)-fuzz/corpus/, the stored seeds stay as
# they are; a finding stops the target with the crashing input written as
# $(BUILD)-fuzz/crash-* (docs/fuzzing.md: reproducing, long local runs).
FUZZ_SECONDS ?= 20
FUZZERS := yaml_config hf_config trace_mooncake trace_azure trace_prefill_decode_csv \
           check_json calibration_csv llama2_checkpoint trace_writer_path sweep_yaml trace_agentic

fuzz-build: deps
	cmake -S fuzz -B $(BUILD)-fuzz -DCMAKE_CXX_COMPILER=clang++
	cmake --build $(BUILD)-fuzz -j $(JOBS)

fuzz: fuzz-build
	@for f in $(FUZZERS); do \
	  mkdir -p $(BUILD)-fuzz/corpus/$$f; \
	  echo "fuzz_$$f: $(FUZZ_SECONDS) s"; \
	  ./$(BUILD)-fuzz/fuzz_$$f -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
	    -dict=fuzz/dict/$$f.dict -print_final_stats=1 -artifact_prefix=$(BUILD)-fuzz/ \
	    $(BUILD)-fuzz/corpus/$$f fuzz/corpus/$$f 2>$(BUILD)-fuzz/$$f.log \
	    || { tail -60 $(BUILD)-fuzz/$$f.log; exit 1; }; \
	  grep -E "stat::number_of_executed_units|cov:" $(BUILD)-fuzz/$$f.log | tail -2; \
	done

bench: build
	./$(BUILD)/bench_event_queue
	./$(BUILD)/bench_whole_run
	./$(BUILD)/bench_whole_command

format:
	find sim models devices workloads kernels reports tests bench -name '*.cpp' -o -name '*.hpp' | xargs clang-format -i

clean:
	rm -rf $(BUILD) $(BUILD)-fuzz build-asan out
