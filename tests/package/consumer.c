/* Runs the first method of a program through the installed module helper. */
#include <stdio.h>

#include <ember/module.h>

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    ember_module *mod;
    ember_method *m;
    const char *name;
    ember_status st = ember_module_load(argv[1], &mod);
    if (st == EMBER_OK) st = ember_program_method_name(ember_module_program(mod), 0, &name);
    if (st == EMBER_OK) st = ember_module_method(mod, name, &m);
    if (st != EMBER_OK) {
        fprintf(stderr, "consumer: %s: %s\n", ember_status_str(st), ember_last_error());
        ember_module_destroy(mod);
        return 1;
    }
    printf("consumer: loaded %s, method %s, %zu inputs\n", argv[1], name, ember_method_input_count(m));
    ember_module_destroy(mod);
    return 0;
}
