#!/usr/bin/env bash
# Builds the Java binding and runs its JUnit tests (no Gradle or Maven: javac
# and java). Skips, saying why, where there is no JDK or no JUnit 4.
#
#   1. libember_jni.so, executorch.jar and ember-llm in BUILD_DIR (CMake)
#   2. BUILD_DIR/java-test/: a small model exported by ember with PyTorch
#      eager's outputs, and the committed nanoGPT with a KV cache
#      (tests/make_test_data.py; redone only when its inputs change)
#   3. ember-llm's text for the test prompt, greedy and sampled at temperature
#      1 with seed 0, and greedy with a tokenizer that splits a character
#      across two tokens (tests/make_utf8_tokenizer.py): what LlmModule must
#      match
#   4. the tests, under -Xcheck:jni
#
# With --asan the tests run a second library, built with AddressSanitizer and
# UBSan in build-java-asan/ (gcc; a few minutes the first time), preloading
# the sanitizer runtimes into the JVM: any bad access in the JNI code or in
# ember aborts the run. (LeakSanitizer cannot run inside a JVM; the tests
# count ember's heap blocks instead.)
#
# usage: bindings/java/run_tests.sh [--asan] [BUILD_DIR]     (default: build)
# Environment: EMBER_VENV (default .venv), JUNIT_CP (default: Debian's
# junit4 and hamcrest jars), JAVA_HOME (else java and javac on PATH).
set -euo pipefail
cd "$(dirname "$0")/../.."

ASAN=0
if [[ "${1:-}" == "--asan" ]]; then
  ASAN=1
  shift
fi
BUILD="${1:-build}"
VENV="${EMBER_VENV:-.venv}"
JUNIT_CP="${JUNIT_CP:-/usr/share/java/junit4.jar:/usr/share/java/hamcrest-core.jar}"
PROMPT="It is a truth universally acknowledged, that"
NEW_TOKENS=60

say() { echo "java: $*"; }
skip() { say "skipped: $*"; exit 0; }

JAVA=java
JAVAC=javac
if [[ -n "${JAVA_HOME:-}" ]]; then
  JAVA="$JAVA_HOME/bin/java"
  JAVAC="$JAVA_HOME/bin/javac"
fi
command -v "$JAVAC" >/dev/null 2>&1 || skip "no JDK (javac); scripts/bootstrap.sh installs default-jdk-headless"
command -v "$JAVA" >/dev/null 2>&1 || skip "no java"
IFS=: read -r -a junit_jars <<< "$JUNIT_CP"
for jar in "${junit_jars[@]}"; do
  [[ -f "$jar" ]] || skip "no JUnit 4 ($jar); scripts/bootstrap.sh installs junit4"
done

scripts/build.sh "$BUILD" -- ember_core >/dev/null # configures it
# (the target list read whole: grep -q would stop reading early, and under
# pipefail cmake's broken pipe would read as "no JDK")
targets=$(cmake --build "$BUILD" --target help 2>/dev/null || true)
if [[ "$targets" != *ember_jni* ]]; then
  skip "CMake found no JDK in $BUILD (see its configure output)"
fi
scripts/build.sh "$BUILD" -- ember_jni ember_java ember-llm | tail -n 1

OUT="$BUILD/java-test"
STAMP="$OUT/.stamp"
inputs=(bindings/java/tests python/ember examples/nanogpt/ckpt.pt examples/nanogpt/export.py
        examples/nanogpt/kv_cache.py examples/nanogpt/model.py examples/nanogpt/quantize.py)
if [[ ! -f "$STAMP" || -n $(find "${inputs[@]}" -newer "$STAMP" -name '*.p[ty]' -print -quit) ]]; then
  say "exporting the test programs (tests/make_test_data.py)"
  rm -f "$STAMP"
  PYTHONWARNINGS=ignore "$VENV/bin/python" bindings/java/tests/make_test_data.py "$OUT"
  touch "$STAMP"
fi

