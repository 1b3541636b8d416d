package org.pytorch.executorch.extension.llm;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;
import org.pytorch.executorch.ExecutorchRuntimeException;

/**
 * LlmModule on the committed nanoGPT (KV cache, XNNPACK): greedy generation gives ember-llm's
 * text; errors reach the caller.
 *
 * <p>System properties: {@code ember.llm.model} (the .pte), {@code ember.llm.tokenizer} (the
 * tokenizer directory), {@code ember.llm.prompt}, {@code ember.llm.new_tokens} and {@code
 * ember.llm.expected} (a file holding ember-llm's standard output for that prompt with
 * {@code --temperature 0 --max-new-tokens N}).
 */
public class LlmModuleTest {
  static final String MODEL = System.getProperty("ember.llm.model", "build/java-test/nanogpt_kv.pte");
  static final String TOKENIZER =
      System.getProperty("ember.llm.tokenizer", "examples/nanogpt/tokenizer");
  static final String PROMPT =
      System.getProperty("ember.llm.prompt", "It is a truth universally acknowledged, that");
  static final int NEW_TOKENS = Integer.getInteger("ember.llm.new_tokens", 60);

  static LlmModule llm;

  @BeforeClass
  public static void load() {
    llm = new LlmModule(MODEL, TOKENIZER, 0.0f);
  }

  @AfterClass
  public static void release() {
    if (llm != null) {
      llm.resetNative();
    }
  }

  /** Collects what a generation hands out. */
  static final class Collector implements LlmCallback {
    final List<String> pieces = new ArrayList<>();
    final StringBuilder text = new StringBuilder();
    String stats;
    int errorCode;
    String errorMessage;

    @Override
    public void onResult(String result) {
      pieces.add(result);
      text.append(result);
    }

    @Override
    public void onStats(String s) {
      stats = s;
    }

    @Override
    public void onError(int code, String message) {
      errorCode = code;
      errorMessage = message;
    }

    long stat(String name) {
      Matcher m = Pattern.compile("\"" + name + "\":([0-9]+)").matcher(stats);
      assertTrue(name + " in " + stats, m.find());
      return Long.parseLong(m.group(1));
    }
  }

  static String expected() throws IOException {
    return readOutput("ember.llm.expected");
  }

  static String readOutput(String property) throws IOException {
    String path = System.getProperty(property);
    if (path == null) {
      fail("set -D" + property + " to ember-llm's output");
    }
    String out = new String(Files.readAllBytes(Paths.get(path)), StandardCharsets.UTF_8);
    // ember-llm ends its output with a newline of its own.
    return out.endsWith("\n") ? out.substring(0, out.length() - 1) : out;
  }

  @Test
  public void greedyMatchesEmberLlm() throws IOException {
    llm.resetContext();
    Collector c = new Collector();
    LlmGenerationConfig cfg =
        LlmGenerationConfig.create().maxNewTokens(NEW_TOKENS).temperature(0.0f).build();
    assertEquals(0, llm.generate(PROMPT, cfg, c));
    assertEquals(expected(), c.text.toString());
    assertEquals(PROMPT, c.pieces.get(0)); // echo first
    assertTrue(c.pieces.size() > 1);
    assertTrue(c.stat("generated_tokens") <= NEW_TOKENS);
    assertEquals(c.stat("generated_tokens"), c.pieces.size() - 1);

    // The same text through generate(prompt, seqLen, callback): seqLen counts the prompt.
    int promptTokens = (int) c.stat("prompt_tokens");
    Collector d = new Collector();
    llm.resetContext();
    assertEquals(0, llm.generate(PROMPT, promptTokens + NEW_TOKENS, d));
    assertEquals(expected(), d.text.toString());

    // Without echo: the generated text alone.
    Collector e = new Collector();
    llm.resetContext();
    assertEquals(0, llm.generate(PROMPT, promptTokens + NEW_TOKENS, e, false));
    assertEquals(expected().substring(PROMPT.length()), e.text.toString());
  }

  /** Sampling at temperature 1: the runner's generator starts from seed 0, as ember-llm --seed 0. */
  @Test
  public void sampledMatchesEmberLlmWithTheSameSeed() throws IOException {
    LlmModule sampled = new LlmModule(MODEL, TOKENIZER, 1.0f);
    try {
      Collector c = new Collector();
      assertEquals(0,
          sampled.generate(PROMPT, LlmGenerationConfig.create().maxNewTokens(NEW_TOKENS).build(), c));
      String want = readOutput("ember.llm.expected_sampled");
      assertEquals(want, c.text.toString());
      assertNotEquals(expected(), want);
      // The temperature of a config overrides the module's.
      sampled.resetContext();
      Collector g = new Collector();
      assertEquals(0, sampled.generate(PROMPT,
          LlmGenerationConfig.create().maxNewTokens(NEW_TOKENS).temperature(0.0f).build(), g));
      assertEquals(expected(), g.text.toString());
    } finally {
      sampled.resetNative();
    }
  }

