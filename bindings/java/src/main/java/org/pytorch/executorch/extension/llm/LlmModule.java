package org.pytorch.executorch.extension.llm;

import java.io.File;
import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.nio.charset.StandardCharsets;
import org.pytorch.executorch.ExecutorchRuntimeException;
import org.pytorch.executorch.NativeLibrary;

/**
 * Text generation with a GPT program and a GPT-2 style BPE tokenizer, over ember's LLM runner
 * (the runner behind the {@code ember-llm} tool).
 *
 * <p>The program's {@code forward} takes tokens (and, with a KV cache, a start position) and
 * returns logits; see {@code extension/llm/runner.h}. The tokenizer is a directory holding {@code
 * vocab.json} and {@code merges.txt} (or either file in it). Each {@link #generate} call starts from
 * an empty cache, hands the prompt (when echo is on) and then each new piece of text to the
 * callback, and stops at the end-of-text token or at the length asked for. With temperature 0 it
 * picks the most likely token every step and produces the same text as {@code ember-llm
 * --temperature 0}; above 0 it samples with a generator seeded with 0 on every call, as {@code
 * ember-llm --seed 0}.
 */
public class LlmModule {
  /** Model type: text only (the one ember's runner has). */
  public static final int MODEL_TYPE_TEXT = 1;

  private static final int DEFAULT_SEQ_LEN = 128;
  private static final Cleaner CLEANER = Cleaner.create();

  private static final class NativeState implements Runnable {
    long handle;

    NativeState(long handle) {
      this.handle = handle;
    }

    @Override
    public synchronized void run() {
      if (handle != 0) {
        nativeDestroy(handle);
        handle = 0;
      }
    }
  }

  private final NativeState state;
  private final Cleaner.Cleanable cleanable;
  private final float temperature;
  private boolean generating;

  static {
    NativeLibrary.load();
  }

  /**
   * Loads a program and its tokenizer.
   *
   * @param modelType {@link #MODEL_TYPE_TEXT}
   * @param modelPath the {@code .pte} file
   * @param tokenizerPath the tokenizer directory ({@code vocab.json} + {@code merges.txt}), or a
   *     file in it
   * @param temperature sampling temperature for {@link #generate}; 0 is greedy
   * @param dataPath a {@code .ptd} file with weights the program keeps outside itself, or null
   * @throws ExecutorchRuntimeException when a file cannot be read or the program and tokenizer do
   *     not fit together
   */
  public LlmModule(
      int modelType, String modelPath, String tokenizerPath, float temperature, String dataPath) {
    if (modelType != MODEL_TYPE_TEXT) {
      throw new IllegalArgumentException("model type " + modelType + " is not supported");
    }
    if (modelPath == null || tokenizerPath == null) {
      throw new IllegalArgumentException("model and tokenizer paths must not be null");
    }
    if (!(temperature >= 0.0f)) {
      throw new IllegalArgumentException("temperature must be 0 or more, not " + temperature);
    }
    File tok = new File(tokenizerPath);
    String tokenizerDir = tok.isFile() ? tok.getAbsoluteFile().getParent() : tokenizerPath;
    this.temperature = temperature;
    state = new NativeState(nativeLoad(modelPath, tokenizerDir, dataPath));
    cleanable = CLEANER.register(this, state);
  }

  /** A text model: {@link #LlmModule(int, String, String, float, String)} without data file. */
  public LlmModule(String modelPath, String tokenizerPath, float temperature) {
    this(MODEL_TYPE_TEXT, modelPath, tokenizerPath, temperature, null);
  }

  /** A text model with a data file. */
  public LlmModule(String modelPath, String tokenizerPath, float temperature, String dataPath) {
    this(MODEL_TYPE_TEXT, modelPath, tokenizerPath, temperature, dataPath);
  }

  /** A model of the given type, without data file. */
  public LlmModule(int modelType, String modelPath, String tokenizerPath, float temperature) {
    this(modelType, modelPath, tokenizerPath, temperature, null);
  }

  /** {@link #generate(String, int, LlmCallback, boolean)} for 128 tokens in all, with echo. */
  public int generate(String prompt, LlmCallback callback) {
    return generate(prompt, DEFAULT_SEQ_LEN, callback, true);
  }

  /** {@link #generate(String, int, LlmCallback, boolean)} with echo. */
  public int generate(String prompt, int seqLen, LlmCallback callback) {
    return generate(prompt, seqLen, callback, true);
  }

  /** {@link #generate(String, int, LlmCallback, boolean)} for 128 tokens in all. */
  public int generate(String prompt, LlmCallback callback, boolean echo) {
    return generate(prompt, DEFAULT_SEQ_LEN, callback, echo);
  }

  /**
   * Generates text from a prompt.
   *
   * @param prompt the prompt (UTF-8 encoded for the tokenizer)
   * @param seqLen the most tokens in all, prompt included (ember's runner slides its window past
   *     the model's context length, so this may exceed it); -1 for the context length
   * @param callback receives the text as it comes, then the statistics
   * @param echo whether the callback receives the prompt first
   * @return 0 on success; else ember's status code, which {@link LlmCallback#onError} received
   *     too with ember's message (a prompt too long for the model or for seqLen, a failed run)
   */
  public int generate(String prompt, int seqLen, LlmCallback callback, boolean echo) {
    return run(prompt, seqLen, -1, temperature, callback, echo);
  }

  /**
   * Generates text with the settings of {@code config}: echo, seqLen, maxNewTokens (both limits
   * apply when both are set) and temperature (negative: the module's).
   */
  public int generate(String prompt, LlmGenerationConfig config, LlmCallback callback) {
    float t = config.getTemperature() < 0 ? temperature : config.getTemperature();
    return run(prompt, config.getSeqLen(), config.getMaxNewTokens(), t, callback, config.isEcho());
  }

  /** Loads the model; it is loaded by the constructor already, so this returns 0. */
  public int load() {
    handle();
    return 0;
  }

  /** Clears the context; every {@link #generate} starts from an empty cache anyway. */
  public void resetContext() {
    handle();
  }

  /** Releases the native runner now. Later calls throw {@link IllegalStateException}. */
  public synchronized void resetNative() {
    cleanable.clean();
  }

  private synchronized int run(
      String prompt, int seqLen, int maxNewTokens, float temp, LlmCallback callback, boolean echo) {
    if (prompt == null || callback == null) {
      throw new IllegalArgumentException("prompt and callback must not be null");
    }
    if (generating) {
      throw new IllegalStateException("generate() called from its own callback");
    }
    byte[] utf8 = prompt.getBytes(StandardCharsets.UTF_8);
    generating = true;
    try {
      return nativeGenerate(handle(), prompt, utf8, seqLen, maxNewTokens, temp, echo, callback);
    } finally {
      generating = false;
      // The cleaner must not free the runner while native code uses it.
      Reference.reachabilityFence(this);
    }
  }

  private long handle() {
    synchronized (state) {
      if (state.handle == 0) {
        throw new IllegalStateException("the LlmModule was released");
      }
      return state.handle;
    }
  }

  /** Called by the native code with complete UTF-8 text. */
  @SuppressWarnings("unused")
  private static void emit(LlmCallback callback, byte[] utf8) {
    callback.onResult(new String(utf8, StandardCharsets.UTF_8));
  }

  private static native long nativeLoad(String modelPath, String tokenizerDir, String dataPath);

  private static native void nativeDestroy(long handle);

  private static native int nativeGenerate(
      long handle,
      String prompt,
      byte[] promptUtf8,
      int seqLen,
      int maxNewTokens,
      float temperature,
      boolean echo,
      LlmCallback callback);
}
