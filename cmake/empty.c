/* Placeholder translation unit for a layer that has no sources yet. */
typedef int ember_empty_translation_unit;