  /**
   * With a tokenizer whose tokens split U+2603's three UTF-8 bytes two and one, the character
   * arrives whole, in one piece, and the text is ember-llm's.
   */
  @Test
  public void charactersSplitAcrossTokensArriveWhole() throws IOException {
    LlmModule m = new LlmModule(MODEL, System.getProperty("ember.llm.utf8_tokenizer"), 0.0f);
    try {
      Collector c = new Collector();
      assertEquals(0,
          m.generate(PROMPT, LlmGenerationConfig.create().maxNewTokens(NEW_TOKENS).build(), c));
      assertEquals(readOutput("ember.llm.expected_utf8"), c.text.toString());
      assertTrue(c.text.toString(), c.text.toString().contains("\u2603"));
      boolean whole = false;
      for (String p : c.pieces) {
        assertTrue("a broken character in '" + p + "'", !p.contains("\ufffd"));
        whole |= p.contains("\u2603");
      }
      assertTrue(whole);
    } finally {
      m.resetNative();
    }
  }

  @Test
  public void nonAsciiTextComesThroughWhole() {
    String prompt = "Caf\u00e9 \u2014 \u2603 \ud83d\ude00 said Emma";
    Collector c = new Collector();
    LlmGenerationConfig cfg = LlmGenerationConfig.create().maxNewTokens(8).build();
    llm.resetContext();
    assertEquals(0, llm.generate(prompt, cfg, c));
    assertEquals(prompt, c.pieces.get(0));
    for (String p : c.pieces) {
      assertTrue("a broken character in '" + p + "'", !p.contains("\ufffd"));
    }
  }

  @Test
  public void errorsReachTheCallbackAndTheCaller() {
    llm.resetContext();
    Collector c = new Collector();
    // seqLen 3 leaves no room after an 11-token prompt
    int rc = llm.generate(PROMPT, 3, c);
    assertNotEquals(0, rc);
    assertEquals(rc, c.errorCode);
    assertEquals(ExecutorchRuntimeException.INVALID_ARGUMENT, rc);
    assertTrue(c.errorMessage, c.errorMessage.contains("no room"));
    assertTrue(c.pieces.isEmpty());

    // A prompt longer than the model's context.
    StringBuilder longPrompt = new StringBuilder();
    for (int i = 0; i < 400; i++) {
      longPrompt.append(" Emma");
    }
    Collector d = new Collector();
    rc = llm.generate(longPrompt.toString(), LlmGenerationConfig.create().maxNewTokens(4).build(), d);
    assertEquals(ExecutorchRuntimeException.INVALID_ARGUMENT, rc);
    assertTrue(d.errorMessage, d.errorMessage.contains("at most"));

    // An exception thrown by the callback stops at the caller, and the module still works.
    try {
      llm.generate(PROMPT, 40, (LlmCallback) r -> {
        if (!r.equals(PROMPT)) {
          throw new IllegalStateException("enough");
        }
      });
      fail("the callback's exception was lost");
    } catch (IllegalStateException e) {
      assertEquals("enough", e.getMessage());
    }
    Collector ok = new Collector();
    llm.resetContext();
    assertEquals(0, llm.generate(PROMPT, 20, ok));

    // generate() from inside its own callback is refused.
    try {
      llm.generate(PROMPT, 20, (LlmCallback) r -> llm.generate(PROMPT, 20, new Collector()));
      fail("a nested generate ran");
    } catch (IllegalStateException e) {
      assertTrue(e.getMessage(), e.getMessage().contains("own callback"));
    }
    assertEquals(0, llm.generate(PROMPT, 20, new Collector()));
  }

  static LlmGenerationConfig greedy(int newTokens, boolean echo) {
    return LlmGenerationConfig.create().maxNewTokens(newTokens).temperature(0.0f).echo(echo)
        .build();
  }

