"""Delegates, ahead of time: each package has a partitioner and a preprocess
that writes the payload its runtime backend reads (xnnpack: the CPU backend)."""
