/*
 * ember_api.js — the JavaScript API of ember.js, appended to Emscripten's
 * output (--post-js), so it sees the module's memory and file system.
 *
 *   const ember = await createEmberModule();            // Node: require("./ember.js")
 *   const model = ember.loadModel(pteBytes);           // Uint8Array of a .pte
 *   const [out] = model.run([{dtype: "float32", shape: [1, 4], data: new Float32Array(4)}]);
 *   model.free();
 *
 *   const llm = ember.loadLlm(pteBytes, vocabJsonBytes, mergesTxtBytes);
 *   const {text, stats} = llm.generate("Once upon a time", {maxNewTokens: 40,
 *       temperature: 0, onText: (piece) => ...});
 *
 * Errors throw an Error whose message is the runtime's status and message.
 */
(function () {
  // dtype name -> ember_dtype code and typed array. (No destructuring in
  // this file: Emscripten's JS optimizer of this version mangles it.)
  const DTYPES = {
    uint8: {code: 0, array: Uint8Array}, int8: {code: 1, array: Int8Array},
    int16: {code: 2, array: Int16Array}, int32: {code: 3, array: Int32Array},
    int64: {code: 4, array: BigInt64Array}, float32: {code: 6, array: Float32Array},
    float64: {code: 7, array: Float64Array}, bool: {code: 11, array: Uint8Array},
  };
  const DTYPE_NAMES = {};
  Object.keys(DTYPES).forEach(function (name) { DTYPE_NAMES[DTYPES[name].code] = name; });
  const MAX_DIM = 16;

  function check(status, what) {
    if (status !== 0) {
      const name = UTF8ToString(Module._ew_status_str(status));
      const msg = UTF8ToString(Module._ew_last_error());
      throw new Error(`ember: ${what}: ${name}: ${msg}`);
    }
  }

  // A C string on the heap; the caller frees it.
  function cString(s) {
    const n = lengthBytesUTF8(s) + 1;
    const p = Module._malloc(n);
    stringToUTF8(s, p, n);
    return p;
  }

  // Programs and tokenizers reach the runtime as files in the in-memory file
  // system; once loaded, the runtime holds its own copy (a mapping, or an
  // open file, which outlives the name), so the names are removed again.
  let fileCount = 0;
  function writeFile(dir, name, bytes) {
    try { FS.mkdir(dir); } catch (e) { /* exists */ }
    const path = `${dir}/${name}`;
    FS.writeFile(path, bytes);
    return path;
  }
  function removeFiles(paths) {
    paths.forEach((p) => { try { FS.unlink(p); } catch (e) { /* gone */ } });
  }

  class Model {
    constructor(bytes, method) {
      const file = writeFile("/ember", `model${fileCount++}.pte`, bytes);
      const cpath = cString(file), cmethod = cString(method);
      const out = Module._malloc(4);
      try {
        check(Module._ew_model_load(cpath, cmethod, out), `loading ${method}`);
        this.ptr = HEAPU32[out >> 2];
      } finally {
        Module._free(cpath); Module._free(cmethod); Module._free(out);
        removeFiles([file]);
      }
    }

    get inputCount() { return Module._ew_model_input_count(this.ptr); }
    get outputCount() { return Module._ew_model_output_count(this.ptr); }

    // inputs: [{dtype, shape, data}] (data a typed array of that dtype);
    // returns the outputs the same way (copies).
    run(inputs) {
      const allocs = [];
      try {
        inputs.forEach((t, i) => {
          const dt = DTYPES[t.dtype];
          if (dt === undefined) throw new Error(`ember: input ${i}: unknown dtype ${t.dtype}`);
          const code = dt.code;
          const bytes = new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
          const data = Module._malloc(Math.max(bytes.length, 1));
          allocs.push(data);
          HEAPU8.set(bytes, data);
          const sizes = Module._malloc(8 * Math.max(t.shape.length, 1));
          allocs.push(sizes);
          HEAPF64.set(t.shape, sizes >> 3);
          check(Module._ew_model_set_input(this.ptr, i, code, sizes, t.shape.length, data,
                                           bytes.length), `input ${i}`);
        });
        check(Module._ew_model_execute(this.ptr), "execute");
        const outs = [];
        const meta = Module._malloc(4 * 4 + 8 * MAX_DIM);
        allocs.push(meta);
        for (let i = 0; i < this.outputCount; i++) {
          const sizesPtr = meta + 16;
          check(Module._ew_model_output(this.ptr, i, meta, meta + 4, sizesPtr, meta + 8, meta + 12),
                `output ${i}`);
          const code = HEAP32[meta >> 2], dim = HEAPU32[(meta + 4) >> 2];
          const dataPtr = HEAPU32[(meta + 8) >> 2], nbytes = HEAPU32[(meta + 12) >> 2];
          const shape = Array.from(HEAPF64.subarray(sizesPtr >> 3, (sizesPtr >> 3) + dim));
          const name = DTYPE_NAMES[code];
          const bytes = HEAPU8.slice(dataPtr, dataPtr + nbytes);
          const Ctor = name ? DTYPES[name].array : Uint8Array;
          outs.push({dtype: name || `code ${code}`, shape,
                     data: new Ctor(bytes.buffer, 0, nbytes / Ctor.BYTES_PER_ELEMENT)});
        }
        return outs;
      } finally {
        allocs.forEach((p) => Module._free(p));
      }
    }

    free() {
      if (this.ptr) Module._ew_model_free(this.ptr);
      this.ptr = 0;
    }
  }

  class LlmRunner {
    constructor(pteBytes, vocabJson, mergesTxt) {
      const n = fileCount++;
      const model = writeFile("/ember", `llm${n}.pte`, pteBytes);
      const dir = `/ember/tokenizer${n}`;
      const files = [model, writeFile(dir, "vocab.json", vocabJson),
                     writeFile(dir, "merges.txt", mergesTxt)];
      const cmodel = cString(model), cdir = cString(dir);
      const out = Module._malloc(4);
      try {
        check(Module._ew_llm_load(cmodel, cdir, out), "loading the LLM");
        this.ptr = HEAPU32[out >> 2];
      } finally {
        Module._free(cmodel); Module._free(cdir); Module._free(out);
        removeFiles(files);
        try { FS.rmdir(dir); } catch (e) { /* not empty or gone */ }
      }
    }

    // options: maxNewTokens (128), temperature (0: greedy), topK (0: all),
    // seed (0), onText(piece) called with each piece of text as it comes.
    generate(prompt, options = {}) {
      const decoder = new TextDecoder("utf-8");
      let text = "";
      Module.onTokenBytes = (token, bytes) => {
        const piece = decoder.decode(bytes, {stream: true});
        text += piece;
        if (options.onText && piece) options.onText(piece, token);
      };
      const cprompt = cString(prompt);
      const stats = Module._malloc(8 * 6);
      try {
        check(Module._ew_llm_generate(this.ptr, cprompt, options.maxNewTokens ?? 128,
                                      options.temperature ?? 0, options.topK ?? 0,
                                      options.seed ?? 0, stats), "generate");
        const tail = decoder.decode();
        text += tail;
        if (options.onText && tail) options.onText(tail, -1);
        const s = HEAPF64.subarray(stats >> 3, (stats >> 3) + 6);
        return {text, stats: {promptTokens: s[0], generatedTokens: s[1], prefillMs: s[2],
                              ttftMs: s[3], decodeMs: s[4], decodeSteps: s[5]}};
      } finally {
        Module.onTokenBytes = null;
        Module._free(cprompt); Module._free(stats);
      }
    }

    free() {
      if (this.ptr) Module._ew_llm_free(this.ptr);
      this.ptr = 0;
    }
  }

  Module.loadModel = (bytes, method = "forward") => new Model(bytes, method);
  Module.loadLlm = (pteBytes, vocabJson, mergesTxt) => new LlmRunner(pteBytes, vocabJson, mergesTxt);
})();
