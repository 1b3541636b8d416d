/*
 * ember/devtools.h — the event tracer and its ETDump writer.
 *
 * An event tracer records what a method does while it loads and runs, into
 * memory the caller gives it: one profiling event per instruction (the
 * operator's name, its chain and instruction index, start and end time),
 * method-level events (load, init, execute), the events delegates report
 * from inside their payloads (one per node, named by the node's debug handle;
 * see ember_backend_log_event() in backend.h), allocations of the method's
 * memory, and on request every instruction's output tensors, in full or as
 * small fingerprints. ember_etdump_write() then serializes the events as an
 * ETDump (ExecuTorch's trace format, file identifier "ED00", size-prefixed),
 * which ExecuTorch's Inspector reads; the output tensors go to a separate
 * debug buffer that the Inspector reads beside it (debug_buffer_path).
 *
 *     static uint8_t trace_mem[256 * 1024];
 *     ember_event_tracer *tr;
 *     ember_event_tracer_init(trace_mem, sizeof trace_mem, EMBER_TRACE_PROFILE, &tr);
 *     ember_method_set_event_tracer(method, tr);
 *     ember_method_execute(method);                      // one run in the trace
 *     size_t n;
 *     ember_etdump_write(tr, NULL, 0, &n);               // bytes needed
 *     ember_etdump_write(tr, out, n, &n);                // the .etdp bytes
 *
 * Nothing here allocates: the tracer lives inside its buffer. Recording never
 * fails a method: when the buffer is full the event is dropped whole, the
 * events before it stay intact, and ember_event_tracer_status() reports it.
 * A tracer is used by one method at a time, on one thread.
 *
 * Builds with -DEMBER_EVENT_TRACER=0 (CMake option EMBER_EVENT_TRACER=OFF)
 * leave the tracer out of the runtime entirely: these functions then return
 * EMBER_ERR_NOT_SUPPORTED and methods record nothing.
 */
#ifndef EMBER_DEVTOOLS_H
#define EMBER_DEVTOOLS_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "ember/ember.h"

