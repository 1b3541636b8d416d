/*
 * main.c — an application that runs a program calling a custom operator.
 *
 *   custom_op MODEL.pte
 *
 * It registers the built-in kernels (through the module helper's first
 * load) and then its own (my_ops_kernels_register()), loads the method
 * "forward", feeds every float32 input with x[i] = ((i % 17) - 8) / 4 and
 * prints each output's shape and values. A failure prints one line,
 * "custom_op: error: ...", and exits with status 1.
 */
#include <stdio.h>
#include <stdlib.h>

#include "ember/ember.h"
#include "ember/kernel.h"
#include "ember/module.h"
#include "my_ops.h"

static int fail(ember_module *mod, float *buf, const char *what, ember_status st) {
    fprintf(stderr, "custom_op: error: %s: %s: %s\n", what, ember_status_str(st), ember_last_error());
    free(buf);
    ember_module_destroy(mod);
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: custom_op MODEL.pte\n");
        return 2;
    }
    ember_module *mod = NULL;
    ember_method *m = NULL;
    float *buf = NULL;
    ember_status st;
    /* The first load registers the built-in kernels; ours go above them. */
    if ((st = ember_module_load(argv[1], &mod)) != EMBER_OK) return fail(mod, buf, "loading the program", st);
    if ((st = my_ops_kernels_register()) != EMBER_OK) return fail(mod, buf, "registering my_ops", st);
    if ((st = ember_module_method(mod, "forward", &m)) != EMBER_OK)
        return fail(mod, buf, "loading method 'forward'", st);

    const ember_program *prog = ember_module_program(mod);
    size_t n_in = ember_method_input_count(m);
    for (size_t i = 0; i < n_in; i++) {
        ember_value_meta meta;
        if ((st = ember_program_input_meta(prog, "forward", i, &meta)) != EMBER_OK)
            return fail(mod, buf, "reading the inputs", st);
        if (meta.tag != EMBER_TAG_TENSOR || meta.dtype != EMBER_FLOAT32) {
            fprintf(stderr, "custom_op: error: input %zu is not a float32 tensor\n", i);
            ember_module_destroy(mod);
            return 1;
        }
        int64_t sizes[EMBER_MAX_DIM];
        size_t numel = 1;
        for (uint32_t d = 0; d < meta.dim; d++) {
            sizes[d] = meta.sizes[d];
            if (ember_mul_overflow(numel, (size_t)meta.sizes[d], &numel))
                return fail(mod, buf, "sizing an input", EMBER_ERR_INVALID_ARGUMENT);
        }
        size_t nbytes;
        if (ember_mul_overflow(numel, sizeof(float), &nbytes))
            return fail(mod, buf, "sizing an input", EMBER_ERR_INVALID_ARGUMENT);
        free(buf);
        buf = malloc(nbytes > 0 ? nbytes : 1);
        if (buf == NULL) return fail(mod, buf, "allocating an input", EMBER_ERR_OUT_OF_MEMORY);
        for (size_t k = 0; k < numel; k++) buf[k] = (float)((int)(k % 17) - 8) / 4.0f;
        /* Planned inputs are copied in, so buf may be reused for the next one. */
        if ((st = ember_method_set_input_tensor(m, i, EMBER_FLOAT32, sizes, meta.dim, buf, nbytes)) !=
            EMBER_OK)
            return fail(mod, buf, "setting an input", st);
    }
    if ((st = ember_method_execute(m)) != EMBER_OK) return fail(mod, buf, "running 'forward'", st);

    for (size_t i = 0; i < ember_method_output_count(m); i++) {
        const ember_value *v;
        if ((st = ember_method_output(m, i, &v)) != EMBER_OK) return fail(mod, buf, "reading an output", st);
        if (v->tag != EMBER_TAG_TENSOR || v->u.t->dtype != EMBER_FLOAT32) {
            printf("output %zu: not a float32 tensor\n", i);
            continue;
        }
        const ember_tensor *t = v->u.t;
        printf("output %zu: float32 [", i);
        for (uint32_t d = 0; d < t->dim; d++) printf("%s%d", d ? ", " : "", (int)t->sizes[d]);
        printf("]:");
        const float *data = (const float *)t->data;
        for (int64_t k = 0; k < t->numel; k++) printf(" %.9g", (double)data[k]);
        printf("\n");
    }
    free(buf);
    ember_module_destroy(mod);
    return 0;
}
