package org.pytorch.executorch.extension.llm;

/**
 * Receives what {@link LlmModule#generate} produces, on the thread that called it, while it runs.
 */
public interface LlmCallback {
  /**
   * Called with each piece of text as soon as it is ready: the prompt first when echo is on, then
   * the generated text, token by token. A character whose UTF-8 bytes span several tokens arrives
   * whole, with the token that completes it.
   *
   * @param result the new text
   */
  void onResult(String result);

  /**
   * Called once after a successful generation with its statistics as a JSON object: {@code
   * prompt_tokens}, {@code generated_tokens}, {@code model_load_ms}, {@code prefill_ms}, {@code
   * ttft_ms} (time to first token), {@code decode_ms}, {@code decode_steps}, {@code
   * cache_restarts}, {@code tokens_per_second} (decode).
   *
   * @param stats the JSON text
   */
  default void onStats(String stats) {}

  /**
   * Called when generation fails, before {@link LlmModule#generate} returns the same code.
   *
   * @param errorCode ember's status code
   * @param message ember's message
   */
  default void onError(int errorCode, String message) {
    System.err.println("ember: generation failed (0x" + Integer.toHexString(errorCode) + "): " + message);
  }
}