  static String repeat(String s, int n) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < n; i++) {
      b.append(s);
    }
    return b.toString();
  }

  /**
   * A second generate() continues the conversation: it runs only its own tokens (and the last
   * token chosen before it), and answers as the whole conversation given at once does.
   */
  @Test
  public void generateContinuesTheConversation() {
    llm.resetContext();
    Collector first = new Collector();
    assertEquals(0, llm.generate(PROMPT, greedy(12, true), first));
    String next = " Emma said to her sister,";
    Collector second = new Collector();
    assertEquals(0, llm.generate(next, greedy(12, false), second));

    // On a module of its own: the first turn, then the whole conversation as one new prompt.
    // Its positions in the cache already hold the first turn, so it runs the same tokens as the
    // second turn did, and answers the same.
    LlmModule fresh = new LlmModule(MODEL, TOKENIZER, 0.0f);
    Collector freshFirst = new Collector();
    Collector whole = new Collector();
    try {
      assertEquals(0, fresh.generate(PROMPT, greedy(12, true), freshFirst));
      fresh.resetContext();
      assertEquals(0, fresh.generate(first.text + next, greedy(12, false), whole));
    } finally {
      fresh.resetNative();
    }
    assertEquals(first.text.toString(), freshFirst.text.toString());
    assertEquals(whole.text.toString(), second.text.toString());
    assertEquals(whole.stat("prompt_tokens"), second.stat("prompt_tokens"));
    assertTrue(second.stat("prompt_tokens") < freshFirst.stat("prompt_tokens"));

    // After resetContext() the same prompt gives the first answer again (the positions the
    // cache holds for the same tokens are not run again).
    llm.resetContext();
    Collector again = new Collector();
    assertEquals(0, llm.generate(PROMPT, greedy(12, true), again));
    assertEquals(first.text.toString(), again.text.toString());
    assertEquals(1, again.stat("prompt_tokens"));
  }

  /** prefillPrompt() runs text ahead of the generate() that answers it. */
  @Test
  public void prefillThenGenerate() throws IOException {
    int cut = PROMPT.lastIndexOf(' ');
    String head = PROMPT.substring(0, cut);
    String tail = PROMPT.substring(cut);
    llm.resetContext();
    assertEquals(0, llm.prefillPrompt(head, 0, 0, 0));
    Collector c = new Collector();
    assertEquals(0, llm.generate(tail, greedy(NEW_TOKENS, false), c));
    assertEquals(expected().substring(PROMPT.length()), c.text.toString());
    assertTrue(c.stat("prompt_tokens") < 5);

    // startPos 0 starts over: the same again, though a conversation was under way.
    assertEquals(0, llm.prefillPrompt(head, 0, 0, 0));
    Collector d = new Collector();
    assertEquals(0, llm.generate(tail, greedy(NEW_TOKENS, false), d));
    assertEquals(c.text.toString(), d.text.toString());
  }

  /** Text past the model's context is refused with ember's message; the conversation stays. */
  @Test
  public void aConversationPastTheContextIsRefused() {
    llm.resetContext();
    try {
      llm.prefillPrompt(repeat(" Emma", 400), 0, 0, 0);
      fail("prefilled past the context");
    } catch (ExecutorchRuntimeException e) {
      assertEquals(ExecutorchRuntimeException.INVALID_ARGUMENT, e.getErrorCode());
      assertTrue(e.getMessage(), e.getMessage().contains("at most"));
    }
    // The model names no BOS token for nanoGPT's GPT-2 tokenizer.
    try {
      llm.prefillPrompt(PROMPT, 0, 1, 0);
      fail("prefilled a BOS token no one names");
    } catch (ExecutorchRuntimeException e) {
      assertTrue(e.getMessage(), e.getMessage().contains("BOS"));
    }
    try {
      llm.prefillPrompt(PROMPT, 0, -1, 0);
      fail("prefilled -1 BOS tokens");
    } catch (ExecutorchRuntimeException e) {
      assertEquals(ExecutorchRuntimeException.INVALID_ARGUMENT, e.getErrorCode());
    }

    llm.resetContext();
    assertEquals(0, llm.prefillPrompt(repeat(" Emma", 70), 0, 0, 0));
    Collector c = new Collector();
    int rc = llm.generate(repeat(" Emma", 70), greedy(4, false), c);
    assertEquals(ExecutorchRuntimeException.INVALID_ARGUMENT, rc);
    assertTrue(c.errorMessage, c.errorMessage.contains("resetContext()"));
    // The refused turn left the conversation as it was: a short turn still fits.
    Collector ok = new Collector();
    assertEquals(0, llm.generate(" Emma", greedy(4, false), ok));
    assertEquals(1, ok.stat("prompt_tokens")); // the cache held the rest
  }

  @Test
  public void badPathsThrowWithEmbersMessage() {
    try {
      new LlmModule("/nonexistent/model.pte", TOKENIZER, 0.0f);
      fail("loaded a missing model");
    } catch (ExecutorchRuntimeException e) {
      assertEquals(ExecutorchRuntimeException.IO, e.getErrorCode());
      assertTrue(e.getMessage(), e.getMessage().contains("/nonexistent/model.pte"));
    }
    try {
      new LlmModule(MODEL, "/nonexistent/tokenizer", 0.0f);
      fail("loaded a missing tokenizer");
    } catch (ExecutorchRuntimeException e) {
      assertTrue(e.getMessage(), e.getMessage().contains("/nonexistent/tokenizer"));
    }
    try {
      new LlmModule(MODEL, TOKENIZER, 0.0f, "/nonexistent/weights.ptd");
      fail("loaded with a missing data file");
    } catch (ExecutorchRuntimeException e) {
      assertTrue(e.getMessage(), e.getMessage().contains("/nonexistent/weights.ptd"));
    }
    Path notAModel = Paths.get(TOKENIZER, "merges.txt");
    try {
      new LlmModule(notAModel.toString(), TOKENIZER, 0.0f);
      fail("loaded a text file as a program");
    } catch (ExecutorchRuntimeException e) {
      assertTrue(e.getMessage(), (e.getErrorCode() & 0xff00) == 0x0200);
    }
  }

  @Test
  public void loadAndReleaseManyTimes() {
    for (int i = 0; i < 10; i++) {
      LlmModule m = new LlmModule(MODEL, Paths.get(TOKENIZER, "vocab.json").toString(), 0.0f);
      assertEquals(0, m.generate(PROMPT, LlmGenerationConfig.create().maxNewTokens(2).build(),
          new Collector()));
      m.resetNative();
      m.resetNative();
    }
  }
}
