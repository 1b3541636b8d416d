package org.pytorch.executorch.extension.llm;

/**
 * Settings for one {@link LlmModule#generate(String, LlmGenerationConfig, LlmCallback)} call, made
 * with {@code LlmGenerationConfig.create()...build()}.
 */
public class LlmGenerationConfig {
  private final boolean echo;
  private final int maxNewTokens;
  private final int seqLen;
  private final float temperature;

  private LlmGenerationConfig(Builder b) {
    this.echo = b.echo;
    this.maxNewTokens = b.maxNewTokens;
    this.seqLen = b.seqLen;
    this.temperature = b.temperature;
  }

  /** A builder with the defaults: echo on, no token limits, the module's temperature. */
  public static Builder create() {
    return new Builder();
  }

  /** Whether the prompt is handed to the callback before the generated text. */
  public boolean isEcho() {
    return echo;
  }

  /** The most tokens to generate; -1 for no limit of its own. */
  public int getMaxNewTokens() {
    return maxNewTokens;
  }

  /** The most tokens in all, prompt included; -1 for the model's context length. */
  public int getSeqLen() {
    return seqLen;
  }

  /** The sampling temperature (0 is greedy); negative for the module's. */
  public float getTemperature() {
    return temperature;
  }

  /** Builds an {@link LlmGenerationConfig}; every setter returns the builder. */
  public static class Builder {
    private boolean echo = true;
    private int maxNewTokens = -1;
    private int seqLen = -1;
    private float temperature = -1.0f;

    Builder() {}

    public Builder echo(boolean echo) {
      this.echo = echo;
      return this;
    }

    public Builder maxNewTokens(int maxNewTokens) {
      this.maxNewTokens = maxNewTokens;
      return this;
    }

    public Builder seqLen(int seqLen) {
      this.seqLen = seqLen;
      return this;
    }

    public Builder temperature(float temperature) {
      this.temperature = temperature;
      return this;
    }

    public LlmGenerationConfig build() {
      return new LlmGenerationConfig(this);
    }
  }
}
