/*
 * Value helpers: unboxing int lists.
 */
#include "core/internal.h"

ember_status ember_value_int_list(ember_value *v, const int64_t **items, size_t *len) {
    if (v == NULL || v->tag != EMBER_TAG_INT_LIST)
        return ember_set_error(EMBER_ERR_TYPE_MISMATCH, "expected an int list");
    /* Items were checked at load to be Int values; they may change at run
     * time (symbolic sizes), so read them afresh. */
    for (size_t i = 0; i < v->u.int_list.len; i++)
        v->u.int_list.unboxed[i] = v->u.int_list.items[i]->u.i;
    *items = v->u.int_list.unboxed;
    *len = v->u.int_list.len;
    return EMBER_OK;
}
