package org.pytorch.executorch.extension.llm;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.nio.charset.StandardCharsets;
import org.pytorch.executorch.ExecutorchRuntimeException;
import org.pytorch.executorch.NativeLibrary;

/**
 * Text generation over ember's LLM runner (the runner behind the {@code ember-llm} tool), with
 * the API of ExecuTorch's {@code LlmModule}.
 *
 * <p>The program's {@code forward} takes tokens (and, with a KV cache, a start position) and
 * returns logits; see {@code extension/llm/runner.h}. The tokenizer is any file the runner reads,
 * its format told from the content (tiktoken {@code tokenizer.model}, Hugging Face {@code
 * tokenizer.json}, SentencePiece {@code tokenizer.model}, GPT-2's {@code vocab.json} beside its
 * {@code merges.txt}), or a model directory holding one.
 *
 * <p>A module keeps its conversation, as ExecuTorch's runner does: each {@link #generate} and
 * {@link #prefillPrompt} continues from the text before it (its prompt is run after what the
 * cache holds, so a chat turn costs only its own tokens), until {@link #resetContext} starts a new
 * one. The first text of a conversation gets the program's BOS token (when its metadata names
 * one) as {@code ember-llm} gives it; later texts are encoded alone, so a chat application writes
 * each turn in the model's template (special tokens written in the text become their ids).
 *
 * <p>Each {@link #generate} hands the prompt (when echo is on) and then each new piece of text to
 * the callback, and stops at an end-of-generation token (the program's, or the tokenizer's
 * end-of-text and end-of-turn tokens) or at the length asked for. With temperature 0 it picks the
 * most likely token every step and, on a new conversation, produces the same text as {@code
 * ember-llm --temperature 0}; above 0 it samples with a generator seeded with 0 on every call, as
 * {@code ember-llm --seed 0}.
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
   * @param tokenizerPath the tokenizer file, or a model directory holding one
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
    this.temperature = temperature;
    state = new NativeState(nativeLoad(modelPath, tokenizerPath, dataPath));
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
   * Generates text from a prompt that continues the conversation.
   *
   * @param prompt the prompt (UTF-8 encoded for the tokenizer)
   * @param seqLen the most tokens of this prompt and the text generated from it together (ember's
   *     runner slides its window past the model's context length, so this may exceed it); -1 for
   *     the rest of the model's context
   * @param callback receives the text as it comes, then the statistics
   * @param echo whether the callback receives the prompt first
   * @return 0 on success; else ember's status code, which {@link LlmCallback#onError} received
   *     too with ember's message (a prompt too long for the model, for seqLen or for what the
   *     conversation left of the context, a failed run); the conversation is then as before
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

  /**
   * Starts a new conversation: the next prompt is its first. (Cache positions holding the same
   * tokens as the new conversation's first ones are kept, as a chat keeps them, and not run again;
   * the results are those of an empty cache.)
   */
  public synchronized void resetContext() {
    if (generating) {
      throw new IllegalStateException("resetContext() called from a callback of generate()");
    }
    try {
      nativeResetContext(handle());
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Adds text to the conversation and runs it through the model without generating: a system
   * prompt or an earlier turn, ahead of the {@link #generate} that answers.
   *
   * @param prompt the text (UTF-8 encoded for the tokenizer; special tokens written in it become
   *     their ids)
   * @param startPos 0 starts a new conversation first ({@link #resetContext}); any other value
   *     continues the current one
   * @param bos how many BOS tokens go before the text
   * @param eos how many EOS tokens go after it
   * @return 0 (the conversation's length is kept by the module)
   * @throws ExecutorchRuntimeException with ember's message when the text does not fit the
   *     model's context, the model or tokenizer names no BOS or EOS token asked for, or the run
   *     fails; the conversation is then as before
   */
  public synchronized long prefillPrompt(String prompt, long startPos, int bos, int eos) {
    if (prompt == null) {
      throw new IllegalArgumentException("prompt must not be null");
    }
    if (generating) {
      throw new IllegalStateException("prefillPrompt() called from a callback of generate()");
    }
    if (startPos == 0) {
      resetContext();
    }
    try {
      nativePrefill(handle(), prompt.getBytes(StandardCharsets.UTF_8), bos, eos);
    } finally {
      Reference.reachabilityFence(this);
    }
    return 0;
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

  private static native long nativeLoad(String modelPath, String tokenizerPath, String dataPath);

  private static native void nativeDestroy(long handle);

  private static native void nativeResetContext(long handle);

  private static native int nativePrefill(long handle, byte[] promptUtf8, int bos, int eos);

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
