// The page: reads the settings, hands generation to worker.js, and shows the
// text as it streams back.
//
// URL parameters (for links and the headless test): prompt, tokens,
// temperature, topk, seed, model (default nanogpt.pte), and autorun=1 to
// generate as soon as the model is loaded. #status's data-state goes
// loading -> ready -> running -> done (or error).
"use strict";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
for (const [key, id] of [["prompt", "prompt"], ["tokens", "tokens"], ["temperature", "temperature"],
                         ["topk", "topk"], ["seed", "seed"]]) {
  if (params.has(key)) $(id).value = params.get(key);
}

function setStatus(state, text) {
  $("status").dataset.state = state;
  $("status").textContent = text;
}

const worker = new Worker("worker.js");
let genSpan = null;

worker.onmessage = (e) => {
  const m = e.data;
  if (m.type === "ready") {
    setStatus("ready", `ready: model loaded in ${m.loadMs.toFixed(0)} ms (${(m.modelBytes / 1e6).toFixed(1)} MB)`);
    $("generate").disabled = false;
    if (params.get("autorun") === "1") generate();
  } else if (m.type === "text") {
    genSpan.textContent += m.piece;
  } else if (m.type === "done") {
    const s = m.stats;
    const tps = s.decodeSteps > 0 ? s.decodeSteps / (s.decodeMs / 1000) : 0;
    setStatus("done", `done: ${s.generatedTokens} tokens, prompt ${s.promptTokens} tokens in ` +
              `${s.prefillMs.toFixed(0)} ms, ${tps.toFixed(1)} tokens/s`);
    $("generate").disabled = false;
  } else if (m.type === "error") {
    setStatus("error", `error: ${m.message}`);
    $("generate").disabled = false;
  }
};

function generate() {
  const out = $("output");
  out.textContent = "";
  const p = document.createElement("span");
  p.className = "prompt";
  p.textContent = $("prompt").value;
  genSpan = document.createElement("span");
  genSpan.className = "gen";
  genSpan.id = "generated";
  out.append(p, genSpan);
  $("generate").disabled = true;
  setStatus("running", "generating…");
  worker.postMessage({
    type: "generate", prompt: $("prompt").value, maxNewTokens: Number($("tokens").value),
    temperature: Number($("temperature").value), topK: Number($("topk").value),
    seed: Number($("seed").value),
  });
}

$("generate").addEventListener("click", generate);
worker.postMessage({type: "load", model: params.get("model") || "nanogpt.pte"});
