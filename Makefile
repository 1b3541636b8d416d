# ember — the front door. `make help` lists every target.

SHELL := /bin/bash
.DEFAULT_GOAL := help

JOBS ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_SECONDS ?= 600
PREFIX ?= /usr/local
export JOBS FUZZ_SECONDS

BUILD := build
DEMO_PTE := $(BUILD)/nanogpt_kv.pte
DEMO_PTE_INT8 := $(BUILD)/nanogpt_kv_int8.pte
DEMO_PTE_8DA4W := $(BUILD)/nanogpt_kv_8da4w.pte
DEMO_TOKENIZER := examples/nanogpt/tokenizer
DEMO_PROMPT := It is a truth universally acknowledged, that

.PHONY: help demo inspect-plots test bootstrap build test-c test-python test-asan test-java baremetal wasm web bench size fuzz install clean

help: ## List every target
	@echo "ember — make targets:"
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | \
	  awk 'BEGIN {FS = ":.*## "} {printf "  make %-15s %s\n", $$1, $$2}'
	@echo "variables: JOBS=$(JOBS) FUZZ_SECONDS=$(FUZZ_SECONDS) PREFIX=$(PREFIX)"

demo: ## Export the committed nanoGPT (KV cache, XNNPACK-delegated; fp32, int8, 8da4w) and generate text with ember-llm in C
	@scripts/bootstrap.sh >/dev/null
	scripts/build.sh $(BUILD) -- ember-llm
	PYTHONWARNINGS=ignore .venv/bin/python examples/nanogpt/export.py --kind kv --backend xnnpack --out $(DEMO_PTE)
	@echo
	$(BUILD)/ember-llm --model $(DEMO_PTE) --tokenizer $(DEMO_TOKENIZER) \
	  --prompt "$(DEMO_PROMPT)" --max-new-tokens 120 --temperature 0.8 --top-k 40 --seed 42 --stats
	@echo
	@echo "Quantized: the same model with int8 and 4-bit weights (dynamic int8 activations)"
	PYTHONWARNINGS=ignore .venv/bin/python examples/nanogpt/export.py --kind kv --backend xnnpack --quant int8 --out $(DEMO_PTE_INT8)
	PYTHONWARNINGS=ignore .venv/bin/python examples/nanogpt/export.py --kind kv --backend xnnpack --quant 8da4w --out $(DEMO_PTE_8DA4W)
	@echo
	@scripts/demo_quant.sh $(BUILD)/ember-llm $(DEMO_TOKENIZER) "$(DEMO_PROMPT)" \
	  --table-only "fp32=$(DEMO_PTE)" "int8=$(DEMO_PTE_INT8)" "8da4w (group 32)=$(DEMO_PTE_8DA4W)"
	@echo

inspect-plots: ## Profile the committed nanoGPT on ember (ETRecord + ETDump + Inspector) and redraw docs/images/inspector/*.png
	@scripts/bootstrap.sh >/dev/null
	PYTHONWARNINGS=ignore .venv/bin/python examples/nanogpt/inspect_nanogpt.py --backend xnnpack
	PYTHONWARNINGS=ignore .venv/bin/python examples/nanogpt/inspect_nanogpt.py --backend portable

test: ## Everything: bootstrap, build, ctest, pytest, then ctest under ASan+UBSan
	scripts/test.sh

bootstrap: ## Install Debian packages, .venv (torch, executorch, pytest) and ember itself (pip install -e .)
	scripts/bootstrap.sh

build: ## Build the library, ember-run and the C tests in build/
	@scripts/bootstrap.sh --system-only >/dev/null
	scripts/build.sh $(BUILD)

test-c: build ## Run the C tests (ctest in build/)
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-python: ## Run the Python tests (pytest tests/python)
	@scripts/bootstrap.sh >/dev/null
	.venv/bin/python -m pytest tests/python -q -n $(JOBS) --dist loadfile

test-asan: ## Build with ASan+UBSan in build-asan/ and run the C tests there
	@scripts/bootstrap.sh --system-only >/dev/null
	scripts/build.sh build-asan -DEMBER_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_C_FLAGS_DEBUG=-g -O1"
	cd build-asan && ctest --output-on-failure -j $(JOBS)

test-java: ## Build the Java binding (bindings/java) and run its JUnit tests (skips without a JDK)
	@scripts/bootstrap.sh >/dev/null
	bindings/java/run_tests.sh $(BUILD)

baremetal: ## Build examples/baremetal for a Cortex-M7 (arm-none-eabi-gcc), run it on QEMU mps2-an500, compare with eager; flash/RAM use
	@scripts/bootstrap.sh >/dev/null
	examples/baremetal/test.sh build-baremetal

wasm: ## Build ember for WebAssembly (emscripten) in build-wasm/; a model and nanoGPT in Node.js and the web page in headless Chromium, against eager
	@scripts/bootstrap.sh >/dev/null
	bindings/wasm/test.sh build-wasm

web: wasm ## Serve examples/web (nanoGPT generating in the browser) at http://127.0.0.1:8000/
	.venv/bin/python examples/web/test_browser.py build-wasm --serve 8000

