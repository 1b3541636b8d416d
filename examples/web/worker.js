// The Web Worker: loads ember.js (ember.wasm inside), the model and the
// tokenizer, and generates text without blocking the page.
"use strict";
importScripts("ember.js");

let llm = null;

async function fetchBytes(url) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
  return new Uint8Array(await r.arrayBuffer());
}

async function load(model) {
  const t0 = performance.now();
  const [ember, pte, vocab, merges] = await Promise.all([
    createEmberModule(), fetchBytes(model), fetchBytes("tokenizer/vocab.json"),
    fetchBytes("tokenizer/merges.txt")]);
  llm = ember.loadLlm(pte, vocab, merges);
  postMessage({type: "ready", loadMs: performance.now() - t0, modelBytes: pte.length});
}

onmessage = async (e) => {
  const m = e.data;
  try {
    if (m.type === "load") {
      await load(m.model);
    } else if (m.type === "generate") {
      const res = llm.generate(m.prompt, {
        maxNewTokens: m.maxNewTokens, temperature: m.temperature, topK: m.topK, seed: m.seed,
        onText: (piece) => postMessage({type: "text", piece}),
      });
      postMessage({type: "done", stats: res.stats});
    }
  } catch (err) {
    postMessage({type: "error", message: String(err && err.message ? err.message : err)});
  }
};