"$BUILD/ember-llm" --model "$OUT/nanogpt_kv.pte" --tokenizer examples/nanogpt/tokenizer \
  --prompt "$PROMPT" --max-new-tokens "$NEW_TOKENS" --temperature 0 > "$OUT/ember_llm.txt"
"$BUILD/ember-llm" --model "$OUT/nanogpt_kv.pte" --tokenizer examples/nanogpt/tokenizer \
  --prompt "$PROMPT" --max-new-tokens "$NEW_TOKENS" --temperature 1 --seed 0 > "$OUT/ember_llm_t1.txt"
# A tokenizer whose 2nd and 3rd greedy tokens split a character's UTF-8 bytes.
read -r _ id_a id_b _ < <("$BUILD/ember-llm" --model "$OUT/nanogpt_kv.pte" \
  --tokenizer examples/nanogpt/tokenizer --prompt "$PROMPT" --max-new-tokens 4 --temperature 0 --ids)
"$VENV/bin/python" bindings/java/tests/make_utf8_tokenizer.py examples/nanogpt/tokenizer \
  "$OUT/utf8_tokenizer" "$id_a" "$id_b"
"$BUILD/ember-llm" --model "$OUT/nanogpt_kv.pte" --tokenizer "$OUT/utf8_tokenizer" \
  --prompt "$PROMPT" --max-new-tokens "$NEW_TOKENS" --temperature 0 > "$OUT/ember_llm_utf8.txt"

LIB_DIR="$BUILD/bindings/java"
PRELOAD=()
if ((ASAN == 1)); then
  command -v gcc >/dev/null 2>&1 || skip "--asan needs gcc"
  CC=gcc scripts/build.sh build-java-asan -DCMAKE_BUILD_TYPE=Debug -DEMBER_BUILD_TESTS=OFF \
    "-DCMAKE_C_FLAGS=-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" \
    "-DCMAKE_C_FLAGS_DEBUG=-g -O1" -- ember_jni ember_java | tail -n 1
  LIB_DIR=build-java-asan/bindings/java
  # The JVM handles SIGSEGV itself, and leaves memory to its own collector.
  PRELOAD=(env "LD_PRELOAD=$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
           "ASAN_OPTIONS=detect_leaks=0:handle_segv=0:allow_user_segv_handler=1"
           "UBSAN_OPTIONS=print_stacktrace=1")
  say "running the tests on $LIB_DIR/libember_jni.so (AddressSanitizer + UBSan)"
fi

CLASSES="$OUT/classes"
rm -rf "$CLASSES"
mkdir -p "$CLASSES"
JAR="$LIB_DIR/executorch.jar"
mapfile -t tests < <(find bindings/java/src/test/java -name '*.java' | sort)
"$JAVAC" -Xlint:all -Werror -d "$CLASSES" -cp "$JAR:$JUNIT_CP" "${tests[@]}"

mapfile -t classes < <(find bindings/java/src/test/java -name '*Test.java' | sort |
  sed 's|bindings/java/src/test/java/||; s|\.java$||; s|/|.|g')
"${PRELOAD[@]}" "$JAVA" -Xcheck:jni \
  -Dember.jni.library="$PWD/$LIB_DIR/libember_jni.so" \
  -Dember.test.data="$OUT" -Dember.fixtures=tests/fixtures \
  -Dember.llm.model="$OUT/nanogpt_kv.pte" -Dember.llm.tokenizer=examples/nanogpt/tokenizer \
  -Dember.llm.prompt="$PROMPT" -Dember.llm.new_tokens="$NEW_TOKENS" \
  -Dember.llm.expected="$OUT/ember_llm.txt" -Dember.llm.expected_sampled="$OUT/ember_llm_t1.txt" \
  -Dember.llm.utf8_tokenizer="$OUT/utf8_tokenizer" -Dember.llm.expected_utf8="$OUT/ember_llm_utf8.txt" \
  -cp "$CLASSES:$JAR:$JUNIT_CP" org.junit.runner.JUnitCore "${classes[@]}"