bench: bench-roofline bench-kernels bench-llm bench-llm-quant bench-llm-1b bench-cnn bench-threads bench-tracer bench-vulkan ## Run every benchmark (tables into bench/RESULTS.md; llama.cpp rows need `make bench-peers` once)

.PHONY: bench-roofline bench-kernels bench-llm bench-llm-quant bench-llm-1b bench-cnn bench-threads bench-tracer bench-vulkan bench-peers bench-peers-vulkan
bench-roofline: ## Measure read bandwidth and fp32 FMA peak on 1 and 2 threads; into bench/RESULTS.md
	@scripts/bootstrap.sh >/dev/null
	.venv/bin/python bench/roofline/bench_roofline.py --write bench/RESULTS.md

bench-llm: ## GPT-2 124M: ember (xnnpack, portable), eager, ExecuTorch, llama.cpp on 1 and 2 threads, % of roofline
	@scripts/bootstrap.sh >/dev/null
	PYTHONWARNINGS=ignore .venv/bin/python bench/llm/bench_llm.py

bench-llm-quant: ## GPT-2 124M with int8 and 4-bit weights: ember vs llama.cpp q8_0/q4_0 vs ExecuTorch 8da4w vs eager, % of roofline
	@scripts/bootstrap.sh >/dev/null
	PYTHONWARNINGS=ignore .venv/bin/python bench/llm/bench_llm.py --quant

bench-llm-1b: ## Llama 3.2 1B and Qwen 3 0.6B shapes (8da4w): ember vs ExecuTorch vs llama.cpp Q4_0/Q8_0, 1 and 2 threads, % of roofline; ember decode at 128-8k context (about 70 minutes; peers: `make bench-peers`)
	@scripts/bootstrap.sh >/dev/null
	scripts/build.sh $(BUILD) -- ember-llm
	BUILD=$(BUILD) PYTHONWARNINGS=ignore .venv/bin/python bench/llm/bench_llm_1b.py

bench-tracer: ## nanoGPT decode with and without the event tracer (ember-llm --etdump), 1 and 2 threads
	@scripts/bootstrap.sh >/dev/null
	scripts/build.sh $(BUILD) -- ember-llm
	PYTHONWARNINGS=ignore .venv/bin/python bench/devtools/bench_tracer.py

bench-vulkan: ## nanoGPT and GPT-2 124M on VulkanBackend (float16, int8, 4-bit weights) vs ember on the CPU, eager, llama.cpp Vulkan and the bandwidth floor (llama.cpp: `make bench-peers-vulkan`)
	@scripts/bootstrap.sh >/dev/null
	scripts/build.sh $(BUILD) -- ember-llm
	EMBER_LLM=$(BUILD)/ember-llm PYTHONWARNINGS=ignore .venv/bin/python bench/vulkan/bench_vulkan.py

bench-cnn: ## 12 torchvision classifiers (examples/vision), fp32 + static int8: ember vs ExecuTorch XNNPACK vs eager, 1 and 2 threads (ARGS="--models a,b --threads 1 --quick")
	@scripts/bootstrap.sh >/dev/null
	PYTHONWARNINGS=ignore .venv/bin/python bench/cnn/bench_cnn.py $(ARGS)

bench-threads: ## Thread scaling, 1 thread to every core: LLM decode and CNN latency, ember beside ExecuTorch
	@scripts/bootstrap.sh >/dev/null
	PYTHONWARNINGS=ignore .venv/bin/python bench/threads/bench_threads.py

bench-kernels: ## Time portable kernels vs PyTorch eager (1 thread); table into bench/RESULTS.md
	@scripts/bootstrap.sh >/dev/null
	.venv/bin/python bench/kernels/bench_kernels.py --write bench/RESULTS.md

bench-peers: ## Install the benchmark-only peers into .venv: gguf, llama-cpp-python and llama-bench (built from source)
	@scripts/bootstrap.sh >/dev/null
	scripts/bench_peers.sh

bench-peers-vulkan: ## bench-peers, then llama-bench built with GGML_VULKAN (for bench-vulkan; needs glslc, spirv-headers, Vulkan headers 1.3.261+)
	@scripts/bootstrap.sh >/dev/null
	scripts/bench_peers.sh
	scripts/bench_peers.sh --vulkan

size: ## Print the stripped size in bytes of the core runtime, alone and with kernels: all, or only nanoGPT's (MinSizeRel)
	@scripts/bootstrap.sh --system-only >/dev/null
	@scripts/size.sh

fuzz: ## Fuzz program loading with libFuzzer for FUZZ_SECONDS (clang)
	scripts/fuzz.sh

install: build ## Install headers, libember.{a,so}, ember-run, CMake and pkg-config files to PREFIX
	cmake --install $(BUILD) --prefix $(PREFIX)

clean: ## Remove all build directories
	rm -rf build build-asan build-aarch64 build-size build-select build-custom-op build-fuzz build-python build-bench build-baremetal build-wasm
