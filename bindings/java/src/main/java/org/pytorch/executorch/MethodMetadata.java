package org.pytorch.executorch;

/**
 * What a program says about one of its methods, read without loading it: its name, and the type of
 * each input and output as an {@link EValue} tag code (0 None, 1 Tensor, 2 String, 3 Double, 4 Int,
 * 5 Bool; 6 and above are lists).
 */
public class MethodMetadata {
  private final String name;
  private final int[] inputTags;
  private final int[] outputTags;
  private final int numDelegates;
  private final String[] backends;

  MethodMetadata(
      String name, int[] inputTags, int[] outputTags, int numDelegates, String[] delegateIds) {
    this.name = name;
    this.inputTags = inputTags;
    this.outputTags = outputTags;
    this.numDelegates = numDelegates;
    this.backends = java.util.Arrays.stream(delegateIds).distinct().toArray(String[]::new);
  }

  /** The method's name. */
  public String getName() {
    return name;
  }

  /** The tag code of each input, in order. */
  public int[] getInputTags() {
    return inputTags.clone();
  }

  /** The tag code of each output, in order. */
  public int[] getOutputTags() {
    return outputTags.clone();
  }

  /** How many delegate calls (subgraphs lowered to a backend) the method makes. */
  public int getNumDelegates() {
    return numDelegates;
  }

  /** The backends the method's delegates run on ("XnnpackBackend"), each named once. */
  public String[] getBackends() {
    return backends.clone();
  }
}