#ifdef __cplusplus
extern "C" {
#endif

/** An event tracer: state and events inside a caller-supplied buffer. */
typedef struct ember_event_tracer ember_event_tracer;

/** What a tracer records (flags for ember_event_tracer_init, or-ed). */
enum {
    /** Time of each instruction, of load/init/execute, and delegates' own events. */
    EMBER_TRACE_PROFILE = 1u << 0,
    /**
     * Allocations of the method allocator and of planned memory at load.
     * ExecuTorch 1.5's Inspector cannot read allocation events; leave this
     * off for traces meant for it.
     */
    EMBER_TRACE_ALLOCATIONS = 1u << 1,
    /** Every instruction's output (its last argument), copied into the debug buffer. */
    EMBER_TRACE_DEBUG_OUTPUTS = 1u << 2,
    /**
     * Like EMBER_TRACE_DEBUG_OUTPUTS, but each output tensor is recorded as
     * a float64 tensor of 5 numbers: [hash, numel, min, max, mean], where
     * hash is the 32-bit FNV-1a hash of the tensor's bytes (min, max and
     * mean are NaN for dtypes without a numeric reading). 40 bytes per
     * tensor, for comparing two runs cheaply.
     */
    EMBER_TRACE_DEBUG_STATS = 1u << 3,
    /** The method's outputs after each execute (the Inspector's run output). */
    EMBER_TRACE_PROGRAM_OUTPUTS = 1u << 4
};

/**
 * Sets up a tracer inside buf. The tracer's state takes the first few
 * hundred bytes (see EMBER_EVENT_TRACER_MIN_SIZE); events fill the rest.
 * @param[in]  buf   memory for the tracer, owned by the caller; must outlive
 *                   it and stay untouched while it is in use. Any alignment.
 * @param[in]  size  bytes of buf
 * @param[in]  flags EMBER_TRACE_* bits
 * @param[out] out   the tracer (points into buf)
 * @return EMBER_OK; EMBER_ERR_INVALID_ARGUMENT (NULL buf or out, unknown
 *         flag); EMBER_ERR_OUT_OF_MEMORY (size below the minimum);
 *         EMBER_ERR_NOT_SUPPORTED (tracer compiled out).
 * Never allocates.
 */
ember_status ember_event_tracer_init(void *buf, size_t size, uint32_t flags,
                                     ember_event_tracer **out);

/** Bytes a tracer's state takes at the start of its buffer (events need more). */
#define EMBER_EVENT_TRACER_MIN_SIZE 1024u

/**
 * Gives the tracer memory for recorded tensor data (debug outputs). Each
 * tensor's bytes start on a 64-byte boundary of buf; the ETDump refers to
 * them by offset from buf. Without a debug buffer, debug events keep each
 * tensor's dtype and shape but no data.
 * @param[in] buf  caller memory (NULL with size 0 removes it); must outlive
 *                 the tracer's use. Recorded data is kept: set it before the
 *                 first run.
 * @return EMBER_OK, EMBER_ERR_INVALID_ARGUMENT (NULL tracer, NULL buf with
 *         size > 0), EMBER_ERR_INVALID_STATE (data already recorded),
 *         EMBER_ERR_NOT_SUPPORTED.
 */
ember_status ember_event_tracer_set_debug_buffer(ember_event_tracer *tracer, void *buf,
                                                 size_t size);

/**
 * The debug buffer's recorded bytes: what a file next to the ETDump must
 * hold for the Inspector's debug_buffer_path.
 * @param[out] data start of the debug buffer (NULL if none)
 * @param[out] size bytes used
 * @return EMBER_OK, EMBER_ERR_INVALID_ARGUMENT, EMBER_ERR_NOT_SUPPORTED.
 */
ember_status ember_event_tracer_debug_data(const ember_event_tracer *tracer, const void **data,
                                           size_t *size);

/**
 * Sets the bundled input index written with the runs that follow (-1, the
 * default, for none).
 * @return EMBER_OK, EMBER_ERR_INVALID_ARGUMENT, EMBER_ERR_NOT_SUPPORTED.
 */
ember_status ember_event_tracer_set_bundled_input(ember_event_tracer *tracer, int32_t index);

/**
 * Starts a run (an ETDump RunData): the events that follow belong to it.
 * ember_method_execute() starts one named after the method each time it
 * runs with a tracer, and method load starts one named "load:<method>";
 * call this for events an application records outside them.
 * @param[in] name NUL-terminated; copied into the tracer
 * @return EMBER_OK; EMBER_ERR_INVALID_ARGUMENT (NULL tracer or name);
 *         EMBER_ERR_OUT_OF_MEMORY (buffer full: the run was not started;
 *         later events join the previous run); EMBER_ERR_NOT_SUPPORTED.
 */
ember_status ember_event_tracer_begin_run(ember_event_tracer *tracer, const char *name);

/**
 * Starts timing an application-level event in the current run.
 * @param[in]  name  NUL-terminated; copied
 * @param[out] token what ember_event_tracer_end_profiling() takes
 * @return EMBER_OK, EMBER_ERR_INVALID_ARGUMENT, EMBER_ERR_OUT_OF_MEMORY
 *         (buffer full; *token is then one that end ignores),
 *         EMBER_ERR_NOT_SUPPORTED.
 */
ember_status ember_event_tracer_start_profiling(ember_event_tracer *tracer, const char *name,
                                                uint32_t *token);

/**
 * Ends the event that token started, recording the time now.
 * @return EMBER_OK, EMBER_ERR_INVALID_ARGUMENT (NULL tracer, or a token this
 *         tracer did not hand out), EMBER_ERR_NOT_SUPPORTED.
 */
ember_status ember_event_tracer_end_profiling(ember_event_tracer *tracer, uint32_t token);

/** Counts a tracer keeps about itself. */
typedef struct ember_event_tracer_stats {
    size_t events;      /**< events recorded */
    size_t dropped;     /**< events dropped because a buffer was full */
    size_t runs;        /**< runs started */
    size_t bytes_used;  /**< of the tracer's buffer */
    size_t bytes_total;
    size_t debug_used;  /**< of the debug buffer */
} ember_event_tracer_stats;

/**
 * Fills *stats. @return EMBER_OK, EMBER_ERR_INVALID_ARGUMENT,
 * EMBER_ERR_NOT_SUPPORTED.
 */
ember_status ember_event_tracer_get_stats(const ember_event_tracer *tracer,
                                          ember_event_tracer_stats *stats);

/**
 * EMBER_OK while every event fit; EMBER_ERR_OUT_OF_MEMORY once one was
 * dropped (the tracer's buffer or the debug buffer was full), with a message
 * naming how many; EMBER_ERR_INVALID_ARGUMENT for NULL. The events kept are
 * intact and can still be written.
 */
ember_status ember_event_tracer_status(const ember_event_tracer *tracer);

/** Forgets every event and recorded tensor (the buffers are reused). NULL is a no-op. */
void ember_event_tracer_reset(ember_event_tracer *tracer);

/**
 * Time scale of the timestamps: a timestamp times num / den is
 * nanoseconds. The tracer reads the platform clock (ember_platform.ticks_ns),
 * so this is 1 / 1; the Inspector's source_time_scale is then NS.
 */
ember_status ember_event_tracer_time_scale(const ember_event_tracer *tracer, uint64_t *num,
                                           uint64_t *den);

/**
 * Attaches a tracer to a loaded method for its executes (NULL detaches).
 * To trace load and init too, pass the tracer in ember_method_options.
 * @return EMBER_OK, EMBER_ERR_INVALID_ARGUMENT (NULL method),
 *         EMBER_ERR_NOT_SUPPORTED (tracer compiled out; NULL is accepted).
 */
ember_status ember_method_set_event_tracer(ember_method *method, ember_event_tracer *tracer);

/**
 * Writes the recorded events as an ETDump: a size-prefixed flatbuffer with
 * identifier "ED00" and ExecuTorch's etdump schema (version 0), one RunData
 * per run.
 * @param[in]  out  where to write (may be NULL when cap is 0), aligned to 8
 *                  for readers that check alignment
 * @param[in]  cap  bytes at out
 * @param[out] size bytes written, or needed when they do not fit
 * @return EMBER_OK; EMBER_ERR_OUT_OF_MEMORY (cap below *size; nothing
 *         useful is written; a NULL out with cap 0 is the way to ask for the
 *         size, and returns EMBER_OK); EMBER_ERR_INVALID_ARGUMENT (NULL
 *         tracer or size); EMBER_ERR_NOT_SUPPORTED.
 * Never allocates; the tracer is not changed.
 */
ember_status ember_etdump_write(const ember_event_tracer *tracer, void *out, size_t cap,
                                size_t *size);

#ifdef __cplusplus
}
#endif

#endif /* EMBER_DEVTOOLS_H */
