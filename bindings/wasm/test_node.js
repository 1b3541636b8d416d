// Runs ember's WebAssembly build in Node.js and compares with eager PyTorch
// (bindings/wasm/export_test.py wrote the programs and the answers):
//   1. mixed.pte: an int64 and a float input, two outputs, fp32 tolerance
//   2. a truncated program: loading it throws the runtime's status and message
//   3. nanogpt.pte: greedy generation, the same tokens as eager PyTorch
//
// usage: node test_node.js <build-wasm dir> <export_test.py's out dir> <tokenizer dir>
"use strict";
const fs = require("fs");
const path = require("path");

const [buildDir, testDir, tokDir] = process.argv.slice(2);
const createEmberModule = require(path.resolve(buildDir, "ember.js"));

function fail(msg) {
  console.error(`test_node: FAIL: ${msg}`);
  process.exit(1);
}

function checkClose(name, got, want) {
  if (got.dtype !== want.dtype) fail(`${name}: dtype ${got.dtype}, eager ${want.dtype}`);
  if (JSON.stringify(got.shape) !== JSON.stringify(want.shape))
    fail(`${name}: shape ${JSON.stringify(got.shape)}, eager ${JSON.stringify(want.shape)}`);
  let worst = 0;
  want.data.forEach((w, i) => {
    const g = got.data[i];
    const err = Math.abs(g - w);
    worst = Math.max(worst, err);
    if (!(err <= 1e-5 + 1e-5 * Math.abs(w))) fail(`${name}[${i}] = ${g}, eager ${w}`);
  });
  return worst;
}

async function main() {
  // The .wasm is handed over directly: Node's fetch() cannot read files.
  const ember = await createEmberModule({
    wasmBinary: fs.readFileSync(path.resolve(buildDir, "ember.wasm")),
  });

  // 1. a small model against eager PyTorch
  const spec = JSON.parse(fs.readFileSync(path.join(testDir, "mixed.json"), "utf8"));
  const model = ember.loadModel(fs.readFileSync(path.join(testDir, "mixed.pte")));
  const inputs = spec.inputs.map((t) => ({
    dtype: t.dtype, shape: t.shape,
    data: t.dtype === "int64" ? BigInt64Array.from(t.data.map(BigInt)) : Float32Array.from(t.data),
  }));
  const outs = model.run(inputs);
  if (outs.length !== spec.expected.length) fail(`${outs.length} outputs, eager ${spec.expected.length}`);
  const worst = Math.max(...outs.map((o, i) => checkClose(`mixed output ${i}`, o, spec.expected[i])));
  // A second run on the same method gives the same answer.
  checkClose("mixed output 0 (second run)", model.run(inputs)[0], spec.expected[0]);
  model.free();
  console.log(`test_node: mixed.pte: ${outs.length} outputs match eager PyTorch (max abs error ${worst.toExponential(2)})`);

  // 2. bad input: an Error with the runtime's message, and the module still works
  const pte = fs.readFileSync(path.join(testDir, "mixed.pte"));
  let message = null;
  try {
    ember.loadModel(pte.subarray(0, pte.length >> 1));
  } catch (e) {
    message = e.message;
  }
  if (message === null || !message.startsWith("ember: loading forward: "))
    fail(`a truncated program gave ${JSON.stringify(message)}, not an error from the runtime`);
  console.log(`test_node: a truncated program is refused: ${message}`);

  // 3. nanoGPT, greedy, against eager PyTorch's tokens
  const greedy = JSON.parse(fs.readFileSync(path.join(testDir, "greedy.json"), "utf8"));
  const llm = ember.loadLlm(fs.readFileSync(path.join(testDir, "nanogpt.pte")),
                            fs.readFileSync(path.join(tokDir, "vocab.json")),
                            fs.readFileSync(path.join(tokDir, "merges.txt")));
  const ids = [];
  const res = llm.generate(greedy.prompt, {
    maxNewTokens: greedy.max_new_tokens, temperature: 0,
    onText: (piece, token) => { if (token >= 0) ids.push(token); },
  });
  llm.free();
  if (JSON.stringify(ids) !== JSON.stringify(greedy.ids))
    fail(`nanoGPT greedy tokens ${JSON.stringify(ids)}, eager ${JSON.stringify(greedy.ids)}`);
  if (res.text !== greedy.text) fail(`nanoGPT text ${JSON.stringify(res.text)}, eager ${JSON.stringify(greedy.text)}`);
  const s = res.stats;
  console.log(`test_node: nanoGPT greedy: ${JSON.stringify(greedy.prompt)} -> ${JSON.stringify(res.text)}`);
  console.log(`test_node: ${ids.length} tokens match eager PyTorch (prefill ${s.prefillMs.toFixed(0)} ms, ` +
              `${(s.decodeSteps / (s.decodeMs / 1000)).toFixed(1)} tokens/s decoding, one thread)`);
}

main().catch((e) => fail(e && e.stack ? e.stack : String(e)));
